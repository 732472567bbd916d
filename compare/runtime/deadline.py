"""A deadline in the main thread: `OutOfTime` (compare.runtime.supervisor) raised there when it passes, so that
what runs unwinds as on a stop signal and the report of what finished still comes out. Put off while an import
runs (a half-done import of a C extension cannot be done again), for at most IMPORT_GRACE_S."""
from __future__ import annotations

import contextlib
import signal
import threading
import time

from compare.runtime.supervisor import OutOfTime, inside_import

IMPORT_GRACE_S = 5.0
_RETRY_S = 0.05


@contextlib.contextmanager
def deadline(seconds: float, said: str):
    """Within the block, OutOfTime(`said`) raised in the main thread `seconds` from now (at once if none are
    left). Off the main thread, where no signal can reach it, nothing is raised."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    first: list[float] = []

    def on_alarm(_signum, frame):
        first[:] = first or [time.monotonic()]
        if inside_import(frame) and time.monotonic() - first[0] < IMPORT_GRACE_S:
            signal.setitimer(signal.ITIMER_REAL, _RETRY_S)   # armed all along: a launch's guard sees no change
            return
        raise OutOfTime(said)
    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
