"""compare/checks/timing.py: the L2 flush reads its buffer (a zeroing one charged the timed call with its
write-backs, reports/l2_flush); `time_case` on the simulated device (tests/simulated_device.py) decides
placement, the A/A control and identical code as planted; op passes replay their own graphs or run eagerly."""
import pytest
import torch

from compare.checks import stats, timing
from tests.simulated_device import CONFIG, entry


def test_the_l2_flush_reads_its_buffer_and_leaves_it_as_it_was():
    buffer = torch.arange(1, 4097, dtype=torch.int32)
    timing.flush_l2(buffer)
    assert torch.equal(buffer, torch.arange(1, 4097, dtype=torch.int32))


def test_the_method_line_says_the_flush_is_a_read():
    assert "flush before every call (a read" in timing.method_text(timing.TimingConfig())


PLACEMENT = (1.0, 1.06, 0.95)   # where the buffers land moves every call by up to 6%


def _case(calls, control, mode="forward"):
    return timing.time_case(calls, 1000, 1.0, "S", mode, CONFIG, control=control)


def test_placement_shared_by_a_round_is_no_verdict_and_a_real_difference_is(clock):
    calls = {"A": entry(clock, 1.0, "a", PLACEMENT), "B": entry(clock, 1.0, "b", PLACEMENT),
             "C": entry(clock, 1.04, "c", PLACEMENT)}
    case = _case(calls, entry(clock, 1.0, "a", PLACEMENT))
    verdicts = {c.variant: c.verdict for c in case.comparisons}
    assert verdicts == {"B": stats.NO_DIFFERENCE, "C": "slower"}
    assert case.placements == 3 and all(v.rounds == 30 for v in case.variants)
    assert case.control is not None and case.control.variant == "A again" and case.control.reach < 0.01


def test_a_bias_the_control_shows_is_no_verdict(clock):
    # every entry with its own buffers: the copy B lands 2% slow, the baseline's second entry 2.5% slow
    calls = {"A": entry(clock, 1.0, "a"), "B": entry(clock, 1.02, "b")}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
        rounds=30, min_rounds=30, calls_per_round=3, warmup_ms=0.1, graph="off"), control=entry(clock, 1.025, "a"))
    (c,) = case.comparisons
    assert c.verdict == stats.NO_DIFFERENCE and c.basis == "A/A control" and c.margin > 0.02
    assert c.ci_low > 1.01    # without the control this interval would have been called slower


def test_identical_timed_code_is_measurement_noise(clock):
    calls = {"A": entry(clock, 1.0, "shared"), "B": entry(clock, 1.05, "shared"), "T": entry(clock, 1.05, None)}
    case = timing.time_case(calls, 1000, 1.0, "S", "backward", timing.TimingConfig(
        rounds=20, min_rounds=20, calls_per_round=2, warmup_ms=0.1, graph="off"), control=entry(clock, 1.0, "shared"))
    b, t = case.comparisons
    assert b.verdict == stats.NO_DIFFERENCE and b.basis == "identical timed code"
    assert t.verdict == "slower"     # a timed_code of None is never taken as identical


def test_entries_must_have_one_call_per_placement(clock):
    with pytest.raises(ValueError, match="one per placement"):
        _case({"A": entry(clock, 1.0, "a", PLACEMENT), "B": entry(clock, 1.0, "b")}, None)


def test_a_fatal_device_error_while_timing_is_handed_to_the_supervisor(clock):
    # an illegal address poisons the CUDA context: timing the others after it would only fail too
    from compare.runtime import supervisor

    def illegal():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    calls = {"A": entry(clock, 1.0, "a"), "B": (illegal,)}
    with pytest.raises(supervisor.ContextPoisoned) as caught:
        timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
            rounds=10, min_rounds=10, calls_per_round=1, warmup_ms=0.1, graph="off"), control=entry(clock, 1.0, "a"))
    assert "B" in str(caught.value.args)


def test_an_ordinary_error_while_timing_fails_that_variant_alone(clock):
    def broken():
        raise ValueError("no backward for this kind")
    calls = {"A": entry(clock, 1.0, "a"), "B": (broken,)}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", timing.TimingConfig(
        rounds=10, min_rounds=10, calls_per_round=1, warmup_ms=0.1, graph="off"), control=entry(clock, 1.0, "a"))
    assert {v.variant: v.status for v in case.variants} == {"A": "ok", "B": "error"}


class _Graph:
    def __init__(self, clock, ms):
        self.clock, self.ms = clock, ms

    def replay(self):
        self.clock.now += self.ms


class _OpPass:
    """An op's pass: eager, its kernel time plus host overhead that varies; replayed, the kernel time alone."""

    prefers_graph = True

    def __init__(self, clock, kernel_ms, capturable=True):
        self.clock, self.kernel_ms, self.capturable = clock, kernel_ms, capturable
        self.captures = 0
        self.ran_on = []   # the stream each eager call ran on

    def __call__(self):
        self.ran_on.append(self.clock.stream)
        self.clock.now += self.kernel_ms + self.clock.rng.uniform(0.0, 1.0)

    def capture_graph(self):
        self.captures += 1
        self.clock.stream = "capture"   # as torch.cuda.graph's __enter__ does
        if not self.capturable:
            # torch.cuda.graph's __exit__ raises from capture_end before it restores the stream
            raise RuntimeError("operation not permitted when stream is capturing")
        self.clock.stream = "default"
        return _Graph(self.clock, self.kernel_ms)


