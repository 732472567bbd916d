"""The terminal report (rich): the headline first (each variant against the baseline, then what they all
share), then each section's verdict lines and tables with legends."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from compare.headline import Headline, headline
from compare.render.ir_tables import diff_blocks, side_by_side
from compare.render.tables import Table, build, environment_lines, gate_lines, variants_table
from compare.results import Report

_STYLE = {"ok": "green", "fail": "bold red", "warn": "yellow", "skip": "yellow", "info": "cyan"}
_MARK = {"ok": "OK  ", "fail": "FAIL", "warn": "WARN", "skip": "SKIP", "info": "    "}


# Every text of a report is printed literally: names, paths, revisions and error messages come from
# users, and rich would read `[...]` as markup and `:new:` as an emoji. Styles go on Text objects.
def _console() -> Console:
    console = Console(emoji=False, highlight=False)
    if not console.is_terminal:  # a log or a pipe: wide enough that tables do not fold
        console = Console(width=160, emoji=False, highlight=False)
    return console


def _cell(c: str) -> Text:
    return Text(c, style="red" if c in ("fail", "error", "DIFFER", "NO", "LESS ACCURATE") else "yellow" if c == "untrusted"
                else "")


def _table(console: Console, table: Table) -> None:
    rt = RichTable(title=Text(table.title), title_justify="left", show_lines=False)
    for h in table.headers:
        rt.add_column(Text(h), overflow="fold")
    for row in table.rows:
        rt.add_row(*(_cell(str(c)) for c in row))
    console.print(rt)
    for note in table.notes:
        console.print(Text.assemble("  ", ("!", "red"), " ", note))
    for line in table.legend:
        console.print(Text("  " + line, style="dim"))
    console.print()


_SIDE_STYLE = {"~": ("yellow", "yellow"), "-": ("red", "dim"), "+": ("dim", "green"), "@": ("cyan", "cyan"),
               " ": ("dim", "dim")}
_SIDE_MARK = {"~": "|", "-": "<", "+": ">", "@": "", " ": ""}


def _ir_diffs(console: Console, report: Report) -> None:
    """The normalized IR diffs side by side (A left, B right); --full listings as they are."""
    for block in (b for ir in report.ir_sections for b in diff_blocks(ir)):
        console.rule(Text(block.title))
        if block.kind == "listing":
            console.print(Text(block.text))
            continue
        a_name, b_name = block.a, block.b
        rt = RichTable(show_header=True, show_lines=False, box=None, expand=True)
        rt.add_column(Text(a_name), overflow="fold", ratio=1)
        rt.add_column("", width=1)
        rt.add_column(Text(b_name), overflow="fold", ratio=1)
        for a, b, tag in side_by_side(block.text):
            sa, sb = _SIDE_STYLE[tag]
            rt.add_row(Text(a, style=sa), _SIDE_MARK[tag], Text(b, style=sb))
        console.print(rt)
        console.print()


def _line(console: Console, level: str, text: str) -> None:
    console.print(Text.assemble((_MARK[level], _STYLE[level]), " ", text))


def _list(console: Console, title: str, items: tuple[str, ...], indent: str = "") -> None:
    if items:
        console.print(Text(f"{indent}{title[:1].upper() + title[1:]}:", style="bold"))
        for item in items:
            console.print(Text(f"{indent}  - {item}"))


def _headline(console: Console, head: Headline, gates: list[tuple[str, str]]) -> None:
    for pair in head.pairs:
        a, b = pair.baseline, pair.variant
        console.print(Text.assemble((b, "bold"), " against ", (a, "bold"), " (baseline):"))
        for line in pair.lines:
            _line(console, line.level, line.text)
        _list(console, f"new in {b} (not in {a})", pair.problems_introduced, "     ")
        _list(console, f"fixed by {b} (in {a}, not in {b})", pair.problems_fixed, "     ")
    _list(console, head.shared_title, head.shared)
    _list(console, head.kept_title, head.kept)
    for level, text in gates:
        _line(console, level, text)


def render(report: Report, console: Console | None = None) -> None:
    console = console or _console()
    summary, sections = build(report)
    console.rule(Text(f"kernel-ab: {report.family}, preset {report.preset}, {report.dtype}, baseline {report.baseline}"))
    _headline(console, headline(report), gate_lines(report))
    for level, text in summary.lines:
        _line(console, level, text)
    console.print()
    _table(console, variants_table(report))
    for section in sections:
        console.rule(Text(section.title))
        for level, text in section.lines:
            _line(console, level, text)
        for line in section.intro:
            console.print(Text(line))
        for table in section.tables:
            _table(console, table)
    if report.ir_sections:
        _ir_diffs(console, report)
    console.rule(Text("Environment"))
    for line in environment_lines(report):
        console.print(Text(line))
