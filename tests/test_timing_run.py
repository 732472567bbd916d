"""The timing plan (compare/running/timing_run.py): with no --modes, every pass whose compiled code differs is
timed and the others are said; the request travels to a timing process and back unchanged."""
import pytest

from compare.running import pipeline, timing_run
from compare.checks.timing import TimingConfig
from variants import registry

REG = registry()


def _plan(family, names, asked=()):
    return timing_run.plan_modes(REG.family(family), [REG.get(n, family) for n in names], asked)


def test_the_seeds_pair_times_the_forward_only_and_says_why_not_the_backward():
    modes, left = _plan("group_norm", ("pointer_mutation", "explicit_offset"))
    assert modes == ("forward",)
    assert any(line.startswith("timing backward: every variant runs the same backward kernel") for line in left)
    assert any(line.startswith("timing full:") for line in left)


def test_a_variant_with_its_own_backward_times_every_pass():
    assert _plan("group_norm", ("pointer_mutation", "single_read_coop")) == (("forward", "backward", "full"), ())


def test_a_change_of_the_backward_kernel_alone_times_the_backward():
    modes, left = _plan("layer_norm", REG.family("layer_norm").default_pair)
    assert modes == ("backward",) and any(line.startswith("timing forward: every variant runs") for line in left)


def test_ops_and_torch_time_every_pass_and_asked_modes_are_kept():
    assert _plan("group_norm", ("pointer_mutation", "torch"))[0] == ("forward", "backward", "full")
    assert _plan("group_norm", ("pointer_mutation", "explicit_offset"), ("full",)) == (("full",), ())


def test_a_request_travels_to_a_timing_process_unchanged():
    request = pipeline.Request(variants=("a", "b"), shape="2,8,2,16", checks=("timing",), external=("a=x.py::f",),
                               timing=TimingConfig(modes=("forward", "backward"), rounds=12, max_seconds=2.5))
    again = timing_run.request_from_json(timing_run.request_json(request), pipeline.Request, TimingConfig)
    assert again == request


@pytest.mark.parametrize("gpu, env, fresh", [(True, None, True), (True, "1", False), (False, None, False)])
def test_timing_runs_in_fresh_processes_on_a_gpu_unless_told(monkeypatch, gpu, env, fresh):
    if env is None:
        monkeypatch.delenv(timing_run.IN_PROCESS_ENV, raising=False)
    else:
        monkeypatch.setenv(timing_run.IN_PROCESS_ENV, env)
    assert timing_run.in_fresh_processes(gpu) is fresh
