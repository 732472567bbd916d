"""The Markdown report, for a pull-request comment: the answer first (a glance table per variant: check, verdict,
how much, where; the headline's lines; every shared problem named), then the details, each section folded, GitHub
tables no wider than the comment column (ROW_ROOM; a wider one split by its columns), each legend once per
section. The comment is kept short (COMMENT_LIMIT) by cutting detail only, saying so where the cut parts are
written nowhere else; `full` is the same report with nothing cut."""
from __future__ import annotations

import dataclasses

from tabulate import tabulate

from compare.model import glance
from compare.model.headline import Headline, headline
from compare.render.ir_tables import diff_blocks
from compare.render.tables import IR_TITLE, Table, build, environment_lines, gate_lines, section_legend, variants_table
from compare.model.results import Report

GITHUB_LIMIT = 65536    # the most characters GitHub takes in one comment
# what the comment aims at for one op: a reviewer reads the answer and opens a fold or two, not 60,000
# characters of tables; past this, tables and diffs are cut (report-full.md and report.json keep them)
COMMENT_LIMIT = 8000
CUT_WHERE = "`--out` writes them all to report-full.md; report.json holds every number"
FULL_WRITTEN = "report-full.md, written with this comment, holds them"
# GitHub's comment column shows about 100 characters of 14px text: a table's columns, each counted at its
# longest cell (up to WRAP: longer text wraps at its spaces) plus 3 for the cell's padding, sum to at most this
ROW_ROOM, WRAP = 100, 25
# how every Markdown report begins: compare/render/files.py tells kernel-ab's own reports (those it may
# replace without --force) by it, so a change here must keep reports written before it recognized
TITLE = "## kernel-ab: "
_MARK = {"ok": "✅", "fail": "❌", "warn": "⚠️", "skip": "⏭️", "info": "ℹ️"}


def _cell(value) -> str:
    """A table cell's text with `|` escaped: user text (a variant's name or path, an error message) must
    not end the cell and shift the row's columns."""
    return str(value).replace("|", "\\|")


def _room(column) -> int:
    """What a column takes of ROW_ROOM: its longest cell, text past WRAP wrapping at spaces, and padding."""
    return 3 + max((max(WRAP, *(len(w) for w in c.split())) if len(c) > WRAP and " " in c else len(c))
                   for c in column)


def _key_columns(table: Table) -> int:
    """How many leading columns name a row: the first, and the next ones until the rows are told apart (at
    most three: the bitwise table's A, B and output)."""
    for n in range(1, min(3, len(table.headers)) + 1):
        if len({tuple(row[:n]) for row in table.rows}) == len(table.rows):
            return n
    return min(3, len(table.headers))


def narrow(table: Table) -> list[Table]:
    """`table` as tables of at most ROW_ROOM each: its columns in order, the key columns in every part."""
    columns = [[str(h), *(str(r[i]) for r in table.rows)] for i, h in enumerate(table.headers)]
    if sum(_room(c) for c in columns) <= ROW_ROOM:
        return [table]
    keys = _key_columns(table)
    base = sum(_room(c) for c in columns[:keys])
    parts, used = [[]], base
    for i in range(keys, len(columns)):
        if parts[-1] and used + _room(columns[i]) > ROW_ROOM:
            parts.append([])
            used = base
        parts[-1].append(i)
        used += _room(columns[i])
    if len(parts) == 1:
        return [table]
    tables = []
    for n, part in enumerate(parts, 1):
        chosen = [*range(keys), *part]
        tables.append(dataclasses.replace(
            table, title=f"{table.title} ({n} of {len(parts)})", headers=tuple(table.headers[i] for i in chosen),
            rows=tuple(tuple(row[i] for i in chosen) for row in table.rows),
            notes=table.notes if n == len(parts) else (), aside=table.aside if n == len(parts) else ()))
    return tables


def _table(table: Table, heading: str = "####") -> str:
    return "\n".join(_one_table(t, heading) for t in narrow(table))


