"""The Markdown report, for a pull-request comment: verdicts first, GitHub tables, long parts folded."""
from __future__ import annotations

from tabulate import tabulate

from compare.render.ir_tables import diff_blocks
from compare.render.tables import Table, build, environment_lines, variants_table
from compare.results import Report

COMMENT_LIMIT = 65536
_MARK = {"ok": "✅", "fail": "❌", "warn": "⚠️", "info": "ℹ️"}


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


def _ir_diff(block) -> str:
    """One normalized IR diff (unified) or listing, folded."""
    fence = "diff" if block.kind == "diff" else ""
    return "\n".join([f"<details><summary>{block.title}</summary>", "", f"```{fence}", block.text, "```", "",
                      "</details>", ""])


def render(report: Report, limit: int = COMMENT_LIMIT) -> str:
    summary, sections = build(report)
    head = [f"## kernel-ab: {report.family}, preset `{report.preset}`, {report.dtype}, baseline `{report.baseline}`",
            "", "| | verdict |", "|---|---|"]
    head.extend(f"| {_MARK[level]} | {text.replace('|', '/')} |" for level, text in summary.lines)
    head.append("")
    head.append(_table(variants_table(report)))
    body = []
    for section in sections:
        block = [f"### {section.title}", ""]
        block.extend(f"{line}\n" for line in section.intro)
        block.append(f"<details><summary>{len(section.tables)} tables</summary>\n")
        block.extend(_table(t) for t in section.tables)
        block.append("</details>\n")
        body.append("\n".join(block))
    if report.ir is not None:
        body.extend(_ir_diff(block) for block in diff_blocks(report.ir))
    tail = "\n".join(["<details><summary>Environment</summary>", "",
                      *(f"- {line}" for line in environment_lines(report)), "", "</details>", ""])
    text = "\n".join(head) + "\n".join(body) + tail
    if len(text) <= limit:
        return text
    note = ("\n> **Cut:** this report exceeded GitHub's comment limit; sections after this point were "
            "dropped. The JSON report holds everything.\n\n")
    kept = "\n".join(head)
    for block in body:
        if len(kept) + len(block) + len(note) + len(tail) > limit:
            break
        kept += block
    return kept + note + tail
