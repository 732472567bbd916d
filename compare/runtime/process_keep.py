"""What a worker process keeps for its life, in one place at the process boundary: a task worker's loaded
requests, a Dask worker's task runners and the trees shipped to it, a timing process's repositories and its
copy bandwidth. Each is made once per key (`kept`; `entered` for a context manager) and ended by `release`, in
the reverse order of making, when the process is done with them; or held from one task to the next (`hold`: a
timing process's loaded request, until it is timed) and ended by `let_go`."""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, ContextManager, Hashable, TypeVar

T = TypeVar("T")

_KEPT: dict[Hashable, object] = {}
_ENDS = contextlib.ExitStack()
_LOCK = threading.RLock()   # a Dask worker's threads make their runners at once
_HELD: dict[Hashable, tuple[object, contextlib.ExitStack]] = {}


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
    return kept(key, lambda: _ENDS.enter_context(make()))


def hold(key: Hashable, make: Callable[[], ContextManager[T]]) -> T:
    """The value of the context manager `make()` gives, entered now (what `key` held before let go first) and
    held until `let_go(key)` or `release`."""
    let_go(key)
    with _LOCK:
        ends = contextlib.ExitStack()
        value = ends.enter_context(make())
        _HELD[key] = (value, ends)
        return value


def held(key: Hashable):
    """What `hold` holds for `key`; KeyError where nothing is held."""
    return _HELD[key][0]


def let_go(key: Hashable) -> None:
    """What `key` holds is exited and forgotten (nothing held: nothing happens)."""
    with _LOCK:
        _, ends = _HELD.pop(key, (None, contextlib.ExitStack()))
    ends.close()


def release() -> None:
    """Everything held and kept is ended (the last made first) and forgotten."""
    for key in list(_HELD):
        let_go(key)
    with _LOCK:
        _KEPT.clear()
        _ENDS.close()
