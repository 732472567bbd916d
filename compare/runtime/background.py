"""What a variant leaves running after its launches (compare.runtime.supervisor.running notes it here): the
threads and processes it left are said in the report (`left_behind`), and those that a launch of it alone
started (its import, its checked run), daemon threads included, make it the one to blame when the GPU is found
busy with none of its calls in flight (compare/runtime/device_busy.py)."""
from __future__ import annotations

import threading

from compare.runtime.child_processes import comm, live_children

LEFT_BEHIND: dict[str, list[str]] = {}   # variant -> threads and processes its launches left running
STARTED: dict[str, tuple[list[threading.Thread], set[int]]] = {}   # variant -> what launches of it alone started


def note(names, threads: set, children: set[int]) -> None:
    """After a launch of `names` begun with `threads` alive: what it left running (`children`: its processes)."""
    started = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    said = [f"thread {t.name!r}" for t in started if not t.daemon] + [f"process {comm(pid)} ({pid})"
                                                                      for pid in sorted(children)]
    for name in names if said else ():
        LEFT_BEHIND.setdefault(name, []).extend(said)
    if len(names) == 1 and (started or children):
        kept = STARTED.setdefault(names[0], ([], set()))
        kept[0].extend(started)
        kept[1].update(children)


def starters(names) -> list[str]:
    """Those of `names` whose launches alone started a thread or a process that still runs."""
    return [n for n in names if n in STARTED
            and (any(t.is_alive() for t in STARTED[n][0]) or live_children(STARTED[n][1]))]


def left_behind() -> tuple[str, ...]:
    """One line per variant that left threads or processes running (still alive now), for the report."""
    alive_threads = {f"thread {t.name!r}" for t in threading.enumerate() if t.is_alive() and not t.daemon}
    lines = []
    for name, things in LEFT_BEHIND.items():
        live = [t for t in dict.fromkeys(things)
                if t in alive_threads or (t.startswith("process ") and live_children({int(t[:-1].rsplit("(")[1])}))]
        if live:
            lines.append(f"{name} left {', '.join(live)} running; stopped when kernel-ab ends")
    return tuple(lines)
