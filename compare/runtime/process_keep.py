"""What a worker process keeps for its life, in one place at the process boundary: a task worker's loaded
requests, a Dask worker's task runners and the trees shipped to it, a timing worker's GPU and its copy
bandwidth. Each is made once per key (`kept`; `entered` for a context manager) and ended by `release`, in
the reverse order of making, when the process is done with them."""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, ContextManager, Hashable, TypeVar

T = TypeVar("T")

_KEPT: dict[Hashable, object] = {}
_ENDS = contextlib.ExitStack()
_LOCK = threading.RLock()   # a Dask worker's threads make their runners at once


def kept(key: Hashable, make: Callable[[], T], end: Callable[[T], object] | None = None) -> T:
    """The value made for `key` by `make()` the first time it is asked for; `end(value)` at `release`."""
    with _LOCK:
        if key not in _KEPT:
            value = make()
            _KEPT[key] = value
            if end is not None:
                _ENDS.callback(end, value)
        return _KEPT[key]


def entered(key: Hashable, make: Callable[[], ContextManager[T]]) -> T:
    """The value of the context manager `make()` gives, entered the first time `key` is asked for; exited at
    `release`."""
    with _LOCK:
        if key not in _KEPT:
            _KEPT[key] = _ENDS.enter_context(make())
        return _KEPT[key]


def release() -> None:
    """Everything kept is ended (the last made first) and forgotten."""
    with _LOCK:
        _KEPT.clear()
        _ENDS.close()
