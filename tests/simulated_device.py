"""A simulated device for compare/checks/timing.py on the CPU: each call advances a virtual clock that the fake
CUDA events read, so placement effects, the A/A control and identical code can be planted with known truth.
Use the `clock` fixture (import it into the test module) and `entry` to make one variant's calls."""
import random
import types

import pytest
import torch

from compare.checks import timing


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.rng = random.Random(0)
        self.stream = "default"   # torch's current stream, as far as the simulated device knows


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(timing, "torch", simulated_torch(clock))
    return clock


def simulated_torch(clock):
    """What compare/checks/timing.py sees as torch on the simulated device: events reading `clock`."""
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
    return types.SimpleNamespace(cuda=cuda, int32=torch.int32, empty=lambda n, dtype=None, device=None: torch.empty(1))


def entry(clock, ms, code, placement=(1.0,)):
    """One call per placement, each taking `ms` times that placement's factor (plus 0.3% noise)."""
    def make(factor):
        def call():
            clock.now += ms * factor * (1 + clock.rng.gauss(0, 0.003))
        call.timed_code = code
        return call
    return tuple(make(f) for f in placement)


CONFIG = timing.TimingConfig(rounds=30, min_rounds=30, calls_per_round=3, warmup_ms=0.1, graph="off", placements=3)