def _one_table(table: Table, heading: str) -> str:
    rows = [[_cell(c) for c in row] for row in table.rows]
    parts = [f"{heading} {table.title}", "", tabulate(rows, headers=[_cell(h) for h in table.headers],
                                                       tablefmt="github", disable_numparse=True), ""]
    parts.extend(f"- ❗ {n}" for n in table.notes)
    if table.notes:
        parts.append("")
    if table.aside:
        parts += [_sub(table.aside), ""]
    return "\n".join(parts)


def _sub(lines) -> str:
    return "<sub>" + "<br>".join(lines) + "</sub>"


def _legend(tables) -> str:
    """The tables' legends, each line once (empty when there are none)."""
    lines = section_legend(tables)
    return f"{_sub(lines)}\n" if lines else ""


def _section(section, diffs: tuple[str, ...] = (), budget: int | None = None, full_written: bool = False) -> str:
    """A section's Markdown, folded under its title. `diffs` (the IR diffs) come right after the section's
    first table, the legend of the tables shown after them. With a `budget`, only the parts that fit in it
    are kept, in order, and a line says how many were left out, and where they are (`full_written`:
    report-full.md, written with this comment; else how to get them: the Cut note)."""
    where = FULL_WRITTEN if full_written else CUT_WHERE
    head = []
    for i, (level, text) in enumerate(section.lines):
        line = f"- {_MARK[level]} {text}"
        if budget is not None and len("\n".join(head)) + len(line) > budget // 2:
            head.append(f"- … {len(section.lines) - i} more verdict lines of this section: {where}")
            break
        head.append(line)
    if section.lines:
        head.append("")
    head.extend(f"{line}\n" for line in section.intro)
    tables = [(_table(t), t) for t in section.tables]
    parts = tables[:1] + [(d, None) for d in diffs] + tables[1:]
    kept, used, explained = [], len("\n".join(head)) + 300, set()
    for text, table in parts:
        new = [line for line in (table.legend if table else ()) if line not in explained]
        size = len(text) + 1 + sum(len(line) + 4 for line in new) + (12 if new and not explained else 0)
        if budget is not None and used + size > budget:
            break
        kept.append((text, table))
        explained.update(new)
        used += size
    counted = ", ".join(f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in (
        (len(section.lines), "verdict line"), (len(tables), "table"), (len(diffs), "diff")) if n)
    block = [f"<details><summary><b>{section.title}</b>: {counted}</summary>", "", *head]
    block.extend(text for text, _ in kept)
    legend = _legend([t for _, t in kept if t is not None])
    if legend:
        block.append(legend)
    if len(kept) < len(parts) and full_written:
        block.append(f"<sub>{len(parts) - len(kept)} of this section's {len(parts)} parts (tables, diffs) are left "
                     f"out of this comment: {where}.</sub>\n")
    elif len(kept) < len(parts):
        block.append(f"> **Cut:** {len(parts) - len(kept)} of this section's {len(parts)} parts (tables, diffs) "
                     f"were left out to keep this comment short: {where}.\n")
    block.append("</details>\n")
    return "\n".join(block) + "\n"


def _ir_diff(block) -> str:
    """One normalized IR diff (unified) or listing, folded."""
    fence = "diff" if block.kind == "diff" else ""
    return "\n".join([f"<details><summary>{block.title}</summary>", "", f"```{fence}", block.text, "```", "",
                      "</details>", ""])


def _listed(title: str, items: tuple[str, ...], fold: bool = False) -> list[str]:
    """A titled list of problems: open (each named on the page), or folded where it is good news."""
    if not items:
        return []
    title = title[:1].upper() + title[1:]
    if fold:
        return [f"<details><summary><b>{title}</b>: {len(items)} input kind{'s' if len(items) > 1 else ''}"
                "</summary>", "", *(f"- {item}" for item in items), "", "</details>", ""]
    return [f"**{title}:**", "", *(f"- {item}" for item in items), ""]


def glance_table(rows, variant: str) -> list[str]:
    """The variant's glance table (compare/model/glance.py): a row per check."""
    mine = [r for r in rows if r.variant == variant]
    table = tabulate([[f"{_MARK[r.level]} {_cell(r.check)}", *(_cell(c) for c in (r.verdict, r.amount, r.where))]
                      for r in mine], headers=glance.HEADERS, tablefmt="github", disable_numparse=True)
    return [table, ""] if mine else []


