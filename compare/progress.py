"""Progress on long work: a live status line on a terminal, plain lines elsewhere (CI, logs)."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager


@contextmanager
def reporter(enabled: bool = True):
    """Yields `step(text)`. On a TTY a rich status spinner, else timestamped lines on stderr."""
    if not enabled:
        yield lambda _text: None
        return
    if sys.stderr.isatty():
        from rich.console import Console
        console = Console(stderr=True)
        with console.status("starting") as status:
            yield lambda text: status.update(text)
        return
    start = time.monotonic()

    def step(text: str) -> None:
        print(f"[{time.monotonic() - start:7.1f}s] {text}", file=sys.stderr, flush=True)
    yield step
