"""The Markdown report, for a pull-request comment: the answer first (a glance table per variant: check, verdict,
how much, where; the headline's lines; every shared problem named), then the details, each section folded, GitHub
tables no wider than the comment column (ROW_ROOM; a wider one split by its columns), each legend once per
section. The comment is kept short (COMMENT_LIMIT) by cutting detail only, saying so where the cut parts are
written nowhere else; `full` is the same report with nothing cut."""
from __future__ import annotations

import dataclasses

from tabulate import tabulate

from compare.model import glance
from compare.model.headline import headline
from compare.render.ir_tables import diff_blocks
from compare.render.table import Section
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
# how every Markdown report begins: compare/command_line/output_files.py tells kernel-ab's own reports (those it may
# replace without --force) by it, so a change here must keep reports written before it recognized
TITLE = "## kernel-ab: "
MARK = {"ok": "✅", "fail": "❌", "warn": "⚠️", "skip": "⏭️", "info": "ℹ️"}


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


def _parts(section, diffs: tuple[str, ...]) -> list[tuple[str, Table | None]]:
    """A section's parts in order, each (text, its table or None for a diff): the IR diffs right after the
    first table; each column part of a wide table a part of its own, so a cut can keep its first columns."""
    tables = [[(_one_table(part, "####"), t) for part in narrow(t)] for t in section.tables]
    return [*(tables[0] if tables else ()), *((d, None) for d in diffs), *(p for t in tables[1:] for p in t)]


