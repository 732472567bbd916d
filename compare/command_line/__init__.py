"""The command line: arguments read into a request, checks of the user's values (usage), the output files
(output_files), the --jobs and --scheduler options. Imports compare.processes and everything below it;
review and main.py import it."""
