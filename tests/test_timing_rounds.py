"""`timing.time_case` on a simulated device whose truth is known (CPU): each call advances a virtual clock
that the fake CUDA events read, so placement effects, the A/A control and identical code can be planted."""
import random
import types

import pytest
import torch

from compare import stats, timing


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.rng = random.Random(0)
        self.stream = "default"   # torch's current stream, as far as the simulated device knows


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()

    class Event:
        def __init__(self, enable_timing=True):
            self.t = 0.0

        def record(self):
            self.t = clock.now

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return other.t - self.t
    cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None, reset_peak_memory_stats=lambda: None,
                                 memory_allocated=lambda: 0, max_memory_allocated=lambda: 0,
                                 current_stream=lambda: clock.stream,
                                 set_stream=lambda stream: setattr(clock, "stream", stream))
    fake = types.SimpleNamespace(cuda=cuda, int32=torch.int32, empty=lambda n, dtype=None, device=None: torch.empty(1))
    monkeypatch.setattr(timing, "torch", fake)
    return clock


def _entry(clock, ms, code, placement=(1.0,)):
    """One call per placement, each taking `ms` times that placement's factor (plus 0.3% noise)."""
    def make(factor):
        def call():
            clock.now += ms * factor * (1 + clock.rng.gauss(0, 0.003))
        call.timed_code = code
        return call
    return tuple(make(f) for f in placement)


CONFIG = timing.TimingConfig(rounds=30, min_rounds=30, calls_per_round=3, warmup_ms=0.1, graph="off", placements=3)
PLACEMENT = (1.0, 1.06, 0.95)   # where the buffers land moves every call by up to 6%


def _case(calls, control, mode="forward"):
    return timing.time_case(calls, 1000, 1.0, "S", mode, CONFIG, control=control)


def test_placement_shared_by_a_round_is_no_verdict_and_a_real_difference_is(clock):
    calls = {"A": _entry(clock, 1.0, "a", PLACEMENT), "B": _entry(clock, 1.0, "b", PLACEMENT),
             "C": _entry(clock, 1.04, "c", PLACEMENT)}
    case = _case(calls, _entry(clock, 1.0, "a", PLACEMENT))
    verdicts = {c.variant: c.verdict for c in case.comparisons}
    assert verdicts == {"B": stats.NO_DIFFERENCE, "C": "slower"}
    assert case.placements == 3 and all(v.rounds == 30 for v in case.variants)
    assert case.control is not None and case.control.variant == "A again" and case.control.reach < 0.01


def test_a_bias_the_control_shows_is_no_verdict(clock):
    # every entry with its own buffers: the copy B lands 2% slow, the baseline's second entry 2.5% slow
    calls = {"A": _entry(clock, 1.0, "a"), "B": _entry(clock, 1.02, "b")}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
        rounds=30, min_rounds=30, calls_per_round=3, warmup_ms=0.1, graph="off"), control=_entry(clock, 1.025, "a"))
    (c,) = case.comparisons
    assert c.verdict == stats.NO_DIFFERENCE and c.basis == "A/A control" and c.margin > 0.02
    assert c.ci_low > 1.01    # without the control this interval would have been called slower


def test_identical_timed_code_is_measurement_noise(clock):
    calls = {"A": _entry(clock, 1.0, "shared"), "B": _entry(clock, 1.05, "shared"), "T": _entry(clock, 1.05, None)}
    case = timing.time_case(calls, 1000, 1.0, "S", "backward", timing.TimingConfig(
        rounds=20, min_rounds=20, calls_per_round=2, warmup_ms=0.1, graph="off"), control=_entry(clock, 1.0, "shared"))
    b, t = case.comparisons
    assert b.verdict == stats.NO_DIFFERENCE and b.basis == "identical timed code"
    assert t.verdict == "slower"     # a timed_code of None is never taken as identical


def test_entries_must_have_one_call_per_placement(clock):
    with pytest.raises(ValueError, match="one per placement"):
        _case({"A": _entry(clock, 1.0, "a", PLACEMENT), "B": _entry(clock, 1.0, "b")}, None)


def test_a_fatal_device_error_while_timing_is_handed_to_the_supervisor(clock):
    # an illegal address poisons the CUDA context: timing the others after it would only fail too
    from compare import supervisor

    def illegal():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    calls = {"A": _entry(clock, 1.0, "a"), "B": (illegal,)}
    with pytest.raises(supervisor.ContextPoisoned) as caught:
        timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
            rounds=10, min_rounds=10, calls_per_round=1, warmup_ms=0.1, graph="off"), control=_entry(clock, 1.0, "a"))
    assert "B" in str(caught.value.args)


def test_an_ordinary_error_while_timing_fails_that_variant_alone(clock):
    def broken():
        raise ValueError("no backward for this kind")
    calls = {"A": _entry(clock, 1.0, "a"), "B": (broken,)}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
        rounds=10, min_rounds=10, calls_per_round=1, warmup_ms=0.1, graph="off"), control=_entry(clock, 1.0, "a"))
    assert {v.variant: v.status for v in case.variants} == {"A": "ok", "B": "error"}