def _counts(section, parts, kept: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """How many verdict lines, intro lines, tables (each column part of a wide one a table, as GitHub shows
    it) and diffs the first `kept` of each hold."""
    shown = parts[:kept[2]]
    return (*kept[:2], sum(t is not None for _, t in shown), sum(t is None for _, t in shown))


def _left_out(whole, kept, verbs: tuple[str, str]) -> str:
    """What a cut left out of a section, said once: "3 of this section's 6 verdict lines and 42 of its 42
    tables were left out" (`verbs`: one thing, several)."""
    cut = [(w - k, w, kind) for w, k, kind in zip(whole, kept, ("verdict lines", "intro lines", "tables", "diffs"))
           if k < w]
    whose = ["this section's", *["its"] * (len(cut) - 1)]
    said = [f"{n} of {who} {w} {kind}" for who, (n, w, kind) in zip(whose, cut)]
    verb = verbs[sum(n for n, _, _ in cut) != 1]
    return (", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else said[0]) + f" {verb} left out"


def _fold(section, parts, kept: tuple[int, int, int], full_written: bool, counted: bool) -> str:
    """A section folded under its title, holding its first `kept` verdict lines, intro lines and `parts`,
    and one note (where anything was left out) of how many of each and where they are."""
    said, intro, shown = kept
    whole = _counts(section, parts, (len(section.lines), len(section.intro), len(parts)))
    count = ", ".join(f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in zip(
        (whole[0], *whole[2:]), ("verdict line", "table", "diff")) if n)
    block = [f"<details><summary><b>{section.title}</b>{f': {count}' if counted else ''}</summary>", ""]
    block += [f"- {MARK[level]} {text}" for level, text in section.lines[:said]] + ([""] if said else [])
    block += [f"{line}\n" for line in section.intro[:intro]] + [text for text, _ in parts[:shown]]
    legend = _legend([t for _, t in parts[:shown] if t is not None])
    block += [legend] if legend else []
    shown_counts = _counts(section, parts, kept)
    if full_written and shown_counts != whole:
        what = _left_out(whole, shown_counts, ("is", "are"))
        block.append(f"<sub>{what[:1].upper()}{what[1:]} of this comment: {FULL_WRITTEN}.</sub>\n")
    elif shown_counts != whole:
        block.append(f"> **Cut:** {_left_out(whole, shown_counts, ('was', 'were'))} to keep this comment short: "
                     f"{CUT_WHERE}.\n")
    return "\n".join([*block, "</details>\n"]) + "\n"


def _section(section, parts, budget: int | None = None, full_written: bool = False, counted: bool = True) -> str:
    """A section's Markdown with its `parts` (_parts), folded under its title (`counted`: the title says how many
    lines, tables and diffs it has). With a `budget`, at most that many characters: the verdict lines that fit
    in half of it, then the intro lines and the parts that fit, each in order, and a note of what was cut."""
    whole = [len(section.lines), len(section.intro), len(parts)]
    if budget is None:
        return _fold(section, parts, tuple(whole), full_written, counted)
    lines = [len(text) + 5 for _, text in section.lines]
    kept = [0, 0, 0]
    for kind in range(3):
        while kept[kind] < whole[kind]:
            kept[kind] += 1
            if len(_fold(section, parts, tuple(kept), full_written, counted)) > budget or \
                    kind == 0 and sum(lines[:kept[0]]) > budget // 2:
                kept[kind] -= 1
                break
    return _fold(section, parts, tuple(kept), full_written, counted)


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
    table = tabulate([[f"{MARK[r.level]} {_cell(r.check)}", *(_cell(c) for c in (r.verdict, r.amount, r.where))]
                      for r in mine], headers=glance.HEADERS, tablefmt="github", disable_numparse=True)
    return [table, ""] if mine else []


def verdicts(report: Report, glance_shown: bool = True) -> list[str]:
    """The answer: how far an interrupted run got; per pair its glance (unless shown elsewhere: `glance_shown`
    False) and the headline's lines, the problems it introduced (open) and fixed (folded); then every shared
    problem named, the gates and the report's other summary lines."""
    head, rows, out = headline(report), glance.rows(report), []
    if report.interrupted is not None:   # before any verdict: each row below may hold only part of what was asked
        out += [f"> {MARK['warn']} **{report.interrupted.text()}**", ""]
    for pair in head.pairs:
        a, b = pair.baseline, pair.variant
        if glance_shown:
            out += [f"**`{b}`** against **`{a}`** (baseline)", "", *glance_table(rows, b)]
        elif len(head.pairs) > 1:
            out += [f"**`{b}`** against **`{a}`** (baseline):", ""]
        out += [f"- {MARK[line.level]} {line.text}" for line in pair.lines]
        out.append("")
        if pair.problems_introduced:   # what the change broke is never folded away
            out += [f"New in `{b}` (not in `{a}`):", "", *(f"- {item}" for item in pair.problems_introduced), ""]
        out += _listed(f"fixed by {b} (in {a}, not in {b})", pair.problems_fixed, fold=True)
    out += _listed(head.shared_title, head.shared_named) + _listed(head.kept_title, head.kept)
    gates = gate_lines(report)
    if gates:
        out += ["**Gates**", "", *(f"- {MARK[level]} {text}" for level, text in gates), ""]
    summary, _ = build(report, head)
    out += [f"- {MARK[level]} {text}" for level, text in summary.lines]
    return out + ([""] if summary.lines else [])


def details(report: Report, room: int | None = None, full_written: bool = False) -> str:
    """Everything under the answer, each part folded: the variants, each check's section, the environment.
    With `room`, the variants and each section in turn get an even share of what is left of it (the
    environment's taken first), then what the others left unused, and keep what fits, with a note saying
    what was left out and where it is."""
    _, sections = build(report, headline(report))
    extras = [() for _ in sections]
    ir_at = [i for i, s in enumerate(sections) if s.title.startswith(IR_TITLE)]
    for at, ir in zip(ir_at, report.ir_sections):   # the diffs go with their compiled-code section
        extras[at] = tuple(_ir_diff(block) for block in diff_blocks(ir))
    variants = Section("Variants", (), (variants_table(report),))
    folds = [(section, _parts(section, extra), counted) for section, extra, counted in (
        (variants, (), False), *((s, e, True) for s, e in zip(sections, extras)))]
    tail = "\n".join(["<details><summary>Environment</summary>", "",
                      *(f"- {line}" for line in environment_lines(report)), "", "</details>", ""])
    whole = "".join(_section(section, parts, counted=counted) for section, parts, counted in folds)
    if room is None or len(whole) + len(tail) <= room:
        return whole + tail
    left, texts = room - len(tail), []
    for i, (section, parts, counted) in enumerate(folds):
        share = (left - sum(map(len, texts))) // (len(folds) - i)
        texts.append(_section(section, parts, share, full_written, counted))
    # a fold whose next part is bigger than its share leaves the share unused: the first folds it fits take it
    for i, (section, parts, counted) in enumerate(folds):
        spare = left - sum(map(len, texts))
        texts[i] = _section(section, parts, len(texts[i]) + spare, full_written, counted)
    return "".join(texts) + tail


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
    return _section(section, _parts(section, ()))
