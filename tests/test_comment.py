"""The pull-request comment: the glance table first, no table wider than GitHub's column (markdown.ROW_ROOM:
each column at its longest cell, text past WRAP counted at WRAP as it wraps, plus 3 of padding), a wide table
split into parts of its columns that each keep the columns naming a row, and the "Cut" note only where the
cut parts are written nowhere else."""
import re
from pathlib import Path

from compare.render import files, json_report, markdown
from compare.render.table import Table
from tests.fixed_report import fixed_report

SEED = Path(__file__).resolve().parent.parent / "reports" / "seed_pair" / "report.json"


def _tables(text: str) -> list[list[list[str]]]:
    """Every GitHub table of `text` as rows of cells (the separator row left out)."""
    found, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            found.append(rows)
            rows = []
    return found


def _width(rows) -> int:
    return sum(markdown._room(column) for column in zip(*rows))


def test_no_table_of_the_whole_seed_report_is_wider_than_githubs_column():
    whole = markdown.full(json_report.load(SEED.read_text()))
    tables = _tables(whole)
    assert len(tables) > 100 and max(_width(t) for t in tables) <= markdown.ROW_ROOM
    assert any(" (2 of " in line for line in whole.splitlines() if line.startswith("#### "))   # some were split


def test_a_wide_table_is_split_by_columns_each_part_keeping_the_columns_that_name_a_row():
    headers = ("A", "B", "output", *(f"measure {i}" for i in range(12)))
    rows = tuple(("pointer_mutation", "explicit_offset", out, *(f"{i}.25e-06" for i in range(12))) for out in "xy")
    parts = markdown.narrow(Table("Bitwise", headers, rows, notes=("a note",)))
    assert len(parts) >= 2 and [p.title for p in parts][-1] == f"Bitwise ({len(parts)} of {len(parts)})"
    for part in parts:
        assert part.headers[:3] == ("A", "B", "output")   # A alone does not tell the two rows apart
        assert _width([part.headers, *part.rows]) <= markdown.ROW_ROOM
    assert [h for p in parts for h in p.headers[3:]] == list(headers[3:])   # every column once, in order
    assert [p.notes for p in parts] == [()] * (len(parts) - 1) + [("a note",)]
    narrow = Table("t", ("a", "b"), (("1", "2"),))
    assert markdown.narrow(narrow) == [narrow]


def test_the_comment_opens_with_the_glance_table():
    text = markdown.render(json_report.load(SEED.read_text()))
    first = _tables(text)[0]
    assert first[0] == ["check", "verdict", "how much", "where"]
    assert first[3] == ["⚠️ timing forward", "slower", "+1.6% to +2.7%", "6 of 7 shapes"]
    assert text.index("| check ") < text.index("- ✅ numerics: forward: identical bits in all 12 cases")


def test_the_cut_note_only_where_the_cut_parts_are_written_nowhere_else(tmp_path):
    report = json_report.load(SEED.read_text())
    alone = markdown.render(report)
    with_full = markdown.render(report, full_written=True)
    assert "**Cut:**" in alone and "`--out` writes them all" in alone
    assert "**Cut:**" not in with_full and "`--out` writes them all" not in with_full
    assert "are left out of this comment: report-full.md, written with this comment, holds them" in with_full
    lines, failed = files.write(report, markdown_path=tmp_path / "alone.md", out=tmp_path / "out")
    assert failed == 0
    assert (tmp_path / "out" / "report.md").read_text() == with_full
    assert (tmp_path / "alone.md").read_text() == with_full   # --out wrote report-full.md with it
    files.write(report, markdown_path=tmp_path / "only.md")
    assert (tmp_path / "only.md").read_text() == alone
    whole = markdown.full(fixed_report())
    small = markdown.render(fixed_report(), limit=len(whole))
    assert small == whole and "**Cut:**" not in small and "left out" not in small   # nothing cut, nothing said
