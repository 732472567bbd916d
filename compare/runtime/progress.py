"""Progress on long work: a progress bar on a terminal, plain timestamped lines elsewhere (CI, logs).

`reporter(total)` yields a `Step`: calling it with a text says what is being done now; `advance()`
counts one of the `total` units of work done."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager


class Step:
    """Progress that goes nowhere (and the interface of those that do)."""

    def __call__(self, text: str) -> None:
        pass

    def advance(self) -> None:
        pass


class _Lines(Step):
    """'[  12.3s 4/12, ~25 s left] TEXT': the time so far, the units done, and the time left at the pace so far.
    Called from worker threads too (compare.processes.distributed), hence the lock."""

    def __init__(self, total: int):
        import threading
        self.total, self.done, self.start = total, 0, time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            elapsed = time.monotonic() - self.start
            left = f", ~{elapsed / self.done * (self.total - self.done):.0f} s left" \
                if 0 < self.done < self.total else ""
            print(f"[{elapsed:7.1f}s {self.done}/{self.total}{left}] {text}", file=sys.stderr, flush=True)

    def advance(self) -> None:
        with self._lock:
            self.done += 1


class _Bar(Step):
    def __init__(self, progress, task):
        self.progress, self.task = progress, task

    def __call__(self, text: str) -> None:
        self.progress.update(self.task, description=text)

    def advance(self) -> None:
        self.progress.advance(self.task)


@contextmanager
def reporter(total: int, enabled: bool = True):
    if not enabled:
        yield Step()
        return
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        # markup=False: descriptions hold variant names, printed literally (`git:new:...` is no emoji)
        columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=Console(stderr=True, emoji=False), transient=True) as progress:
            yield _Bar(progress, progress.add_task("starting", total=total))
        return
    yield _Lines(total)
