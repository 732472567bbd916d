"""The processes this one started, read from /proc (Linux; elsewhere none are seen): for the launch guard
(compare/runtime/supervisor.py), which notes what a variant's launch left running, and the supervisor, which
ends what a run left. With prctl, the one call that ties a process's life to its parent's and its orphans'."""
from __future__ import annotations

import contextlib
import os
import signal

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(`option`, `value`); False where there is none (elsewhere)."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value)
    except (OSError, AttributeError):
        return False
    return True


def adopt_orphans() -> None:
    """Make this process its descendants' subreaper (Linux; elsewhere nothing): a process a variant double-forks
    out of its session becomes this one's child when its parent ends, where `escaped` sees it."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def child_pids() -> set[int]:
    pids = set()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                pids.update(int(p) for p in f.read().split())
    return pids


def _stat(pid) -> tuple[str, list[str]]:
    """(name, the fields after it) of /proc/PID/stat: fields[0] the state ("Z" a zombie), [2] the process
    group, [3] the session; ("", []) where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            name, _, rest = f.read().partition("(")[2].rpartition(")")
    except OSError:
        return "", []
    return name, rest.split()


def live_children(pids: set[int]) -> set[int]:
    return {pid for pid in pids if (fields := _stat(pid)[1]) and fields[0] != "Z"}


def group_members(pgid: int) -> list[str]:
    """The live processes of a process group, as 'NAME (PID)' (zombies, already ended, are not counted)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        name, fields = _stat(entry)
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(f"{name} ({entry})")
    return found


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def escaped(pids: set[int]) -> list[str]:
    """Of `pids`, those in a session of their own (setsid: out of reach of the run's process group), killed."""
    ours, said = os.getsid(0), []
    for pid in sorted(pids):
        fields = _stat(pid)[1]
        if len(fields) > 3 and int(fields[3]) != ours:
            said.append(f"started process {comm(pid)} ({pid}) in a session of its own (setsid)")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return said
