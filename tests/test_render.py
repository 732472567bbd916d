"""Renderers of a fixed result model: pinned Markdown and JSON, the comment limit, the terminal report.

Set KERNEL_AB_UPDATE_GOLDEN=1 to rewrite the pinned files after an intended change (and read the diff)."""
import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from compare.render import benchmark_rows, json_report, markdown, terminal
from tests.fixed_report import fixed_report

GOLDEN = Path(__file__).parent / "golden"


def _pinned(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KERNEL_AB_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; if intended, rerun with KERNEL_AB_UPDATE_GOLDEN=1"


def test_markdown_is_pinned():
    _pinned("report.md", markdown.render(fixed_report()))


def test_json_is_pinned_and_loads_back_to_the_same_report():
    text = json_report.render(fixed_report())
    _pinned("report.json", text)
    assert json_report.load(text) == fixed_report()


def test_markdown_opens_with_the_headline_of_each_pair():
    text = markdown.render(fixed_report())
    lines = text.splitlines()
    assert lines[0].startswith("## kernel-ab")
    assert lines[2] == "**`B`** against **`A`** (baseline)"
    # the glance first: a row per check, then the headline's lines
    assert [c.strip() for c in lines[4].strip("|").split("|")] == ["check", "verdict", "how much", "where"]
    assert [c.strip() for c in lines[6].strip("|").split("|")] == ["✅ numerics", "as accurate", "1 of 1 case",
                                                                   "float32 normal"]
    assert [c.strip() for c in lines[7].strip("|").split("|")] == ["⚠️ timing forward", "slower", "+3.0%",
                                                                   "1 of 1 shape"]
    at = lines.index("- ✅ numerics: forward: bits differ in 1 case; as accurate as A where bits differ")
    assert lines[at + 1] == "- ⚠️ timing: forward: slower in 1 of 1 shape (+3.0%)" and at == 10
    assert "<details><summary>Environment</summary>" in text


def test_markdown_names_each_shared_problem_open_under_the_headlines():
    text = markdown.render(fixed_report(failing=True, baseline_failing=True))
    listed = "**Shared by every variant (not introduced by this change):**\n\n- never written in forward y: normal inputs"
    assert listed in text and text.index(listed) < text.index("#### Variants")
    assert "problem group" not in text   # named, not counted behind a fold
    assert "❌" not in text.split("#### Variants")[0]


def test_headline_is_first_in_the_json_and_ignored_on_load():
    text = json_report.render(fixed_report(failing=True))
    data = json.loads(text)
    assert next(iter(data)) == "headline"
    assert data["headline"]["pairs"][0]["lines"][0]["level"] == "fail"
    assert json_report.load(text) == fixed_report(failing=True)


def test_markdown_is_cut_under_the_comment_limit_with_a_note():
    full = markdown.render(fixed_report())
    cut = markdown.render(fixed_report(), limit=len(full) - 500)
    assert len(cut) <= len(full) - 500
    assert "**Cut:**" in cut
    assert "were left out to keep this comment short: `--out` writes them all to report-full.md" in cut
    # every section keeps its fold and what fits of it; none is dropped whole
    assert "<summary><b>Numerics</b>" in cut and "<summary><b>Timing</b>" in cut
    assert cut.splitlines()[0] == full.splitlines()[0]


def test_terminal_report_has_summary_first_and_legends():
    buf = io.StringIO()
    terminal.render(fixed_report(failing=True), Console(file=buf, width=200), verbose=True)
    text = buf.getvalue()
    assert text.index("FAIL") < text.index("Numerics: forward, N2")
    lines = text.splitlines()
    assert lines[1] == "ran on NVIDIA H200"   # the report's environment: where the kernels ran
    assert lines[2] == "B against A (baseline):" and lines[3].split() == ["check", "verdict", "how", "much", "where"]
    assert lines[5].split()[:4] == ["FAIL", "numerics", "new", "problems"]
    said = next(line for line in lines if line.startswith("FAIL numerics: "))   # the headline's line, after the glance
    assert "new problems (not in A)" in said and lines.index(said) > 5
    assert "     New in B (not in A):\n       - normal inputs, float32: never written in forward y" in text
    assert "FAIL numerics: B introduced (not in A): normal inputs, float32: never written in forward y" in text
    assert "verdict: faster/slower only when p < 0.05" in text
    assert "inductor: compiled in 2.5 s (reported, not timed)" in text


def test_benchmark_rows_follow_the_seed_format():
    rows = benchmark_rows.rows(fixed_report())
    assert [r["kernel_provider"] for r in rows] == ["A", "B"]
    row = rows[1]
    assert row["x_values"] == [8] and row["y_values_50"] == [pytest.approx(0.206)]
    assert row["kernel_operation_mode"] == "forward" and row["metric_unit"] == "ms"
    assert json.loads(row["extra_benchmark_config_str"])["shapes"][0]["num_groups"] == 2


def test_timing_of_several_dtypes_is_summarised_and_tabled_per_dtype():
    import dataclasses
    report = fixed_report()
    case = report.timing.cases[0]
    cases = (dataclasses.replace(case, dtype="float32"), dataclasses.replace(case, dtype="float16"))
    report = dataclasses.replace(report, timing=dataclasses.replace(report.timing, cases=cases))
    text = markdown.render(report)
    assert "timing forward float32: B vs A: slower" in text and "timing forward float16: B vs A: slower" in text
    assert "#### Timing: N2 C8 G2 S256, float16, forward" in text
    rows = benchmark_rows.rows(report)
    assert sorted((r["kernel_provider"], json.loads(r["extra_benchmark_config_str"])["dtype"]) for r in rows) == [
        ("A", "float16"), ("A", "float32"), ("B", "float16"), ("B", "float32")]


SEED = Path(__file__).resolve().parent.parent / "reports" / "seed_pair" / "report.json"


@pytest.mark.parametrize("limit", [markdown.GITHUB_LIMIT, 30000])
def test_seed_sweep_comment_keeps_every_headline_and_the_shared_list_under_the_limit(limit):
    from compare.model.headline import headline
    report = json_report.load(SEED.read_text())
    assert len(report.variants) >= 7     # the committed H200 sweep: 9 variants
    text = markdown.render(report, limit=limit)
    assert len(text) <= limit
    head = headline(report)
    assert len(head.pairs) == len(report.variants) - 1
    for pair in head.pairs:
        assert f"**`{pair.variant}`** against **`{pair.baseline}`** (baseline)" in text
        for line in pair.lines:
            assert line.text in text
    assert all(f"- {line}" in text for line in head.shared_named + head.kept)
    assert all(f"- {line}" in text for pair in head.pairs for line in pair.problems_introduced + pair.problems_fixed)
    assert "**Cut:**" in text      # only detail was cut


def test_a_pipe_in_user_text_stays_inside_its_markdown_cell():
    """A variant's origin or description with `|` (a shell pipeline, a path) must not add table columns."""
    import dataclasses
    report = fixed_report()
    odd = dataclasses.replace(report.variants[1], why="the new kernel | piped", origin="variants/b|c.py")
    report = dataclasses.replace(report, variants=(report.variants[0], odd, report.variants[2]))
    text = markdown.render(report)
    table = text.split("#### Variants")[1].split("\n\n")[1].splitlines()
    columns = {line.count("|") - line.count("\\|") for line in table}
    assert len(columns) == 1, table
    assert "the new kernel \\| piped" in text


def test_a_timing_variant_not_for_the_shape_is_a_warning_not_a_failure():
    import dataclasses
    from compare.render.timing_tables import timing_summary, timing_table
    from compare.model.results import TimingComparison, TimingVariant
    report = fixed_report()
    case = report.timing.cases[0]
    reason = "not for this shape: slices are read again only for groups split over programs"
    case = dataclasses.replace(case, variants=case.variants[:1] + (TimingVariant("B", "not_run", reason),),
                               comparisons=(TimingComparison("B", "n/a", baseline="A", reason="B not run"),))
    section = dataclasses.replace(report.timing, cases=(case,))
    said = [(level, text) for level, text in timing_summary(section) if "B" in text]
    assert ("warn", f"timing {case.mode} {case.shape}: B not run: {reason}") in said
    assert not any(level == "fail" for level, _ in said)
    row = next(r for r in timing_table(case, ()).rows if r[0] == "B")
    assert row[1] == "not run"


def test_the_glance_says_the_accuracy_verdict_where_bits_differ_and_says_when_there_is_none():
    import dataclasses as dc
    from compare.model import glance
    report = fixed_report()
    judged = next(r for r in glance.rows(report) if r.check == "numerics")
    assert (judged.verdict, judged.where) == ("as accurate", "float32 normal")   # the headline's words
    cases = tuple(dc.replace(c, verdicts=()) for c in report.numerics.cases)
    unjudged = dc.replace(report, numerics=dc.replace(report.numerics, cases=cases))
    row = next(r for r in glance.rows(unjudged) if r.check == "numerics")
    assert (row.verdict, row.amount, row.where) == ("bits differ", "1 of 1 case", "no accuracy verdict")


def test_an_in_place_write_every_variant_shares_is_named_on_the_first_screen():
    """As review of Liger-Kernel's rms1000 shows it (an op writing dy in place, at both sides): the kind of the
    shared problem is on the first screen, its groups behind --verbose."""
    import dataclasses as dc
    from compare.model.results import InputWrite
    report = fixed_report()
    writes = (InputWrite("x", 4096, 4096),)
    cases = tuple(dc.replace(c, variants=tuple(dc.replace(v, writes=writes) if v.variant in ("A", "B") else v
                                               for v in c.variants)) for c in report.numerics.cases)
    in_place = dc.replace(report, numerics=dc.replace(report.numerics, cases=cases))
    for shown, said in ((report, False), (in_place, True)):
        out = io.StringIO()
        terminal.render(shown, Console(file=out, width=80, color_system=None))
        first = " ".join(out.getvalue().split())
        assert ("problem group: writes into its input (--verbose lists them)" in first) is said, first
