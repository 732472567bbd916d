"""A dtype asked for and not timed while another was (its timing process ended, a stop came first) is said
once, in the model (compare/model/pair_timing.py): the headline's timing line warns with it, the glance has a
row for it, and the --fail-if-slower gate that passes on the dtypes timed names it; a pass left out by the plan
(part "backward") is no dtype and stays out of all three."""
import dataclasses

from compare.model import gates, glance
from compare.model.headline import headline
from compare.model.skips import Skip
from compare.model.states import Level
from tests.fixed_report import fixed_report

ENDED = Skip("timing", "its process ended with exit code 1 (RuntimeError: boom)", "bfloat16",
             short="its process ended with exit code 1")
PLANNED = Skip("timing", "every variant runs the same backward kernel and launcher", "backward")


def _report(*skips: Skip):
    report = fixed_report()
    timing = dataclasses.replace(report.timing, cases=tuple(dataclasses.replace(c, dtype="float32")
                                                            for c in report.timing.cases))
    return dataclasses.replace(report, timing=timing, dtype="float32,bfloat16", skipped=report.skipped + skips)


def _timing_line(report):
    return next(ln for ln in headline(report).pairs[0].lines if ln.topic == "timing")


def test_a_dtype_whose_timing_process_ended_is_said_in_the_headline_the_glance_and_the_gate():
    report = _report(ENDED, PLANNED)
    line = _timing_line(report)
    assert line.level is Level.WARN
    assert line.text.startswith("timing: forward float32: ") and line.text.endswith(
        "; bfloat16 not timed (its process ended with exit code 1)"), line.text
    rows = {r.check: r for r in glance.rows(report) if r.variant == "B"}
    assert (rows["timing bfloat16"].verdict, rows["timing bfloat16"].level) == ("not measured", Level.WARN)
    assert "timing backward" not in rows
    (gate,) = gates.decide(report, fail_if_slower_pct=5.0)
    assert gate.lines[-1] == "bfloat16 not timed (its process ended with exit code 1)"


def test_every_dtype_timed_says_nothing_of_the_kind():
    report = _report(PLANNED)
    assert "not timed" not in _timing_line(report).text
    assert not [r for r in glance.rows(report) if r.check == "timing bfloat16"]
    (gate,) = gates.decide(report, fail_if_slower_pct=5.0)
    assert not [ln for ln in gate.lines if "not timed" in ln]
