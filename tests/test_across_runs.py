"""compare/checks/across_runs.py (`diff SAVED NEW`, `compare --baseline SAVED`): a new run against a saved one,
case by case, variant by variant. Timing needs a GPU, so the timed runs here are reports built with samples
drawn from known distributions: two draws of one distribution, and a planted slowdown."""
import dataclasses
import json
import random

import pytest

import main
from compare.checks.across_runs import compare_runs
from compare.model.errors import UsageError
from compare.model.fouls import Finding, Foul
from compare.model.runs import NumericsChange, Setting
from compare.model.states import TimingBasis, TimingVerdict
from compare.render import json_report, runs
from compare.render.markdown import section_text
from tests.fixed_report import _err, fixed_report

ROUNDS, CALLS = 30, 5


def _samples(level: float, seed: int) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(level * (1 + 0.004 * rng.gauss(0, 1)) for _ in range(ROUNDS * CALLS))


def _run(seed: int, b_slower: float = 1.0, drift: float = 1.0, b_drift: float = 1.0, **environment):
    """fixed_report's runs of A and B with ROUNDS x CALLS samples each (B `b_slower` times A's level; every
    variant `drift` times its level, as a GPU that runs slower in this run than in another; B `b_drift` more)."""
    report = fixed_report()
    case = report.timing.cases[0]
    timed = tuple(dataclasses.replace(v, samples_ms=_samples(0.2 * drift * (b_slower * b_drift if v.variant == "B" else 1.0),
                                                             seed * 10 + i), rounds=ROUNDS, calls_per_round=CALLS)
                  for i, v in enumerate(case.variants))
    timing = dataclasses.replace(report.timing, cases=(dataclasses.replace(case, variants=timed),))
    env = dataclasses.replace(report.environment, time_utc=f"2026-11-29 12:0{seed}:00 UTC", **environment)
    return dataclasses.replace(report, timing=timing, environment=env)


def _verdicts(comparison) -> dict[str, TimingVerdict]:
    return {v.variant: v.verdict for case in comparison.timing for v in case.variants}


def test_two_runs_of_the_same_code_show_no_timing_difference_and_the_same_errors():
    c = compare_runs(_run(1), _run(2), "saved.json", "new.json")
    assert _verdicts(c) == {"A": TimingVerdict.NO_DIFFERENCE, "B": TimingVerdict.NO_DIFFERENCE}
    assert all(abs(v.ratio - 1) < 0.005 for case in c.timing for v in case.variants)
    assert {v.variant: v.change for case in c.numerics for v in case.variants} == {
        "A": NumericsChange.SAME_ERRORS, "B": NumericsChange.SAME_ERRORS, "inductor": NumericsChange.NEITHER}
    assert c.setting is Setting.ONE_SETUP and "not within one" in c.caveat and "not the machine" in c.caveat
    assert c.only_in_one == ()


def test_a_planted_slowdown_saved_after_is_slower_and_the_untouched_variant_is_not():
    c = compare_runs(_run(1), _run(2, b_slower=1.05), "saved.json", "new.json")
    assert _verdicts(c) == {"A": TimingVerdict.NO_DIFFERENCE, "B": TimingVerdict.SLOWER}
    b = next(v for v in c.timing[0].variants if v.variant == "B")
    assert 1.04 < b.ci_low <= b.ratio <= b.ci_high < 1.06 and b.p_value < 0.05
    a = next(v for v in c.timing[0].variants if v.variant == "A")
    moved = max(abs(a.ci_low - 1), abs(a.ci_high - 1), abs(a.ratio - 1))   # A, unchanged, shows the drift
    assert b.basis is TimingBasis.NOISE_BAND and b.margin == pytest.approx(1.01 * (1 + moved) - 1)
    text = "\n".join(t for _, t in runs.section(c).lines)
    assert f"B N2 C8 G2 S256 float32 forward: slower across runs, {100 * (b.ratio - 1):+.1f}% (" in text


@pytest.mark.parametrize("b_slower, b_verdict", [(1.0, TimingVerdict.NO_DIFFERENCE), (1.05, TimingVerdict.SLOWER)])
def test_drift_between_runs_that_moves_every_variant_alike_is_no_verdict(b_slower, b_verdict):
    # an H100 moved unchanged code 1.2-1.3% between two runs 34 s apart (reports/baseline/): beyond the 1% band
    c = compare_runs(_run(1), _run(2, b_slower=b_slower, drift=1.013), "saved.json", "new.json")
    assert _verdicts(c) == {"A": TimingVerdict.NO_DIFFERENCE, "B": b_verdict}
    a = next(v for v in c.timing[0].variants if v.variant == "A")
    assert a.ci_low > 1.01 and a.basis is TimingBasis.DRIFT   # beyond the noise band, within B's drift
    if b_slower == 1.0:
        b = next(v for v in c.timing[0].variants if v.variant == "B")
        assert b.ci_low > 1.01 and b.basis is TimingBasis.DRIFT


