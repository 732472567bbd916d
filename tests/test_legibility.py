"""What makes a report legible: ratios far from 1 as multiples, a comment short enough to read (everything
else in report-full.md), terminal text wrapped by words (each legend once: tests/test_tables.py)."""
import dataclasses
from pathlib import Path

from rich.cells import cell_len

from compare.model.headline import headline
from compare.model.ratios import ratio_interval, ratio_span, ratio_text
from compare.render import json_report, markdown, terminal
from compare.render.tables import build
from tests.fixed_report import fixed_report, terminal_text

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def test_ratios_beyond_twice_read_as_multiples_and_near_one_as_percentages():
    assert ratio_text(1 / 33.6) == "33.6× faster" and ratio_text(2.4) == "2.4× slower"
    assert ratio_text(1.03) == "+3.0%" and ratio_text(0.6, 2) == "-40.00%" and ratio_text(1.9) == "+90.0%"
    assert ratio_span(1 / 20.1, 1 / 33.6) == "20.1× to 33.6× faster"
    assert ratio_span(0.99, 1.03) == "-1.0% to +3.0%" and ratio_span(1.03, 1.0301) == "+3.0%"
    assert ratio_span(0.7, 2.5) == "-30.0% to 2.5× slower"
    assert ratio_interval(1 / 34.0, 1 / 33.1) == "[33.1×, 34.0×] faster"
    assert ratio_interval(0.99, 1.03) == "[-1.00%, +3.00%]"


def test_a_33x_speedup_reads_as_33_6x_faster_in_headline_table_and_summary():
    report = fixed_report(slower_ratio=1 / 33.6)
    text = markdown.full(report)
    assert "timing: forward: no difference beyond noise in 1 of 1 shape (33.6× faster)" in text   # the headline
    assert "| 33.6× faster " in text and "(ratio 33.6× faster)" in text
    assert "-97." not in text


def test_the_comment_of_a_committed_two_variant_report_is_under_8000_characters():
    """The seed's pair on every dtype and input kind, timed and compiled on the H200 (its whole Markdown:
    over 700,000 characters): the comment keeps the headline in under 8,000 characters and says where
    the rest is; report-full.md cuts nothing."""
    report = json_report.load((REPORTS / "numerics_seed_pair" / "report.json").read_text())
    assert len([v for v in report.variants if v.name != report.numerics.added_reference]) == 2
    comment, whole = markdown.render(report), markdown.full(report)
    assert len(comment) < 8_000 < len(whole)
    for pair in headline(report).pairs:
        assert all(line.text in comment for line in pair.lines)
    assert "**Cut:**" in comment and "report-full.md" in comment and "**Cut:**" not in whole
    _, sections = build(report)
    # a table wider than GitHub's column comes as parts of its columns: "#### TITLE (1 of 2)"
    assert all(f"#### {t.title}\n" in whole or f"#### {t.title} (1 of " in whole for s in sections for t in s.tables)


def test_terminal_text_wraps_by_words_at_the_width():
    report = fixed_report(failing=True)
    long = dataclasses.replace(report.variants[1], why="a description long enough to need several lines " * 3,
                               origin="variants/group_norm/a_long_name_for_the_kernel.py")
    report = dataclasses.replace(report, variants=(report.variants[0], long, report.variants[2]))
    for width in (60, 100):
        text = terminal_text(report, width)
        assert max(cell_len(line) for line in text.splitlines()) <= width
        words = {w for s in build(report)[1] for t in s.tables for row in t.rows for c in row for w in str(c).split()}
        words = {w.strip(";:") for w in words | set(long.why.split()) | {long.origin}}
        shown = {w.strip("│┃;:") for w in text.split()}
        assert words <= shown, sorted(words - shown)


def test_the_console_takes_the_terminals_width_or_columns_or_100(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal.make_console().width == terminal.PIPE_WIDTH == 100   # pytest's captured output is no terminal
    monkeypatch.setenv("COLUMNS", "123")
    assert terminal.make_console().width == 123
