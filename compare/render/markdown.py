"""The Markdown report, for a pull-request comment: verdicts first, GitHub tables, long parts folded."""
from __future__ import annotations

from tabulate import tabulate

from compare.render.ir_tables import diff_blocks
from compare.render.tables import IR_TITLE, Table, build, environment_lines, variants_table
from compare.results import Report

COMMENT_LIMIT = 65536
_MARK = {"ok": "✅", "fail": "❌", "warn": "⚠️", "skip": "⏭️", "info": "ℹ️"}


def _table(table: Table, heading: str = "####") -> str:
    parts = [f"{heading} {table.title}", "", tabulate(table.rows, headers=table.headers, tablefmt="github",
                                                       disable_numparse=True), ""]
    parts.extend(f"- ❗ {n}" for n in table.notes)
    if table.notes:
        parts.append("")
    if table.legend:
        parts.append("<sub>" + "<br>".join(table.legend) + "</sub>")
        parts.append("")
    return "\n".join(parts)


FOLD_OVER = 2   # a section with more tables than this is folded into a <details> block


def _section(section) -> str:
    block = [f"### {section.title}", ""]
    block.extend(f"{line}\n" for line in section.intro)
    fold = len(section.tables) > FOLD_OVER
    if fold:
        block.append(f"<details><summary>{len(section.tables)} tables</summary>\n")
    block.extend(_table(t) for t in section.tables)
    if fold:
        block.append("</details>\n")
    return "\n".join(block) + "\n"


def _ir_diff(block) -> str:
    """One normalized IR diff (unified) or listing, folded."""
    fence = "diff" if block.kind == "diff" else ""
    return "\n".join([f"<details><summary>{block.title}</summary>", "", f"```{fence}", block.text, "```", "",
                      "</details>", ""])


def render(report: Report, limit: int = COMMENT_LIMIT) -> str:
    """The report as one GitHub comment of at most `limit` characters; sections that do not fit are
    dropped whole, with a note saying so."""
    summary, sections = build(report)
    head = [f"## kernel-ab: {report.family}, preset `{report.preset}`, {report.dtype}, baseline `{report.baseline}`",
            "", "| | verdict |", "|---|---|"]
    head.extend(f"| {_MARK[level]} | {text.replace('|', '/')} |" for level, text in summary.lines)
    head += ["", _table(variants_table(report)), ""]
    head_text = "\n".join(head)
    body = [_section(s) for s in sections]
    if report.ir is not None:   # the diffs go with the compiled-code section, so a cut drops them together
        at = next(i for i, s in enumerate(sections) if s.title == IR_TITLE)
        body[at] += "".join(_ir_diff(block) for block in diff_blocks(report.ir))
    tail = "\n".join(["<details><summary>Environment</summary>", "",
                      *(f"- {line}" for line in environment_lines(report)), "", "</details>", ""])
    text = head_text + "".join(body) + tail
    if len(text) <= limit:
        return text
    kept, dropped = head_text, []
    for section, block in zip(sections, body):
        if dropped or len(kept) + len(block) + 400 + len(tail) > limit:
            dropped.append(section.title)
        else:
            kept += block
    note = (f"\n> **Cut:** this report is over GitHub's {limit}-character comment limit, so these sections were "
            f"left out: {', '.join(dropped)}. The JSON report holds everything.\n\n")
    return kept + note + tail
