"""compare/render/tables.py: the report as summary lines and titled tables with legends, which every text
renderer shares: the tables a report makes, each legend once, a skipped check in the summary, the variants
table's kernels column and op legend, one line per gate."""
import dataclasses
import re

from compare.model.headline import headline
from compare.render import markdown, terminal
from compare.render.tables import OP_LEGEND, build, gate_lines, variants_table
from compare.model.results_gates import Gate
from compare.model.skips import Skip
from tests.fixed_report import fixed_report, terminal_text


def _pair_only() -> object:
    """The fixed report without inductor: one pair, A against B."""
    report = fixed_report()
    case = report.numerics.cases[0]
    case = dataclasses.replace(case, variants=case.variants[:2])
    return dataclasses.replace(report, variants=report.variants[:2],
                               numerics=dataclasses.replace(report.numerics, cases=(case,)))


def _many_cases(report):
    """`report` with its timing case and numerics case repeated on three shapes."""
    t, n = report.timing.cases[0], report.numerics.cases[0]
    shapes = ("N2 C8 G2 S256", "N2 C16 G4 S256", "N2 C32 G8 S256")
    return dataclasses.replace(
        report, timing=dataclasses.replace(report.timing, cases=tuple(dataclasses.replace(t, shape=s) for s in shapes)),
        numerics=dataclasses.replace(report.numerics, cases=tuple(dataclasses.replace(n, shape=s) for s in shapes)))


def test_each_legend_line_is_printed_once_per_report():
    report = _many_cases(fixed_report())
    _, sections = build(report)
    assert sum(len(s.tables) for s in sections) == 12   # 3 numerics, bitwise and verdict tables, 3 timing tables
    for text in (markdown.full(report), terminal_text(report, width=400)):
        assert text.count("method: interleaved rounds") == 1
        assert text.count("status: pass = every output within tolerance") == 1
        assert text.count("bitwise: raw bits of the two outputs compared") == 1
        titles = [re.sub(r" \(\d of \d\)$", "", line) for line in text.splitlines()   # a wide table's parts: one
                  if line.startswith("#### Timing: " if text.startswith("##") else "Timing: N2")]
        assert len(set(titles)) == 3


def test_a_skipped_timing_is_said_once():
    why = Skip("timing", "needs a CUDA GPU and this run has none (Triton ran through its CPU interpreter, whose "
               "speed says nothing about the GPU)")
    report = dataclasses.replace(_pair_only(), timing=None, skipped=(why,))
    # the terminal's glance names the reason's first clause; its detail (--verbose) says it whole, once
    short, verbose = terminal_text(report, verbose=False), terminal_text(report)
    glance = short[:short.index(terminal.VERBOSE_NOTE)]
    assert glance.count("needs a CUDA GPU and this run has none") == 1 and verbose.startswith(glance)
    detail = verbose[len(glance):]
    for text in (markdown.render(report), detail):   # the Markdown's glance names the first clause too
        assert text.count("needs a CUDA GPU and this run has none (Triton ran through") == 1, text
        assert "timing: not measured: needs a CUDA GPU and this run has none (Triton ran through" in text
    assert "| needs a CUDA GPU and this run has none " in markdown.render(report)
    summary, _ = build(report, headline(report))
    assert summary.lines == ()
    assert build(report)[0].lines == (("skip", f"skipped: {why}"),)   # without the headline, the summary says it


def test_the_variants_table_says_whose_kernels_run_and_explains_ops_only_when_there_is_one():
    report = fixed_report()
    table = variants_table(report)
    assert [row[:3] for row in table.rows] == [("A", "triton", "forward (shared), backward (shared)"),
                                               ("B", "triton", "forward (shared), backward (shared)"),
                                               ("inductor", "inductor", "op")]
    assert OP_LEGEND[0] not in table.legend
    a, b, c = report.variants
    with_op = dataclasses.replace(report, variants=(a, dataclasses.replace(b, kind="op", kernels=("forward",)), c))
    table = variants_table(with_op)
    assert table.rows[1][2] == "as launched" and OP_LEGEND[0] in table.legend
    own = dataclasses.replace(report, variants=(a, dataclasses.replace(b, kernels=("forward",)), c))
    assert variants_table(own).rows[1][2] == "forward (own), backward (shared)"


def test_each_gate_is_one_line_leveled_by_whether_it_fails_the_run():
    gates = (Gate("--fail-on-numerics", None, "passed"), Gate("--fail-if-slower", 2.0, "failed", ("B: +3.0%",)),
             Gate("--fail-if-slower", 5.0, "not judged", ("nothing timed",)),
             Gate("--fail-if-slower", 5.0, "not judged", ("nothing timed",), accepted=True))
    assert gate_lines(dataclasses.replace(fixed_report(), gates=gates)) == [
        ("ok", "gate --fail-on-numerics: passed"),
        ("fail", "gate --fail-if-slower 2: FAILED: B: +3.0%"),
        ("fail", "gate --fail-if-slower 5: could not be judged, so it fails (--accept-unjudged would let it pass): "
                 "nothing timed"),
        ("warn", "gate --fail-if-slower 5: could not be judged (accepted: --accept-unjudged): nothing timed")]
