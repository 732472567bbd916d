"""Whether the GPU is busy while none of the variants' calls is in flight: a copy timed on the current stream
against the same copy timed where the process chose its backend, before any variant was imported (`at_start`).
Work another thread, process or stream keeps on the device slows it (a side stream's loop read copies at 0.4
TB/s for 4.2 on an H200); the variant that keeps it there is named (supervisor.keeps_busy) and its process ends:
the run again without it (a timing process's dtype, compare/comparison/timing_culprit.py)."""
from __future__ import annotations

import torch

from compare.runtime import background, supervisor

PROBE_BYTES = 64 << 20   # more than L2 holds, and over in tens of microseconds
SAMPLES = 9
BUSY_FACTOR = 1.5        # the probe this many times slower than at start-up: the device is doing other work
_IDLE: list[float] = []  # the probe's milliseconds at start-up (`at_start`); none: nothing is checked


def _probe_work():
    src = torch.zeros(PROBE_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def median_ms(work, samples: int) -> float:
    """`work()`'s median time in ms over `samples` calls on the current stream (events bracket each: what the
    stream held before is not in it)."""
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def probe_ms() -> float:
    """The probe copy's median time on the current stream."""
    return median_ms(_probe_work(), SAMPLES)


def at_start() -> float:
    """The probe's idle time, taken before any variant is imported; every later `check` reads against it."""
    _IDLE[:] = [probe_ms()]
    return _IDLE[0]


def _busy() -> float | None:
    """The probe's time now where it says the device is busy, else None."""
    now = probe_ms()
    return now if now > BUSY_FACTOR * _IDLE[0] else None


def check(names, what: str, warmed: str | None = None) -> bool:
    """Whether the device is busy now, none of `names`' calls in flight (`what`: where); if so, whose act it is
    ends the process (supervisor.keeps_busy): a thread or process that one of `names`' imports or checked runs
    started and that keeps the device busy past a device-wide synchronize, else `warmed` (the variant whose
    warm-up alone just ended, the device idle before it). Before a case (`warmed` None), no one else is blamed."""
    if not _IDLE or (now := _busy()) is None:
        return False
    suspects = background.starters(names)
    if not suspects or (warmed is not None and warmed not in suspects):
        torch.cuda.synchronize()   # work that calls left in flight ends here; a thread that keeps launching goes on
        if _busy() is None:
            if warmed is None:
                return False
            suspects = [warmed]
    blamed = warmed if warmed in suspects else (suspects[0] if suspects else warmed)
    if blamed is not None:
        supervisor.keeps_busy(blamed, what, f"a copy of {PROBE_BYTES >> 20} MiB took {now * 1e3:.0f} us on the "
                                            f"timed stream, {_IDLE[0] * 1e3:.0f} us where the process started")
    return True
