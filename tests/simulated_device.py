"""A simulated device for compare/checks/timing.py on the CPU: each call advances a virtual clock that the fake
CUDA events read, so placement effects, the A/A control and identical code can be planted with known truth.
Use the `clock` fixture (import it into the test module) and `entry` to make one variant's calls; work queued on
other streams (`launch_side`, a thread that `keeps_launching`) doubles the time of work timed meanwhile."""
import random
import threading
import types

import pytest
import torch

from compare.checks import timing
from compare.runtime import device_busy


class _Clock:
    def __init__(self):
        self.now = 0.0
        self.rng = random.Random(0)
        self.stream = "default"   # torch's current stream, as far as the simulated device knows
        self.side_until = 0.0     # when the work queued on other streams is done
        self.launchers = []       # threads that keep queueing work there: busy while one is alive

    def busy(self) -> bool:
        return self.side_until > self.now or any(t.is_alive() for t in self.launchers)

    def work(self, ms: float) -> None:
        """`ms` of work on the timed stream: twice as long while the device is busy with other work."""
        self.now += ms * (2 if self.busy() else 1)

    def launch_side(self, ms: float) -> None:
        self.side_until = max(self.side_until, self.now) + ms

    def synchronize(self) -> None:
        """Device-wide: the work queued so far is done (a thread that keeps launching queues more)."""
        self.now = max(self.now, self.side_until)


PROBE_MS = 0.02   # what compare.runtime.device_busy's probe copy takes on the idle simulated device


def keeps_launching(clock) -> threading.Event:
    """A daemon thread that keeps queueing work on another stream until the Event it returns is set."""
    stop = threading.Event()

    def loop():
        while not stop.wait(0.001):
            clock.launch_side(1.0)
    thread = threading.Thread(target=loop, name="keeps launching", daemon=True)
    clock.launchers.append(thread)
    thread.start()
    return stop


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(timing, "torch", simulated_torch(clock))
    # its probe copy on the simulated device; nothing is checked until a test takes the idle probe (`at_start`)
    monkeypatch.setattr(device_busy, "torch", simulated_torch(clock))
    monkeypatch.setattr(device_busy, "_probe_work", lambda: lambda: clock.work(PROBE_MS))
    monkeypatch.setattr(device_busy, "_IDLE", [])
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
    cuda = types.SimpleNamespace(Event=Event, synchronize=clock.synchronize, reset_peak_memory_stats=lambda: None,
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
