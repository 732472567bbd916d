"""Variant isolation: a variant that takes its process down is reported as failed, and the rest still
come out.

A crash cannot be caught in the process it kills (a segfault in Triton's interpreter, an abort) or
leaves nothing usable behind (an illegal address poisons the CUDA context for every later launch).
So the `kernel-ab` command (and `python main.py`) runs `compare` in a child process under a small
supervisor that imports nothing heavy. Before each launch the child writes which variant it is about
to run, and on what, to a status file (`running`); a launch that returns clears it. When the child
dies by a signal, or exits with `POISONED_EXIT` after a fatal device error, the supervisor reads the
variant it was running, says so in one line, and runs the comparison again without it; that variant
is then reported as failed with what is known (the signal or the device error, and the case).

Cost: one extra Python start (the supervisor, standard library only) per run, and one small
unbuffered write per launch in numerics; a crash costs one rerun of the work before it. Timing's
calls are never wrapped (no cost in what is measured): a crash while timing names the case's
variants together, and the rerun leaves timing out with that reason.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile

STATUS_ENV = "KERNEL_AB_STATUS_FILE"     # set in the child: where it says what it is running
EXCLUDED_ENV = "KERNEL_AB_EXCLUDED"      # set in the child: [[variant, reason], ...] to report as failed
NO_TIMING_ENV = "KERNEL_AB_NO_TIMING"    # set in the child: why timing is left out
ISOLATE_ENV = "KERNEL_AB_ISOLATE"        # "0": run in one process (no supervisor)
POISONED_EXIT = 75                       # the child's exit code after a fatal device error
_FATAL_DEVICE_ERRORS = ("illegal memory access", "illegal address", "unspecified launch failure",
                        "misaligned address", "illegal instruction", "device-side assert", "launch timed out")
_MAX_RERUNS = 8
# how a crashed variant's error starts (the report says "variant X crashed the process (SIGSEGV) while ...")
CRASHES = ("crashed the process", "poisoned the CUDA context")
_NOW = {"what": ""}    # what the running launch is doing, for poisoned()


class ContextPoisoned(BaseException):
    """A fatal device error: nothing more can run in this process. A BaseException so that no
    `except Exception` that reports one variant's error swallows it."""

    def __init__(self, variant: str, error: str):
        super().__init__(f"{variant}: {error}")
        self.variant, self.error = variant, error


def is_fatal(exc: BaseException) -> bool:
    """A device error after which the CUDA context is unusable (every later launch would fail)."""
    text = str(exc).lower()
    return type(exc).__name__ == "AcceleratorError" or ("cuda" in text and any(e in text for e in _FATAL_DEVICE_ERRORS))


def _write(line: str) -> None:
    path = os.environ.get(STATUS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:   # closed at once: the line survives a crash
            f.write(line + "\n")


@contextlib.contextmanager
def running(names: tuple[str, ...] | list[str], what: str):
    """Say, for a supervisor, that `names` (usually one variant) run `what` for the length of the block."""
    _NOW["what"] = what
    if not os.environ.get(STATUS_ENV):
        yield
        return
    _write(json.dumps({"variants": list(names), "what": what}))
    yield
    _write(json.dumps({"variants": [], "what": ""}))


def excluded() -> list[tuple[str, str]]:
    """The (variant, reason) pairs a supervisor asked this child to report as failed, not run."""
    try:
        return [(str(n), str(r)) for n, r in json.loads(os.environ.get(EXCLUDED_ENV) or "[]")]
    except (ValueError, TypeError):
        return []


def timing_left_out() -> str:
    return os.environ.get(NO_TIMING_ENV, "")


def _last_running(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        return json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def supervise(command: list[str]) -> int:
    """Run `command` (a kernel-ab child) until it ends without a crash; rerun without each crasher."""
    excluded_now: list[list[str]] = []
    no_timing = ""
    child: list[subprocess.Popen] = []

    def forward(signum, _frame):  # a CI timeout's SIGTERM reaches the child, which cleans up and exits
        if child and child[0].poll() is None:
            child[0].send_signal(signum)

    # Ctrl-C reaches the child from the terminal itself (one process group); a second SIGINT from here
    # would interrupt the child's cleanup
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, forward),
                signal.SIGINT: signal.signal(signal.SIGINT, lambda *_: None)}   # not SIG_IGN: the child would inherit it
    try:
        for _ in range(_MAX_RERUNS):
            fd, status = tempfile.mkstemp(prefix="kernel-ab-status-")
            os.close(fd)
            try:
                env = {**os.environ, STATUS_ENV: status, EXCLUDED_ENV: json.dumps(excluded_now)}
                if no_timing:
                    env[NO_TIMING_ENV] = no_timing
                child[:] = [subprocess.Popen(command, env=env)]
                rc = child[0].wait()
                last = _last_running(status)
            finally:
                os.unlink(status)
            if rc == POISONED_EXIT and last.get("variants"):
                why = last.get("error") or "a fatal device error"
            elif rc < 0 and -rc not in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL, signal.SIGHUP):
                why = f"{CRASHES[0]} ({_signal_name(rc)})"
            else:
                return 130 if rc == -signal.SIGINT else 128 - rc if rc < 0 else rc
            names = last.get("variants") or []
            if not names:
                print(f"kernel-ab: error: the comparison {why} outside any variant's launch; no report",
                      file=sys.stderr)
                return 1
            where = last.get("what", "")
            if len(names) == 1:
                reason = f"{why} while running {where}"
                print(f"kernel-ab: variant {names[0]} {reason}; running again without it", file=sys.stderr)
                excluded_now.append([names[0], reason])
            else:
                no_timing = f"the process {why} while timing {where} ({', '.join(names)}); left out"
                print(f"kernel-ab: {no_timing}; running again without timing", file=sys.stderr)
        print("kernel-ab: error: too many variants crashed the process; no report", file=sys.stderr)
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def poisoned(variant: str, error: str) -> None:
    """Record, for the supervisor, the fatal device error `variant` caused (then raise ContextPoisoned)."""
    _write(json.dumps({"variants": [variant], "what": _NOW["what"], "error": error}))
    raise ContextPoisoned(variant, error)
