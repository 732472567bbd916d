"""Waits on what is outside kernel-ab under a time limit: a family package's import (its module code may
block: a lock, a network mount, `input()`), a file that may be a FIFO no one writes to. The work runs in a
daemon thread; past the limit the caller gets TimedOut and goes on (the thread is left behind, blocked: the
process ends without it)."""
from __future__ import annotations

import os
import threading

LIMIT_ENV = "KERNEL_AB_WAIT_LIMIT"   # seconds; the limits below are the defaults
IMPORT_LIMIT_S = 120.0   # a family package's import, torch and triton imported by it included
READ_LIMIT_S = 30.0      # a report file read: a regular file takes milliseconds


class TimedOut(Exception):
    """The work did not finish within the limit; the message says what and how long."""


def limit(default: float) -> float:
    text = os.environ.get(LIMIT_ENV, "")
    try:
        return float(text) if text.strip() else default
    except ValueError:
        return default


def within(seconds: float, work, what: str):
    """`work()`'s result or its exception, or TimedOut when it has not finished in `seconds`."""
    done: dict = {}

    def run():
        try:
            done["result"] = work()
        except BaseException as exc:   # noqa: BLE001 - raised again in the caller's thread
            done["error"] = exc
    thread = threading.Thread(target=run, name=f"kernel-ab: {what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimedOut(f"{what} did not finish within {seconds:g} s")
    if "error" in done:
        raise done["error"]
    return done["result"]
