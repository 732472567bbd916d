"""One comparison in one process: a request resolved into a plan, the pipeline running its checks, the timing
run, memory estimates and the environment recorded. Imports the checks and everything below them."""
