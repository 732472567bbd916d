"""A worker process kept warm across requests (a review's timing processes, its compiles): torch, Triton and the
reviewed library imported once, then one request at a time, each a JSON line on its stdin, answered in files the
request names, with short words ("ready", "done") said on a pipe of its own. A worker that ends (a crash,
os._exit) is seen so (`word` gives None) and the next request starts a fresh one: a request that kills its
process costs itself alone. Standard library only: the workers import this before anything heavy."""
from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

_POLL_S = 0.5   # how often a wait for a word looks whether the worker ended (a fork of it may hold the pipe)

# a check's workers answering a request now, and whether the check ending them is stopping: its thread must
# start no other meanwhile (`stop_answering`); the process's state, so it lives at the process boundary
_ANSWERING: set = set()
_STOPPING = threading.Event()


def refuse_while_stopping(what: str) -> None:
    """RuntimeError while a check's workers are being stopped: `what` is not started."""
    if _STOPPING.is_set():
        raise RuntimeError(f"{what} not started: the run is stopping")


@contextlib.contextmanager
def answering(proc: subprocess.Popen):
    """`proc` answers a request for the block: `stop_answering` ends it."""
    _ANSWERING.add(proc)
    try:
        yield proc
    finally:
        _ANSWERING.discard(proc)


def stop_answering(ended: "threading.Thread") -> None:
    """End every worker answering a request now and start no other until `ended` (the thread that sent them
    the requests) ends, given 30 s; one still running then keeps the refusal, as it may ask again."""
    _STOPPING.set()
    for proc in list(_ANSWERING):
        proc.kill()
    ended.join(timeout=30)
    if not ended.is_alive():
        _STOPPING.clear()


class WorkerEnd(NamedTuple):
    """A worker's end: its exit code, and the last line it wrote for the request it ended in."""

    exit_code: int
    last_line: str


class WarmWorker:
    """One worker process at a time, running `command` plus the number of the pipe it says its words on;
    started by the first request and again after it ended. `starts`: how many were started. Its error output
    goes to a file in `folder` (a failure's last line reads it), or with None where this process's goes."""

    def __init__(self, command: list[str], folder: Path | None, name: str, env: dict | None = None, cwd=None):
        self.command, self.folder, self.name, self.env, self.cwd = command, folder, name, env, cwd
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self._words: int | None = None
        self._buffer = b""
        self._err = None
        self._err_from = 0   # where the current request's error output starts

    def _start(self) -> None:
        self._drop()
        words_r, words_w = os.pipe()
        if self.folder is not None:
            self._err = open(Path(self.folder, f"{self.name}.{self.starts}.stderr"), "w+", encoding="utf-8",
                             errors="replace")
        try:
            self.proc = subprocess.Popen([*self.command, str(words_w)], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=self._err, env=self.env, cwd=self.cwd,
                                         pass_fds=(words_w,))
        finally:
            os.close(words_w)
        self._words, self._buffer = words_r, b""
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, message: dict) -> None:
        """Hand the worker a request, starting one first where none is running."""
        if not self.alive():
            self._start()
        self._err_from = os.fstat(self._err.fileno()).st_size if self._err is not None else 0
        self.tell(message)

    def tell(self, message: dict) -> None:
        """A line for the running worker (a request's go); one that ended meanwhile is seen by `word`."""
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()

    def word(self, timeout: float | None = None) -> str | None:
        """The worker's next word; "" when `timeout` seconds passed first; None when it ended (`failure`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if self._words is None:
                return None
            wait = _POLL_S if deadline is None else min(_POLL_S, max(deadline - time.monotonic(), 0.0))
            ready, _, _ = select.select([self._words], [], [], wait)
            if ready:
                chunk = os.read(self._words, 1 << 16)   # a word may be a task's whole answer
                if not chunk:
                    return None
                self._buffer += chunk
            elif self.proc.poll() is not None:
                return None
            elif deadline is not None and time.monotonic() >= deadline:
                return ""
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").strip()

    def failure(self, wait_s: float = 5.0) -> "WorkerEnd":
        """How a worker that ended did (its pipe closes just before its exit: it is given `wait_s`); one still
        running then is ended first."""
        if self.alive():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait_s)
        self.kill()
        rc = self.proc.returncode if self.proc is not None else -1
        if self._err is None:   # none kept where it went to this process's error output
            return WorkerEnd(rc, "not started" if self.folder is not None or self.proc is None else "")
        self._err.seek(self._err_from)
        return WorkerEnd(rc, (self._err.read().strip().splitlines() or ["no output"])[-1][:300])

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def close(self, wait_s: float = 5.0) -> None:
        """Its stdin closed, the worker ends by itself (killed after `wait_s`)."""
        if self.alive():
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.proc.stdin.close()
                self.proc.wait(timeout=wait_s)
        self.kill()
        self._drop()

    def _drop(self) -> None:
        if self._words is not None:
            os.close(self._words)
            self._words = None
        if self._err is not None:
            self._err.close()
            self._err = None
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def die_with_parent() -> None:
    """In a worker, first thing: it is killed when the process that started it ends (a variant that crashed
    it), so no idle worker outlives it to be taken for a process that variant left behind. Linux; elsewhere
    the worker ends when its stdin does."""
    import signal
    from compare.runtime.child_processes import PR_SET_PDEATHSIG, prctl
    parent = os.getppid()
    if not prctl(PR_SET_PDEATHSIG, signal.SIGKILL):
        return
    if os.getppid() != parent:   # it ended before the request took hold
        os._exit(1)


class Serving:
    """The worker's side: the requests on stdin, one JSON line each, and its words on the pipe `fd`."""

    def __init__(self, fd: int):
        self._out = os.fdopen(fd, "wb", buffering=0)

    @staticmethod
    def next() -> dict | None:
        """The next line's message; None when the parent closed stdin (the worker ends)."""
        while True:
            line = sys.stdin.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)

    def say(self, word: str) -> None:
        self._out.write(word.encode() + b"\n")
