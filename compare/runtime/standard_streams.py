"""Standard output and standard error as compare.runtime.process_guard watches them: a variant that closes
one (`sys.stdout.close()`, `os.close(2)`) or points its descriptor elsewhere (`os.dup2`) would take kernel-ab's
report and messages with it. Each launch is compared with the streams as they were; what changed is named and
put back from duplicates of the descriptors taken when the guard started."""
from __future__ import annotations

import io
import os
import sys

from compare.runtime.process_flags import Watch

_STREAMS = ((1, "stdout", "standard output"), (2, "stderr", "standard error"))


def _file(fd: int):
    """(device, inode) of what descriptor `fd` refers to, or None where it is closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _closed(stream) -> bool:
    try:
        return bool(getattr(stream, "closed", False))
    except Exception:   # noqa: BLE001 - a stream whose `closed` raises is as good as closed
        return True


def _reopened(fd: int, old):
    """A text stream on descriptor `fd` like the closed `old` (its encoding, error handler, line buffering)."""
    def attr(name, default):
        try:
            return getattr(old, name, default) or default
        except Exception:   # noqa: BLE001
            return default
    raw = io.FileIO(os.dup(fd), "w")
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=attr("encoding", "utf-8"),
                            errors=attr("errors", "backslashreplace"),
                            line_buffering=bool(attr("line_buffering", False)), write_through=True)


def streams() -> Watch:
    """The watch: descriptors 1 and 2 by the file they refer to, sys.stdout and sys.stderr by closed or not."""
    kept = {fd: os.dup(fd) for fd, _, _ in _STREAMS if _file(fd) is not None}   # owned by this watch for good

    def read():
        return tuple((_file(fd), _closed(getattr(sys, name, None))) for fd, name, _ in _STREAMS)

    def say(old, new) -> list[str]:
        said = []
        for (fd, name, words), (file_was, closed_was), (file_now, closed_now) in zip(_STREAMS, old, new):
            if file_now != file_was:
                said.append(f"closed {words} (os.close({fd}))" if file_now is None
                            else f"pointed {words} elsewhere (os.dup2 onto {fd})")
            if closed_now and not closed_was:
                said.append(f"closed {words} (sys.{name}.close())")
        return said

    def put(old, new) -> None:
        for (fd, name, _), (file_was, closed_was), (file_now, closed_now) in zip(_STREAMS, old, new):
            if file_now != file_was and fd in kept:
                os.dup2(kept[fd], fd)
            if closed_now and not closed_was:
                setattr(sys, name, _reopened(fd, getattr(sys, name, None)))
    return Watch(read, say, put)
