"""The processes this one started, read from /proc (Linux; elsewhere none are seen): for the launch guard
(compare/runtime/supervisor.py), which notes what a variant's launch left running, and the supervisor, which
ends what a run left."""
from __future__ import annotations

import contextlib
import os
import signal


def adopt_orphans() -> None:
    """Make this process its descendants' subreaper (Linux; elsewhere nothing): a process a variant double-forks
    out of its session becomes this one's child when its parent ends, where `escaped` sees it."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1)   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def child_pids() -> set[int]:
    pids = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                pids.update(int(p) for p in f.read().split())
    except OSError:
        pass
    return pids


def live_children(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().rpartition(")")[2].split()[0] != "Z":
                    alive.add(pid)
        except OSError:
            pass
    return alive


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def session_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rpartition(")")[2].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def escaped(pids: set[int]) -> list[str]:
    """Of `pids`, those in a session of their own (setsid: out of reach of the run's process group), killed."""
    ours, said = os.getsid(0), []
    for pid in sorted(pids):
        if session_of(pid) not in (None, ours):
            said.append(f"started process {comm(pid)} ({pid}) in a session of its own (setsid)")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return said
