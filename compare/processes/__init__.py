"""The process machinery: the parent side of supervision, a comparison distributed over worker processes or a
Dask cluster (its tasks, executors and workers). Imports compare.comparison and everything below it."""
