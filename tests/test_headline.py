"""The headline, end to end through the command line with real kernels (a planted accurate fix reads
"fixes: ...", planted bugs read "less accurate" first, the gates act on what B introduced), and on fixed
reports: fixed, introduced, shared and kept problems, and tolerance misses the yardstick shares."""
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compare.model.headline import headline
from compare.render.tables import build
from compare.model.skips import Skip
from tests.fixed_report import fixed_report, tolerance_report, with_copy_of_baseline
from tests.group_norm_text import TWO_PASS_STATISTICS
from tests.planted import mutant_file
import variants.group_norm.common as common
import variants.group_norm.explicit_offset as explicit_offset
import variants.group_norm.pointer_mutation as pointer_mutation
from tests.sampled import sampled

ROOT = Path(__file__).resolve().parent.parent
SHAPE = "2,8,2,24"
STATS_IMPORT = "from variants.group_norm.common import group_statistics, store_statistics\n"
TWO_PASS = "from variants.group_norm.common import store_statistics\n\n\n" + TWO_PASS_STATISTICS


def _eps_outside_sqrt() -> str:
    """common.py's own one-pass statistics, with eps added outside the square root, defined in the variant's file."""
    source = inspect.getsource(common)
    start = source.index("@triton.jit\ndef group_statistics(")
    function = source[start:source.index("\n\n\n", start)] + "\n"
    old = "rstd = tl.rsqrt(var + eps)"
    assert function.count(old) == 1, "planted fault eps_outside_sqrt: common.py changed"
    return "from variants.group_norm.common import store_statistics\n\n\n" + function.replace(
        old, "rstd = 1.0 / (tl.sqrt(var) + eps)")


def compare(tmp_path, baseline, planted: Path, *flags):
    """Run `compare BASELINE --variant NAME=FILE::group_norm_forward` on the CPU; (exit code, stdout, JSON)."""
    out = tmp_path / "report.json"
    args = [sys.executable, "main.py", "compare", baseline, "--variant",
            f"{planted.stem}={planted}::group_norm_forward", "--shape", SHAPE, "--check", "numerics",
            "--trials", "1", "--quiet", "--json", str(out), *flags]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, r.stdout, json.loads(out.read_text())


def _glance_row(stdout: str, check: str) -> tuple[int, list[str]]:
    """Which line of the output is the glance's first row for `check` (compare/render/terminal.py), and its words."""
    return next((i, line.split()) for i, line in enumerate(stdout.splitlines()) if line.split()[1:2] == [check])


def _numerics_line(data) -> str:
    pair = data["headline"]["pairs"][0]
    line = pair["lines"][0]
    assert line["topic"] == "numerics"
    return line["text"]


def test_planted_two_pass_variance_fixes_the_baselines_large_mean_and_all_equal_problems(tmp_path):
    fix = mutant_file(tmp_path, explicit_offset, "two_pass", STATS_IMPORT, TWO_PASS)
    code, stdout, data = compare(tmp_path, "pointer_mutation", fix, "--inputs", "normal,large_mean,all_equal",
                                 "--fail-on-numerics")
    line = _numerics_line(data)
    assert line.startswith("numerics: fixes: "), line
    fixes = line.split("; ")[0]
    assert "large_mean inputs" in fixes and "all_equal inputs" in fixes and "LESS" not in line
    pair = data["headline"]["pairs"][0]
    assert pair["introduced"] == [] and code == 0
    # the baseline's NaN on large-mean inputs is not shared: the fix does not have it
    assert any(t.startswith("large_mean inputs, float32: ") for t in pair["problems_fixed"]), pair
    assert not any("large_mean" in t for t in data["headline"]["shared"])
    assert _glance_row(stdout, "numerics")[1][:3] == ["OK", "numerics", "fixes"]


@pytest.mark.parametrize("name, module, old, new", sampled([
    ("wrong_bias_channel", pointer_mutation, "b = tl.load(B_ptr + channel)", "b = tl.load(B_ptr + (channel ^ 1))"),
    ("eps_outside_sqrt", explicit_offset, STATS_IMPORT, _eps_outside_sqrt()),
], several=True))
def test_planted_bugs_are_less_accurate_first_and_fail_the_gate(tmp_path, name, module, old, new):
    bug = mutant_file(tmp_path, module, name, old, new)
    code, stdout, data = compare(tmp_path, "explicit_offset", bug, "--inputs", "normal", "--fail-on-numerics")
    line = _numerics_line(data)
    assert line.startswith("numerics: LESS ACCURATE than explicit_offset in forward float32 normal"), line
    # first in the report: the glance's first row, under the title, where it ran, the pair's name and the header
    at, words = _glance_row(stdout, "numerics")
    assert words[:4] == ["FAIL", "numerics", "less", "accurate"] and at == 5, stdout[:500]
    assert code == 1 and data["headline"]["pairs"][0]["introduced"]


