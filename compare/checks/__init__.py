"""The checks: numerics, timing and its statistics, the compiled code."""