@pytest.mark.parametrize("b_slower, b_verdict", [(1.0, TimingVerdict.NO_DIFFERENCE), (1.03, TimingVerdict.SLOWER)])
def test_drift_that_moves_two_variants_by_unlike_amounts_must_be_cleared_by_the_noise_band(b_slower, b_verdict):
    # an H100 moved unchanged code +0.8% and +1.6% between two runs (reports/baseline/h100_33578e1/)
    c = compare_runs(_run(1), _run(2, b_slower=b_slower, drift=1.008, b_drift=1.008), "saved.json", "new.json")
    assert _verdicts(c) == {"A": TimingVerdict.NO_DIFFERENCE, "B": b_verdict}
    b = next(v for v in c.timing[0].variants if v.variant == "B")
    assert b.ci_low > 1.01 and 0.015 < b.margin < 0.025   # beyond the 1% band alone, not beyond it and the drift


def test_a_wide_a_a_control_in_either_run_raises_the_margin_as_within_a_run():
    wide = _run(2, b_slower=1.05)
    case = wide.timing.cases[0]
    control = dataclasses.replace(case.control, ci_low=0.9, ci_high=1.1)
    wide = dataclasses.replace(wide, timing=dataclasses.replace(wide.timing, cases=(
        dataclasses.replace(case, control=control),)))
    b = next(v for v in compare_runs(_run(1), wide, "s", "n").timing[0].variants if v.variant == "B")
    assert b.verdict is TimingVerdict.NO_DIFFERENCE and b.basis is TimingBasis.AA_CONTROL and b.margin >= 0.1


def test_runs_on_two_setups_say_so_and_name_what_differs():
    other = _run(2, b_slower=1.05, gpu_name="NVIDIA H100", driver="570.1", git_commit="fedcba9876543210")
    c = compare_runs(_run(1), other, "saved.json", "new.json")
    assert c.setting is Setting.TWO_SETUPS
    assert "gpu_name NVIDIA H200 -> NVIDIA H100" in c.caveat and "driver 580.159.04 -> 570.1" in c.caveat
    assert "git_commit" not in c.caveat and "a difference may be the setup's" in c.caveat
    assert {ch.field: ch.setup for ch in c.changes} == {"gpu_name": True, "driver": True, "git_commit": False}
    level, line = runs.section(c).lines[2]
    assert level == "warn" and line.startswith("two setups: the setups differ (gpu_name")
    assert _verdicts(c)["B"] is TimingVerdict.SLOWER   # judged by the same rule, never called within-run


def test_numerics_say_which_outputs_errors_differ_and_judge_accuracy_by_the_pair_rule():
    new = _run(2)
    case = new.numerics.cases[0]
    worse = dataclasses.replace(case.variants[1], status="fail", outputs=(_err("y", 5e-5, beyond=7),
                                                                            *case.variants[1].outputs[1:]))
    new = dataclasses.replace(new, numerics=dataclasses.replace(new.numerics, cases=(
        dataclasses.replace(case, variants=(case.variants[0], worse, case.variants[2])),)))
    rows = {v.variant: v for case in compare_runs(_run(1), new, "s", "n").numerics for v in case.variants}
    assert rows["B"].change is NumericsChange.LESS and rows["B"].differing == ("y",)
    assert str(rows["B"].old_status) == "pass" and str(rows["B"].new_status) == "fail"
    assert rows["A"].change is NumericsChange.SAME_ERRORS


def test_other_seeds_are_other_inputs_so_equal_errors_are_not_called_the_same():
    new = _run(2)
    new = dataclasses.replace(new, numerics=dataclasses.replace(new.numerics, cases=(
        dataclasses.replace(new.numerics.cases[0], seeds=(5, 6)),)))
    c = compare_runs(_run(1), new, "s", "n")
    assert not c.numerics[0].same_inputs
    assert {v.change for v in c.numerics[0].variants} == {NumericsChange.AS, NumericsChange.NEITHER}


def test_cases_and_variants_of_one_run_only_are_listed():
    new = _run(2)
    new = dataclasses.replace(new, timing=dataclasses.replace(new.timing, cases=(
        new.timing.cases[0], dataclasses.replace(new.timing.cases[0], mode="backward"))))
    c = compare_runs(_run(1), new, "s", "n")
    assert c.only_in_one == ("timing N2 C8 G2 S256 float32 backward: only in the new run",)


