"""`compare --baseline SAVED.json` (this run against a saved one) and its thin alias for two saved runs,
`diff SAVED.json NEW.json`: both read the saved report before any work, compare by
compare.checks.across_runs and print compare.render.runs's section. Bad input is one line, exit 2."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from compare.model.errors import UsageError

FORMATS = ("terminal", "markdown", "json")


def add_parsers(sub, compare) -> None:
    """`diff SAVED NEW` on main.py's subparsers, and --baseline on its `compare` parser."""
    compare.add_argument("--baseline", type=read, metavar="SAVED.json",
                         help="also compare this run, case by case and variant by variant, with a saved run (a "
                              "report.json of compare --out or --json): each variant's time across the two runs, "
                              "its errors against the reference; the family must match")
    p = sub.add_parser("diff", help="compare two saved runs (report.json files), as compare --baseline does")
    p.add_argument("old", type=Path, metavar="SAVED.json", help="the saved run (the one before the change)")
    p.add_argument("new", type=Path, metavar="NEW.json", help="the new run")
    p.add_argument("--format", default="terminal", choices=FORMATS)
    p.set_defaults(alone=run_diff)


def load(path: Path):
    """The report saved at `path`; UsageError (one line) where it is not one."""
    from compare.command_line.usage import report_text
    from compare.render import json_report
    text = report_text(path)
    try:
        return json_report.load(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"{path} is not JSON ({exc}); give a report.json written by compare") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UsageError(f"{path} is not a kernel-ab report: {exc}") from None


@dataclasses.dataclass(frozen=True)
class Saved:
    """compare's --baseline: the saved run's path and its report, read before any work."""

    path: Path
    report: object

    def refuse_before_work(self, plan) -> None:
        """UsageError before any work when the planned run could share no case with the saved one."""
        from compare.checks.across_runs import refuse_mismatch
        refuse_mismatch(self.report, str(self.path), plan.family.name, [s.label for s in plan.preset.shapes],
                        plan.dtype_names)

    def after_run(self, report, verbose: bool) -> int:
        """This run (`report`) against the saved one, printed after its own report: 0, or 2 (one line on
        stderr) where they share no case; the tables with `verbose` (the lines name every change)."""
        from compare.checks.across_runs import compare_runs
        try:
            comparison = compare_runs(self.report, report, str(self.path), "this run")
        except UsageError as exc:
            print(f"kernel-ab: error: {exc}", file=sys.stderr)
            return 2
        show(comparison, tables=verbose)
        return 0


def read(text: str) -> Saved:
    """--baseline's value, read while the command line is parsed: before any work; a bad one is one line."""
    try:
        return Saved(Path(text), load(Path(text)))
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def show(comparison, form: str = "terminal", tables: bool = True) -> None:
    from compare.render import markdown, runs, terminal
    if form == "json":
        sys.stdout.write(runs.as_json(comparison))
    elif form == "markdown":
        sys.stdout.write(markdown.section_text(runs.section(comparison)))
    else:
        terminal.print_section(terminal.make_console(), runs.section(comparison), tables)


def run_diff(args) -> int:
    """The `diff` subcommand."""
    from compare.checks.across_runs import compare_runs
    old, new = load(args.old), load(args.new)
    show(compare_runs(old, new, str(args.old), str(args.new)), args.format)
    return 0
