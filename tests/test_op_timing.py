"""How op-level passes meet compare/timing.py, on the simulated device of tests/test_timing_rounds.py:
a pass that prefers graphs is replayed from the graph it captures itself, and one that cannot be
captured sends the case to eager timing with a note saying what that costs."""
from compare import timing
from tests.test_timing_rounds import clock  # noqa: F401 - the simulated device (a pytest fixture)


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


CONFIG = timing.TimingConfig(rounds=12, min_rounds=12, calls_per_round=2, warmup_ms=0.1, graph="auto")


def test_op_passes_are_replayed_from_their_own_graphs(clock):  # noqa: F811
    a, b = _OpPass(clock, 2.0), _OpPass(clock, 2.0)
    case = timing.time_case({"a": a, "b": b}, 1000, 1.0, "S", "forward", CONFIG)
    assert case.graph and case.note == ""
    assert a.captures == 1 and b.captures == 1
    assert all(v.median_ms == 2.0 for v in case.variants)   # replayed: the host overhead is out of every sample


def test_an_op_that_cannot_be_captured_is_timed_eagerly_and_the_note_says_what_that_costs(clock):  # noqa: F811
    calls = {"a": _OpPass(clock, 2.0), "sync": _OpPass(clock, 2.0, capturable=False)}
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", CONFIG)
    assert not case.graph
    assert case.note.startswith("CUDA graph capture failed for sync (RuntimeError: operation not permitted")
    assert "every variant of this case was timed from eager launches instead" in case.note
    assert "a: eager median" in case.note and "against 2000.0 us +/-0% from a graph" in case.note
    assert all(v.median_ms > 2.0 for v in case.variants)     # eager: overhead in every sample


def test_a_failed_capture_leaves_the_stream_it_found_so_later_calls_and_cases_run_there(clock):  # noqa: F811
    calls = {"a": _OpPass(clock, 2.0), "sync": _OpPass(clock, 2.0, capturable=False)}
    timing.time_case(calls, 1000, 1.0, "S", "forward", CONFIG)
    assert clock.stream == "default"
    assert set(calls["a"].ran_on) == {"default"} and set(calls["sync"].ran_on) == {"default"}
