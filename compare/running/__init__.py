"""Running a comparison: the plan, the supervised child, sealing, workers."""