OP_CONFIG = timing.TimingConfig(rounds=12, min_rounds=12, calls_per_round=2, warmup_ms=0.1, graph="auto")


def test_op_passes_are_replayed_from_their_own_graphs(clock):
    a, b = _OpPass(clock, 2.0), _OpPass(clock, 2.0)
    case = timing.time_case({"a": a, "b": b}, 1000, 1.0, "S", "forward", OP_CONFIG)
    assert case.graph and case.note == ""
    assert a.captures == 1 and b.captures == 1
    assert all(v.median_ms == 2.0 for v in case.variants)   # replayed: the host overhead is out of every sample


def test_an_op_that_cannot_be_captured_is_timed_eagerly_and_the_note_says_what_that_costs(clock):
    calls = {"a": _OpPass(clock, 2.0), "sync": _OpPass(clock, 2.0, capturable=False)}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", OP_CONFIG)
    assert not case.graph
    assert case.note.startswith("CUDA graph capture failed for sync (RuntimeError: operation not permitted")
    assert "every variant of this case was timed from eager launches instead" in case.note
    assert "a: eager median" in case.note and "against 2000.0 us +/-0% from a graph" in case.note
    assert all(v.median_ms > 2.0 for v in case.variants)     # eager: overhead in every sample


def test_a_failed_capture_leaves_the_stream_it_found_so_later_calls_and_cases_run_there(clock):
    calls = {"a": _OpPass(clock, 2.0), "sync": _OpPass(clock, 2.0, capturable=False)}
    timing.time_case(calls, 1000, 1.0, "S", "forward", OP_CONFIG)
    assert clock.stream == "default"
    assert set(calls["a"].ran_on) == {"default"} and set(calls["sync"].ran_on) == {"default"}


def test_each_entrys_calls_outside_the_rounds_name_it_alone_and_the_rounds_name_every_variant(clock, tmp_path,
                                                                                              monkeypatch):
    """A crash while one entry warms up, has its launch cost measured, is captured or audited is that variant's
    (the A/A control's: the baseline's); one in the interleaved rounds is nobody's alone."""
    import json
    from compare.runtime import run_context, supervisor
    status = tmp_path / "status"
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(status), "token": None})
    with supervisor.running(("a", "b"), "timing S forward float32"):
        timing.time_case({"a": _OpPass(clock, 2.0), "b": _OpPass(clock, 2.0)}, 1000, 1.0, "S", "forward", OP_CONFIG,
                         control=_OpPass(clock, 2.0))
    said = [(r["variants"], r["what"]) for r in map(json.loads, status.read_text().splitlines())]
    outer = (["a", "b"], "timing S forward float32")
    alone = [(names, what.removeprefix("timing S forward ")) for names, what in said if (names, what) != outer]
    phases = [[(["a"], phase), (["b"], phase), (["a"], phase)]   # the A/A control's as the baseline's
              for phase in ("warm-up", "launch cost", "graph capture")]
    assert alone == [*phases[0], *phases[1], *phases[2], (["a"], "audit"), (["b"], "audit"), ([], "")]
    assert said[-2] == outer   # each alone block gave the launch back to every variant: the rounds ran under it


class _AcceleratorError(RuntimeError):
    """Named as torch's (torch.AcceleratorError): the supervisor reads a device error of that class as fatal."""


_AcceleratorError.__name__ = "AcceleratorError"


class _SyncsWhileCaptured(_OpPass):
    """An op whose capture fails with the device error Liger's cross entropy raises under capture (its
    host copy invalidates the capture, not the context)."""

    def capture_graph(self):
        self.captures += 1
        self.clock.stream = "capture"
        raise _AcceleratorError("CUDA error: operation failed due to a previous error during capture")


def test_a_capture_invalidated_by_a_device_error_times_eagerly_when_the_context_still_synchronizes(clock):
    calls = {"a": _OpPass(clock, 2.0), "ce": _SyncsWhileCaptured(clock, 2.0)}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", OP_CONFIG)
    assert not case.graph and clock.stream == "default"
    assert case.note.startswith("CUDA graph capture failed for ce (AcceleratorError: CUDA error: operation failed")
    assert all(v.status == "ok" for v in case.variants)


def test_a_capture_whose_device_error_leaves_a_context_that_cannot_synchronize_is_poisoned(clock, monkeypatch):
    from compare.runtime import supervisor

    def lost():
        raise _AcceleratorError("CUDA error: an illegal memory access was encountered")
    monkeypatch.setattr(timing.torch.cuda, "synchronize", lost)
    calls = {"a": _OpPass(clock, 2.0), "ce": _SyncsWhileCaptured(clock, 2.0)}
    with pytest.raises(supervisor.ContextPoisoned) as caught:
        timing.time_case(calls, 1000, 1.0, "S", "forward", OP_CONFIG)
    assert "ce" in str(caught.value.args)
