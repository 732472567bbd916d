"""compare/comparison/pace.py: a CPU (interpreter) case estimated at more than a minute is said before it starts, in one
line naming the case, the estimate and how to make it smaller; the estimate follows the run's own pace once a case
is done."""
import pytest

from compare.comparison import pace, pipeline
from compare.runtime.backend import configure
from variants import registry

BACKEND = configure("auto")
TINY = pipeline.Request(("pointer_mutation", "explicit_offset"), shape="2,8,2,16", trials=2, inputs="normal",
                        checks=("numerics",))


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("kernel-ab: warning: the case")]


@pytest.mark.skipif(not BACKEND.interpreted, reason="the warning is for the CPU interpreter")
def test_a_case_estimated_over_the_limit_is_warned_of_before_it_runs(monkeypatch, capsys):
    monkeypatch.setattr(pace, "ELEMENTS_PER_S", 1.0)   # so slow an interpreter that the tiny case takes minutes
    seen_before_run = []
    real = pipeline.numerics.run_case
    monkeypatch.setattr(pipeline.numerics, "run_case",
                        lambda *a, **k: (seen_before_run.append(warnings(capsys.readouterr().err)), real(*a, **k))[1])
    pipeline.run(TINY, registry(), BACKEND)
    said = seen_before_run[0]
    assert len(said) == 1, said
    assert said[0].startswith("kernel-ab: warning: the case forward N2 C8 G2 S16 float32 normal may take about ")
    assert "--shape" in said[0] and "--trials" in said[0] and "4 interpreted calls" in said[0]


@pytest.mark.skipif(not BACKEND.interpreted, reason="the warning is for the CPU interpreter")
def test_a_case_under_the_limit_runs_without_a_word(capsys):
    pipeline.run(TINY, registry(), BACKEND)
    assert warnings(capsys.readouterr().err) == []


def test_once_a_case_is_done_the_runs_own_pace_decides(monkeypatch, capsys):
    monkeypatch.setattr(pace, "ELEMENTS_PER_S", 1.0)
    fast = pace.Pace()
    fast.record(10_000, 1.0)   # 10,000 element-runs a second so far: 1,000 more take 0.1 s
    with fast.case("fast", pace.CaseWork(500, 2)):
        pass
    assert warnings(capsys.readouterr().err) == []
    monkeypatch.setattr(pace, "ELEMENTS_PER_S", 1e12)
    slow = pace.Pace()
    slow.record(1_000, 100.0)   # 10 a second so far: 1,000 more take 100 s
    with slow.case("slow", pace.CaseWork(500, 2)):
        pass
    said = warnings(capsys.readouterr().err)
    assert len(said) == 1 and "about 100 s" in said[0] and "this run's pace so far" in said[0]


def test_the_work_counts_the_interpreted_variants_trials_and_every_tensor_moved():
    plan = pipeline.build(TINY, registry())
    variants, _, _ = pipeline.numerics_variants(plan)   # the pair and torch, which runs outside the interpreter
    elements, calls = pace.case_work(plan.family, variants, plan.preset.shapes[0], plan.dtypes[0], plan.seeds,
                                     "forward", BACKEND)
    assert calls == 2 * 2
    assert elements >= 2 * 2 * 8 * 16   # x and y at least
