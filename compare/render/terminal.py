"""The terminal report (rich): the verdict summary first, then each section's tables with legends."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from compare.render.tables import Table, build, environment_lines, variants_table
from compare.results import Report

_STYLE = {"ok": "green", "fail": "bold red", "warn": "yellow", "info": "cyan"}
_MARK = {"ok": "OK  ", "fail": "FAIL", "warn": "SKIP", "info": "    "}


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
    console.rule("Environment")
    for line in environment_lines(report):
        console.print(line, highlight=False)