def verdicts(report: Report, glance_shown: bool = True) -> list[str]:
    """The answer: how far an interrupted run got; per pair its glance (unless shown elsewhere: `glance_shown`
    False) and the headline's lines, the problems it introduced (open) and fixed (folded); then every shared
    problem named, the gates and the report's other summary lines."""
    head, rows, out = headline(report), glance.rows(report), []
    if report.interrupted is not None:   # before any verdict: each row below may hold only part of what was asked
        out += [f"> {_MARK['warn']} **{report.interrupted.text()}**", ""]
    for pair in head.pairs:
        a, b = pair.baseline, pair.variant
        if glance_shown:
            out += [f"**`{b}`** against **`{a}`** (baseline)", "", *glance_table(rows, b)]
        elif len(head.pairs) > 1:
            out += [f"**`{b}`** against **`{a}`** (baseline):", ""]
        out += [f"- {_MARK[line.level]} {line.text}" for line in pair.lines]
        out.append("")
        if pair.problems_introduced:   # what the change broke is never folded away
            out += [f"New in `{b}` (not in `{a}`):", "", *(f"- {item}" for item in pair.problems_introduced), ""]
        out += _listed(f"fixed by {b} (in {a}, not in {b})", pair.problems_fixed, fold=True)
    out += _listed(head.shared_title, head.shared_named) + _listed(head.kept_title, head.kept)
    gates = gate_lines(report)
    if gates:
        out += ["**Gates**", "", *(f"- {_MARK[level]} {text}" for level, text in gates), ""]
    summary, _ = build(report, head)
    out += [f"- {_MARK[level]} {text}" for level, text in summary.lines]
    return out + ([""] if summary.lines else [])


def details(report: Report, room: int | None = None, full_written: bool = False) -> str:
    """Everything under the answer, each part folded: the variants, each check's section, the environment.
    With `room`, each section gets an even share of what the variants and the environment leave, and keeps
    the verdict lines and tables that fit in it, with a note saying what was left out and where it is."""
    _, sections = build(report, headline(report))
    variants = variants_table(report)
    fixed = "\n".join(["<details><summary><b>Variants</b></summary>", "", _table(variants), _legend([variants]),
                       "</details>", "", ""])
    extras = [() for _ in sections]
    ir_at = [i for i, s in enumerate(sections) if s.title.startswith(IR_TITLE)]
    for at, ir in zip(ir_at, report.ir_sections):   # the diffs go with their compiled-code section
        extras[at] = tuple(_ir_diff(block) for block in diff_blocks(ir))
    tail = "\n".join(["<details><summary>Environment</summary>", "",
                      *(f"- {line}" for line in environment_lines(report)), "", "</details>", ""])
    whole = "".join(_section(s, e) for s, e in zip(sections, extras))
    if room is None or len(fixed) + len(whole) + len(tail) <= room:
        return fixed + whole + tail
    left, body = room - len(fixed) - len(tail), ""
    for i, (section, extra) in enumerate(zip(sections, extras)):
        share = (left - len(body)) // (len(sections) - i)
        body += _section(section, extra, budget=share, full_written=full_written)
    return fixed + body + tail


def render(report: Report, limit: int | None = COMMENT_LIMIT, full_written: bool = False) -> str:
    """The report as one GitHub comment of about `limit` characters (None: everything): the title and the
    answer (verdicts), always whole, then the details, folded, cut to the room left (`full_written`:
    report-full.md is written with this comment, and the cut notes say so)."""
    title = f"{TITLE}{report.family}, preset `{report.preset}`, {report.dtype}, baseline `{report.baseline}`"
    top = "\n".join([title, "", *verdicts(report), ""])
    return top + details(report, None if limit is None else limit - len(top), full_written)


def full(report: Report) -> str:
    """The whole report in Markdown, nothing cut (report-full.md): too long for a comment, for reading."""
    return render(report, limit=None)


def section_text(section) -> str:
    """One section's Markdown, uncut (a section outside a report: `diff`, `compare --baseline`)."""
    return _section(section)