def test_a_problem_both_variants_share_passes_the_gate_and_is_listed_once_as_shared(tmp_path):
    same = mutant_file(tmp_path, explicit_offset, "renamed", "hidden_per_channel = hidden_size // channels_per_group",
                  "hidden_per_channel = hidden_size // channels_per_group  # the same kernel")
    code, stdout, data = compare(tmp_path, "pointer_mutation", same, "--inputs", "large_mean,all_equal",
                                 "--fail-on-numerics")
    assert code == 0
    shared = data["headline"]["shared"]
    assert shared and data["headline"]["kept"] == [] and data["headline"]["pairs"][0]["problems_fixed"] == []
    assert any(t.startswith("large_mean inputs, float32: ") and "forward y" in t for t in shared), shared
    assert _numerics_line(data) == "numerics: forward: identical bits in all 2 cases"


def _numerics_section(report) -> list[tuple[str, str]]:
    return list(next(s for s in build(report)[1] if s.title == "Numerics").lines)


def test_a_fix_is_said_in_the_headline_line_and_listed_under_the_pair_never_as_shared():
    report = fixed_report(baseline_failing=True)   # A leaves y unwritten, B does not; inductor did not run
    head = headline(report)
    pair = head.pairs[0]
    assert pair.lines[0].text.startswith("numerics: fixes: never written on normal inputs; "), pair.lines[0].text
    assert pair.lines[0].level == "ok"
    assert pair.problems_fixed == ("normal inputs, float32: never written in forward y",)
    assert pair.problems_introduced == () and head.shared == () and head.kept == ()
    # the detail agrees: the baseline's problem is B's fix, and nothing in the section says it failed
    lines = _numerics_section(report)
    assert ("ok", "numerics: B fixed (in A, not in B): normal inputs, float32: never written in forward y") in lines
    assert not [t for level, t in lines if level == "fail"], lines


def test_a_problem_only_some_variants_keep_is_listed_apart_with_who_keeps_it():
    report = with_copy_of_baseline(fixed_report(baseline_failing=True), "C")   # C is A again
    head = headline(report)
    by_name = {p.variant: p for p in head.pairs}
    assert head.shared == ()
    assert head.kept == ("normal inputs, float32: never written in forward y (kept by C; fixed by B)",)
    assert by_name["B"].problems_fixed and not by_name["C"].problems_fixed
    assert "fixes" not in by_name["C"].lines[0].text and by_name["C"].lines[0].level == "ok"


@pytest.mark.parametrize("torch_misses", [True, False])
def test_a_tolerance_miss_the_yardstick_has_on_the_same_output_is_no_problem(torch_misses):
    report = tolerance_report(torch_misses_dw=torch_misses)
    head = headline(report)
    pair = head.pairs[0]
    # B's own miss on dx (torch holds the tolerance there) is B's, whatever torch does on dW
    assert pair.problems_introduced == ("normal inputs, float32: beyond tolerance in backward dx",)
    assert pair.lines[0].level == "fail"
    lines = _numerics_section(report)
    if torch_misses:   # nobody holds float32's tolerance on dW: not a problem of A's, nor of B's
        assert head.shared == ()
        assert ("ok", "numerics: A (baseline): no problem in the 1 case run") in lines
        yardstick = next(t for _, t in lines if "judges the others and is not judged" in t)
        assert "tolerance miss on an output where torch misses too is not counted" in yardstick
    else:
        assert head.shared == ("normal inputs, float32: beyond tolerance in backward dW",)
        assert any(level == "warn" and "shared by every variant" in t and "backward dW" in t for level, t in lines)


def test_timing_that_was_asked_for_and_whose_processes_ended_says_why_not_that_it_was_not_asked_for():
    """A review of Liger's cross entropy on the H200 whose two timing processes (one per dtype) crashed read
    "timing: not measured: not asked for"."""
    import dataclasses
    from compare.model import gates
    ended = "its process ended with exit code 1 (RuntimeError: modified by an inplace operation)"
    said = (Skip("timing", ended, "float32"), Skip("timing", ended, "bfloat16"),
            Skip("ir", "bfloat16 (the compiled code is shown for float32, the first dtype asked for)"))
    report = dataclasses.replace(fixed_report(), timing=None, skipped=said)
    line = next(ln for ln in headline(report).pairs[0].lines if ln.topic == "timing")
    assert line.level == "skip" and "not asked for" not in line.text, line.text
    assert "float32: its process ended with exit code 1" in line.text and "bfloat16: its process" in line.text
    (gate,) = gates.decide(report, fail_if_slower_pct=5.0)
    assert gate.outcome == "not judged" and "its process ended" in gate.lines[0], gate
    untimed = dataclasses.replace(report, skipped=())
    assert next(ln for ln in headline(untimed).pairs[0].lines if ln.topic == "timing").text.endswith("not asked for")