def _saved(tmp_path, name, report) -> str:
    path = tmp_path / name
    path.write_text(json_report.render(report))
    return str(path)


def test_the_diff_command_prints_the_verdicts_and_the_json_form(tmp_path, capsys):
    old, new = _saved(tmp_path, "old.json", _run(1)), _saved(tmp_path, "new.json", _run(2, b_slower=1.05))
    assert main.main(["diff", old, new]) == 0
    out = capsys.readouterr().out
    assert "Against the saved run (group_norm)" in out and "slower in 1" in out and "two runs on one setup" in out
    assert main.main(["diff", old, new, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kernel_ab"] == "runs" and data["setting"] == "two runs on one setup"
    assert {v["variant"]: v["verdict"] for v in data["timing"][0]["variants"]} == {
        "A": "no difference beyond noise", "B": "slower"}
    assert main.main(["diff", old, new, "--format", "markdown"]) == 0
    assert capsys.readouterr().out == section_text(runs.section(compare_runs(_run(1), _run(2, b_slower=1.05),
                                                                             old, new)))


def test_mismatched_runs_are_one_line_and_exit_2(tmp_path, capsys):
    old = _saved(tmp_path, "old.json", _run(1))
    other_family = _saved(tmp_path, "fam.json", dataclasses.replace(_run(2), family="layer_norm"))
    other_shape = _run(2)
    other_shape = dataclasses.replace(other_shape, shapes=("N4 C8 G2 S256",), numerics=dataclasses.replace(
        other_shape.numerics, cases=(dataclasses.replace(other_shape.numerics.cases[0], shape="N4 C8 G2 S256"),)),
        timing=dataclasses.replace(other_shape.timing, cases=(dataclasses.replace(
            other_shape.timing.cases[0], shape="N4 C8 G2 S256"),)))
    (tmp_path / "text.json").write_text("not json")
    cases = [(other_family, "is a run of family group_norm, "), (_saved(tmp_path, "shape.json", other_shape),
                                                                 "shares no case with"),
             (str(tmp_path / "text.json"), "is not JSON"), (str(tmp_path / "none.json"), "does not exist")]
    for new, said in cases:
        assert main.main(["diff", old, new]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("kernel-ab: error: ") and said in err[0], err
    with pytest.raises(UsageError, match="share no case"):
        no_timing = dataclasses.replace(_run(2), numerics=None)
        compare_runs(dataclasses.replace(_run(1), timing=None), no_timing, "s", "n")


def test_a_variant_not_timed_or_withheld_in_either_run_has_no_verdict_and_says_why():
    new = _run(2)
    case = new.timing.cases[0]
    failed = dataclasses.replace(case.variants[1], status="error", reason="CompilationError: out of resources",
                                 samples_ms=(), rounds=0)
    fouled = dataclasses.replace(case.comparisons[0], verdict="n/a", reason="foul: answered from a cache")
    new = dataclasses.replace(new, timing=dataclasses.replace(new.timing, cases=(
        dataclasses.replace(case, variants=(case.variants[0], failed)),)))
    b = next(v for v in compare_runs(_run(1), new, "s", "n").timing[0].variants if v.variant == "B")
    assert b.verdict is TimingVerdict.NA and b.reason == "not timed in the new run: CompilationError: out of resources"
    old = _run(1)
    cache = Finding("B", Foul.TIMED_MISMATCH, "y: 512 of 512 elements never written on fresh inputs")
    old = dataclasses.replace(old, timing=dataclasses.replace(old.timing, cases=(
        dataclasses.replace(old.timing.cases[0], comparisons=(fouled,), fouls=(cache,)),)))
    b = next(v for v in compare_runs(old, _run(2), "s", "n").timing[0].variants if v.variant == "B")
    assert b.verdict is TimingVerdict.NA and b.reason == "the saved run withheld it (foul: answered from a cache)"
    # the verdict withheld is read from the case's foul records, whatever the comparison's words
    reworded = dataclasses.replace(old.timing.cases[0], comparisons=(dataclasses.replace(fouled, reason="n/a"),))
    old = dataclasses.replace(old, timing=dataclasses.replace(old.timing, cases=(reworded,)))
    b = next(v for v in compare_runs(old, _run(2), "s", "n").timing[0].variants if v.variant == "B")
    assert b.verdict is TimingVerdict.NA and b.reason == "the saved run withheld it (n/a)"
