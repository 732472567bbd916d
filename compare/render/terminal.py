"""The terminal report (rich). By default the glance: the title, a table per variant of a row per check
(compare/model/glance.py), what a change broke, the gates and notices; with --verbose, then the headline's
lines, the problem lists and each section's verdict lines, tables and, once, their legend. Text wraps by words
at the terminal's width (a table whose words cannot fit side by side is printed a row to a line); piped, no
line ends in spaces."""
from __future__ import annotations

import os

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text

from compare.model import glance
from compare.model.headline import Headline, headline
from compare.render.ir_tables import diff_blocks, side_by_side
from compare.render.tables import Table, build, environment_lines, gate_lines, section_legend, variants_table
from compare.model.results import Report

_STYLE = {"ok": "green", "fail": "bold red", "warn": "yellow", "skip": "yellow", "info": "cyan"}
_MARK = {"ok": "OK  ", "fail": "FAIL", "warn": "WARN", "skip": "SKIP", "info": "    "}


PIPE_WIDTH = 100   # a log or a pipe, without COLUMNS: a width most viewers show without wrapping again
VERBOSE_NOTE = "each check's verdict lines, tables and diffs: --verbose, or the files (--out, --json, --markdown)"


class _Stripped:
    """A pipe's stream whose lines lose their trailing spaces (rich pads a wrapped cell to its width)."""

    def __init__(self, stream):
        self.stream, self.pending = stream, ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(self.pending.rstrip(" "))
            self.pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return False


# Every text of a report is printed literally: names, paths, revisions and error messages come from
# users, and rich would read `[...]` as markup and `:new:` as an emoji. Styles go on Text objects.
def make_console(stream=None) -> Console:
    """The terminal's own width (or COLUMNS); a pipe's lines at PIPE_WIDTH unless COLUMNS says, unpadded.
    `stream`: where it prints (default standard output; standard error where the output holds the JSON)."""
    import sys
    stream = stream or sys.stdout
    if stream.isatty():
        return Console(file=stream, emoji=False, highlight=False)
    width = os.environ.get("COLUMNS", "").strip()
    return Console(file=_Stripped(stream), width=int(width) if width.isdigit() and int(width) > 0 else PIPE_WIDTH,
                   emoji=False, highlight=False)


def _style(c: str) -> str:
    return "red" if c in ("fail", "error", "DIFFER", "NO", "LESS ACCURATE") else "yellow" if c == "untrusted" else ""


def _widths(table: Table, room: int) -> list[int] | None:
    """Column widths (text only) that fit in `room` with no word broken: every column at least its
    longest word, the widest cut down to a common cap; None when the longest words alone do not fit."""
    columns = list(zip(table.headers, *table.rows))
    low = [max((cell_len(w) for c in col for w in str(c).split()), default=1) for col in columns]
    high = [max(max((cell_len(line) for c in col for line in str(c).splitlines()), default=1), n)
            for col, n in zip(columns, low)]
    room -= 3 * len(columns) + 1   # a border and a space either side of every column
    if sum(low) > room:
        return None

    def fit(cap: int) -> list[int]:
        return [max(n, min(m, cap)) for n, m in zip(low, high)]
    lo, hi = 0, max(high)
    while lo < hi:   # the largest cap that fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if sum(fit(mid)) <= room else (lo, mid - 1)
    return fit(lo)


def _rows(console: Console, table: Table) -> None:
    """The table a row to a line ('header value; header value; ...', empty cells left out), for a width
    its words do not fit in side by side."""
    console.print(Text(table.title, style="italic"))
    for row in table.rows:
        line = Text()
        cells = [(h, str(c)) for h, c in zip(table.headers, row) if str(c) not in ("", "-")]
        for i, (h, c) in enumerate(cells):
            line.append(f"{'; ' if i else ''}{h} ", style="bold" if i == 0 else "")
            line.append(c, style=_style(c) or ("bold" if i == 0 else ""))
        _indented(console, line)


def _table(console: Console, table: Table) -> None:
    widths = _widths(table, console.width)
    if widths is None:
        _rows(console, table)
    else:
        rt = RichTable(title=Text(table.title), title_justify="left", show_lines=False)
        for h, w in zip(table.headers, widths):
            rt.add_column(Text(h), width=w, overflow="fold")
        for row in table.rows:
            rt.add_row(*(Text(str(c), style=_style(str(c))) for c in row))
        console.print(rt)
    for note in table.notes:
        _indented(console, Text.assemble(("!", "red"), " ", note))
    for line in table.aside:
        _indented(console, Text(line, style="dim"))
    console.print()


def _indented(console: Console, text: Text, indent: int = 2) -> None:
    """`text` wrapped by words, every line of it indented."""
    console.print(Padding(text, (0, 0, 0, indent), expand=False))


def _legend(console: Console, tables) -> None:
    """The tables' legend, each line once."""
    lines = section_legend(tables)
    for line in lines:
        _indented(console, Text(line, style="dim"))
    if lines:
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
        rt = RichTable(show_header=True, show_lines=False, box=None, expand=True)
        rt.add_column(Text(block.a), overflow="fold", ratio=1)
        rt.add_column("", width=1)
        rt.add_column(Text(block.b), overflow="fold", ratio=1)
        for a, b, tag in side_by_side(block.text):
            sa, sb = _SIDE_STYLE[tag]
            rt.add_row(Text(a, style=sa), _SIDE_MARK[tag], Text(b, style=sb))
        console.print(rt)
        console.print()


