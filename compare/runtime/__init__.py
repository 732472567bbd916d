"""One process's runtime beneath every check: the backend, the launch guard and the supervised child's side
(supervisor: each launch's limit, stop signals, records), sealing of inputs, progress, exit codes, the
version. Imports compare.model and variants only (docs/architecture.md)."""
