"""Progress on long work: a progress bar on a terminal, plain timestamped lines elsewhere (CI, logs).

`reporter(total)` yields a `Step`: calling it with a text says what is being done now; `advance()`
counts one of the `total` units of work done; `new_pace()` says the units from here take another time each."""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

PIPE_COLUMNS = 80   # a piped line's width where COLUMNS does not say
_TEXT_ROOM = 12     # the least of a progress line's text worth keeping in place of the time left


def columns() -> int:
    """The width piped progress lines keep to: COLUMNS, else PIPE_COLUMNS."""
    width = os.environ.get("COLUMNS", "").strip()
    return int(width) if width.isdigit() and int(width) >= 20 else PIPE_COLUMNS


def fitted(line: str, width: int) -> str:
    """`line` cut to `width` characters, the cut said by '...' (as much of it as `width` holds)."""
    if len(line) <= width:
        return line
    return line[:width - 3].rstrip() + "..." if width > 3 else "..."[:max(width, 0)]


class Step:
    """Progress that goes nowhere (and the interface of those that do)."""

    total = 0   # the units of work it counts to (none here: nothing is shown, so a report has no count to match)

    def __call__(self, text: str) -> None:
        pass

    def advance(self) -> None:
        pass

    def new_pace(self) -> None:
        pass


class _Lines(Step):
    """'[  12.3s 4/12, ~25 s left] TEXT': the time so far, the units done, and the time left at the pace of the
    units done since the last `new_pace` (none done yet: no time left said), each line cut to COLUMNS (default
    80) by shortening TEXT, never the count. Called from worker threads too (compare.processes.distributed)."""

    def __init__(self, total: int):
        import threading
        self.total, self.done, self.start, self.width = total, 0, time.monotonic(), columns()
        self.paced = (self.start, 0)   # when the units of the pace said began, and how many were done then
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self._lock:
            now = time.monotonic()
            elapsed, (since, done_then) = now - self.start, self.paced
            pace = (now - since) / (self.done - done_then) if self.done > done_then else None
            left = f", ~{pace * (self.total - self.done):.0f} s left" \
                if pace is not None and self.done < self.total else ""
            head = f"[{elapsed:7.1f}s {self.done}/{self.total}{left}] "
            if len(head) + _TEXT_ROOM > self.width:   # a narrow line: the time left goes before the text does
                head = f"[{elapsed:.1f}s {self.done}/{self.total}] "
            print(head + fitted(text, self.width - len(head)), file=sys.stderr, flush=True)

    def advance(self) -> None:
        with self._lock:
            self.done += 1

    def new_pace(self) -> None:
        """The units from here take another time each (a dtype timed takes many numerics cases' time, a compile
        after it a fraction of one): the time left is said at their own pace, once one is done."""
        with self._lock:
            self.paced = (time.monotonic(), self.done)


class _Bar(Step):
    def __init__(self, progress, task, total: int):
        self.progress, self.task, self.total = progress, task, total

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
        from rich.table import Column
        # markup=False: descriptions hold variant names, printed literally (`git:new:...` is no emoji); the
        # description takes the room the count, the times and a short bar leave, cut with an ellipsis
        description = Column(ratio=1, no_wrap=True, overflow="ellipsis", min_width=10)
        shown = (TextColumn("{task.description}", markup=False, table_column=description), BarColumn(bar_width=10),
                 MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*shown, console=Console(stderr=True, emoji=False), transient=True, expand=True) as progress:
            yield _Bar(progress, progress.add_task("starting", total=total), total)
        return
    yield _Lines(total)