def verdict_line(console: Console, level: str, text: str) -> None:
    """A line of a level (ok, fail, warn, skip, info): its mark, then the text, wrapped by words and hanging
    under its first word (as the report's own verdict lines are printed)."""
    grid = RichTable.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(Text(_MARK[level], style=_STYLE[level]), Text(text))
    console.print(grid)


def _list(console: Console, title: str, items: tuple[str, ...], indent: str = "") -> None:
    if items:
        console.print(Text(f"{indent}{title[:1].upper() + title[1:]}:", style="bold"))
        for item in items:   # wrapped under the item, not at the margin
            _indented(console, Text(f"- {item}"), len(indent) + 2)


def _headline(console: Console, head: Headline, gates: list[tuple[str, str]]) -> None:
    for pair in head.pairs:
        a, b = pair.baseline, pair.variant
        console.print(Text.assemble((b, "bold"), " against ", (a, "bold"), " (baseline):"))
        for line in pair.lines:
            verdict_line(console, line.level, line.text)
        _list(console, f"new in {b} (not in {a})", pair.problems_introduced, "     ")
        _list(console, f"fixed by {b} (in {a}, not in {b})", pair.problems_fixed, "     ")
    _list(console, head.shared_title, head.shared)
    _list(console, head.kept_title, head.kept)
    for level, text in gates:
        verdict_line(console, level, text)


def _glance(console: Console, report: Report, the_headline: Headline, gates: list[tuple[str, str]]) -> None:
    """A glance table per variant (columns as wide in each), then what each change broke and the gates: the
    answer on the first screen."""
    rows = glance.rows(report)
    cells = [(_MARK[r.level].strip(), r.check, r.verdict, r.amount, r.where) for r in rows]
    shape = Table("", ("", *glance.HEADERS), tuple(cells))
    # one space either side of a column, no border: 2 a column where _widths counts 3
    widths = _widths(shape, console.width + len(shape.headers) - 1) or [None] * len(shape.headers)
    introduced = {p.variant: p for p in the_headline.pairs}
    for variant, against in dict.fromkeys((r.variant, r.against) for r in rows):
        console.print(Text.assemble((variant, "bold"), " against ", (against, "bold"),
                                    " (baseline):" if against == report.baseline else ":"))
        rt = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
        for header, width in zip(shape.headers, widths):
            rt.add_column(Text(header), overflow="fold", width=width)
        for r, c in zip(rows, cells):
            if (r.variant, r.against) == (variant, against):
                rt.add_row(Text(c[0], style=_STYLE[r.level]), *(Text(x) for x in c[1:]))
        console.print(rt)
        if variant in introduced:
            pair = introduced[variant]
            _list(console, f"new in {pair.variant} (not in {pair.baseline})", pair.problems_introduced)
    for title, items in ((the_headline.shared_title, the_headline.shared), (the_headline.kept_title, the_headline.kept)):
        if items and not the_headline.pairs:   # one variant: its problems are the answer
            _list(console, title, items)
        elif items:
            kinds = glance.shared_kinds(report) if items is the_headline.shared else ()
            console.print(Text(f"{title[:1].upper() + title[1:]}: {len(items)} problem group"
                               f"{'s' if len(items) > 1 else ''}{': ' + ', '.join(kinds) if kinds else ''} "
                               "(--verbose lists them)"))
    for level, text in gates:
        verdict_line(console, level, text)


def render(report: Report, console: Console | None = None, verbose: bool = False) -> None:
    """The glance (the default), or, `verbose`, the headline's lines and every section after it."""
    console = console or make_console()
    the_headline = headline(report)
    console.rule(Text(f"kernel-ab: {report.family}, preset {report.preset}, {report.dtype}, baseline {report.baseline}"))
    console.print(Text(f"ran on {report.environment.ran_on}", style="dim"))
    if report.interrupted is not None:
        verdict_line(console, "warn", report.interrupted.text())
    _glance(console, report, the_headline, gate_lines(report, full=verbose))
    summary, sections = build(report, the_headline)
    for level, text in summary.lines:   # variants not loaded, checks skipped: never only in the detail
        verdict_line(console, level, text)
    if not verbose:
        console.print(Text(VERBOSE_NOTE, style="dim"))
        return
    console.print()
    _headline(console, the_headline, [])
    console.print()
    variants = variants_table(report)
    _table(console, variants)
    _legend(console, [variants])
    for section in sections:
        print_section(console, section)
    if report.ir_sections:
        _ir_diffs(console, report)
    console.rule(Text("Environment"))
    for line in environment_lines(report):
        console.print(Text(line))


def print_section(console: Console, section, tables: bool = True) -> None:
    """A section: its title, verdict lines, intro, then (`tables`) its tables and, once, their legend."""
    console.rule(Text(section.title))
    for level, text in section.lines:
        verdict_line(console, level, text)
    for line in section.intro:
        console.print(Text(line))
    for table in section.tables if tables else ():
        _table(console, table)
    _legend(console, section.tables if tables else ())
