"""What `compare` says around its report: a gate it cannot judge on this machine, said once before any work, and
after the work the report (the terminal's glance; `--json -`: the JSON on standard output, the glance on
standard error), the files written, and the exit code."""
from __future__ import annotations

import sys

from compare.model.vocabulary import TIMING

STDOUT = "-"   # --json -: the JSON goes to standard output


def unjudgeable(plan, backend, options) -> list[str]:
    """A line for each gate asked for whose evidence this run cannot give (no GPU to time on, a check left out)."""
    lines = []
    unless = "it is reported as not judged" if options.accept_unjudged else \
        "the run fails on it unless --accept-unjudged is given"
    if options.fail_if_slower is not None:
        flag = f"--fail-if-slower {options.fail_if_slower:g}"
        if TIMING not in plan.checks:
            lines.append(f"{flag} cannot be judged: timing is not among the checks; {unless}")
        elif not backend.gpu:
            lines.append(f"{flag} cannot be judged: timing needs a CUDA GPU and there is none here; {unless}")
    if options.fail_on_numerics and not plan.directions:
        lines.append(f"--fail-on-numerics cannot be judged: no numerics check is asked for; {unless}")
    return lines


def warn_unjudgeable(plan, backend, options) -> None:
    for line in unjudgeable(plan, backend, options):
        print(f"kernel-ab: warning: {line}", file=sys.stderr, flush=True)


def _full_report(options) -> str:
    """Where the report with every gate's reasons is written ('' where none is)."""
    from compare.command_line import output_files as files
    if options.out:
        return f"{options.out.rstrip('/')}/{files.REPORT_MD}"
    return options.markdown or (options.json if options.json not in (None, STDOUT) else "")


def finish(report, options, stopped, saved=None) -> int:
    """Decide the gates into `report`, print it and write its files, then, with `saved` (--baseline), the run
    against the saved one; the exit code (`stopped`: a stop signal's)."""
    from compare.model import gates
    from compare.model.check_sections import gates as check_gates
    from compare.command_line import output_files as files
    from compare.render import json_report, terminal
    from compare.runtime.exit_codes import after_report
    # the gates are decided once, into the report, so that every renderer lists them and the exit code agrees
    report = gates.decided(report, options.fail_on_numerics, options.fail_if_slower, options.accept_unjudged,
                           more=check_gates(report, options.fail_on, options.accept_unjudged))
    to_stdout = options.json == STDOUT
    terminal.render(report, console=terminal.make_console(sys.stderr if to_stdout else None), verbose=options.verbose)
    lines, unwritten = files.write(report, None if to_stdout else options.json, options.markdown, options.out)
    if to_stdout:
        sys.stdout.write(json_report.render(report))
        sys.stdout.flush()
    for line in lines:
        print(line, file=sys.stderr)
    where = _full_report(options) or "--verbose"
    for g in (g for g in report.gates if g.fails):   # once, here: what failed, where, and where every reason is
        more = len(gates.reasons(g)) > 1
        print(f"kernel-ab: gate failed: {gates.brief(g)}{f'; every reason: {where}' if more else ''}", file=sys.stderr)
    across = saved.after_run(report, options.verbose) if saved is not None else 0
    if stopped is not None:
        return stopped.exit_code
    return after_report(unwritten, report.gates, otherwise=across)
