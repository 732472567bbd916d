"""The terminal report (rich): the verdict summary first, then each section's tables with legends."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from compare.render.ir_tables import diff_blocks, side_by_side
from compare.render.tables import Table, build, environment_lines, variants_table
from compare.results import Report

_STYLE = {"ok": "green", "fail": "bold red", "warn": "yellow", "skip": "yellow", "info": "cyan"}
_MARK = {"ok": "OK  ", "fail": "FAIL", "warn": "WARN", "skip": "SKIP", "info": "    "}


def _table(console: Console, table: Table) -> None:
    rt = RichTable(title=table.title, title_justify="left", show_lines=False)
    for h in table.headers:
        rt.add_column(h, overflow="fold")
    for row in table.rows:
        styled = [f"[red]{c}[/red]" if c in ("fail", "error", "DIFFER", "NO")
                  else f"[yellow]{c}[/yellow]" if c == "untrusted" else c for c in row]
        rt.add_row(*styled)
    console.print(rt)
    for note in table.notes:
        console.print(f"  [red]![/red] {note}", highlight=False)
    for line in table.legend:
        console.print(f"  [dim]{line}[/dim]", highlight=False)
    console.print()


_SIDE_STYLE = {"~": ("yellow", "yellow"), "-": ("red", "dim"), "+": ("dim", "green"), "@": ("cyan", "cyan"),
               " ": ("dim", "dim")}
_SIDE_MARK = {"~": "|", "-": "<", "+": ">", "@": "", " ": ""}


def _ir_diffs(console: Console, report: Report) -> None:
    """The normalized IR diffs side by side (A left, B right); --full listings as they are."""
    from rich.markup import escape
    for block in diff_blocks(report.ir):
        console.rule(block.title)
        if block.kind == "listing":
            console.print(block.text, highlight=False, markup=False)
            continue
        a_name, b_name = block.a, block.b
        rt = RichTable(show_header=True, show_lines=False, box=None, expand=True)
        rt.add_column(a_name, overflow="fold", ratio=1)
        rt.add_column("", width=1)
        rt.add_column(b_name, overflow="fold", ratio=1)
        for a, b, tag in side_by_side(block.text):
            sa, sb = _SIDE_STYLE[tag]
            rt.add_row(f"[{sa}]{escape(a)}[/]", _SIDE_MARK[tag], f"[{sb}]{escape(b)}[/]")
        console.print(rt)
        console.print()


def render(report: Report, console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: wide enough that tables do not fold
            console = Console(width=160)
    summary, sections = build(report)
    console.rule(f"kernel-ab: {report.family}, preset {report.preset}, {report.dtype}, baseline {report.baseline}")
    for level, text in summary.lines:
        console.print(f"[{_STYLE[level]}]{_MARK[level]}[/] {text}", highlight=False)
    console.print()
    _table(console, variants_table(report))
    for section in sections:
        console.rule(section.title)
        for line in section.intro:
            console.print(line, highlight=False)
        for table in section.tables:
            _table(console, table)
    if report.ir is not None:
        _ir_diffs(console, report)
    console.rule("Environment")
    for line in environment_lines(report):
        console.print(line, highlight=False)
