"""The supervisor's side of variant isolation (the child's: compare/running/supervisor.py, whose docstring says
the protocol). Standard library only: it starts before anything heavy is imported."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from compare.running.exit_codes import ExitCode
from compare.running.supervisor import (_STOP_CODES, _STOP_WORDS, CRASHES, EXCLUDED_ENV, GRACE_S, NO_TIMING_ENV,
                                POISONED_EXIT, STATUS_ENV)

_MAX_RERUNS = 8
_POLL_S = 0.1


def _records(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _start_child() -> None:
    """In the child, before exec: the stop signals stay blocked until its handlers are in place (it
    unblocks them: supervisor.install_stop_handlers), and it gets SIGTERM if the supervisor dies. It leads
    a process group of its own (os.setsid), which the supervisor signals and, at the end, empties."""
    os.setsid()
    signal.pthread_sigmask(signal.SIG_BLOCK, set(_STOP_CODES))
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def _kill_group(pgid: int, signum: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_members(pgid: int) -> list[str]:
    """The live processes of a process group, as 'NAME (PID)' (zombies, already ended, are not counted)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        name, _, rest = stat.partition("(")[2].rpartition(")")
        fields = rest.split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(f"{name} ({entry})")
    return found


class _Run:
    """One child run: started, watched for hangs and stop signals, ended with its records read."""

    def __init__(self, command: list[str], env: dict, stop: list[int]):
        self.stop = stop
        fd, self.status = tempfile.mkstemp(prefix="kernel-ab-status-")
        os.close(fd)
        env = {**env, STATUS_ENV: self.status}
        self.proc = subprocess.Popen(command, env=env, preexec_fn=_start_child)
        self.hung: dict = {}
        self.leftover: list[str] = []

    def wait(self) -> int:
        passed, killed_at = None, None
        while True:
            try:
                rc = self.proc.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if self.stop and passed != self.stop[-1]:
                passed = self.stop[-1]
                _kill_group(self.proc.pid, passed)
                killed_at = now + GRACE_S
            elif killed_at is not None and now > killed_at:
                _kill_group(self.proc.pid)
            elif not self.stop and not self.hung:
                self._check_hang()
        self.leftover = _group_members(self.proc.pid)   # whatever the child left in its group
        if self.leftover:
            _kill_group(self.proc.pid)
        return rc

    def _check_hang(self) -> None:
        records = _records(self.status)
        last = records[-1] if records else {}
        if last.get("variants") and "since" in last and time.time() - last["since"] > last.get("limit", 1e18):
            self.hung = last
            _kill_group(self.proc.pid)

    def records(self) -> list[dict]:
        return _records(self.status)

    def close(self) -> None:
        try:
            os.unlink(self.status)
        except OSError:
            pass


def _why(rc: int, last: dict, hung: dict) -> str:
    """How the child's end is said of the variant it was running ("" for a deliberate end)."""
    if hung:
        return f"{CRASHES[3]} within {hung.get('limit', 0):g} s (--variant-timeout) and was stopped"
    if rc == POISONED_EXIT and last.get("error"):
        return last["error"]
    if rc == -signal.SIGKILL:
        return f"{CRASHES[0]} (SIGKILL: killed from outside, as the out-of-memory killer does)"
    if rc < 0:
        return f"{CRASHES[0]} ({_signal_name(-rc)})"
    return f"{CRASHES[2]} (exit code {rc}, no report)"


def supervise(command: list[str], stop: list[int] | None = None) -> int:
    """Run `command` (a kernel-ab child) until it ends deliberately; rerun without each variant that ended
    or hung its process. The exit code is the child's, or 130/143/129 when a stop signal came (`stop`
    may hold one that came before this was called)."""
    excluded_now: list[list[str]] = []
    no_timing = ""
    stop = stop if stop is not None else []

    def on_signal(signum, _frame):
        stop.append(signum)
    previous = {s: signal.signal(s, on_signal) for s in _STOP_CODES}
    try:
        for _ in range(_MAX_RERUNS):
            if stop:
                break
            env = {**os.environ, EXCLUDED_ENV: json.dumps(excluded_now)}
            if no_timing:
                env[NO_TIMING_ENV] = no_timing
            run = _Run(command, env, stop)
            try:
                rc = run.wait()
                records = run.records()
            finally:
                run.close()
            ended = next((r["done"] for r in reversed(records) if "done" in r), None)
            if run.leftover and not stop:   # after a stop signal, ending what is left is the stop's own cleanup
                print(f"kernel-ab: stopped what the run left running: {', '.join(run.leftover)}", file=sys.stderr)
            if stop:
                if ended is None and rc not in _STOP_CODES.values():   # the child could not say it: say it here
                    print(f"kernel-ab: {_STOP_WORDS[stop[0]]}; no report", file=sys.stderr)
                return _STOP_CODES[stop[0]]
            if ended is not None:   # the report (or a usage error) came out: its code stands
                if rc != ended:
                    print(f"kernel-ab: the process then ended with {_why(rc, {}, {})}", file=sys.stderr)
                return ended
            last = next((r for r in reversed(records) if "variants" in r), {})
            if rc == POISONED_EXIT:   # the launch that poisoned the context said so before unwinding
                last = next((r for r in reversed(records) if r.get("error")), last)
            why = _why(rc, last, run.hung)
            names = last.get("variants") or []
            if not names:
                print(f"kernel-ab: error: the comparison {why} outside any variant's launch; no report",
                      file=sys.stderr)
                return ExitCode.INTERNAL   # not a gate's failure: kernel-ab (or what it runs on) ended
            where = last.get("what", "")
            if len(names) == 1:
                reason = f"{why} while running {where}"
                print(f"kernel-ab: variant {names[0]} {reason}; running again without it", file=sys.stderr)
                excluded_now.append([names[0], reason])
            else:
                no_timing = f"the process {why} while timing {where} ({', '.join(names)}); left out"
                print(f"kernel-ab: {no_timing}; running again without timing", file=sys.stderr)
        if stop:
            print(f"kernel-ab: {_STOP_WORDS[stop[0]]}; no report", file=sys.stderr)
            return _STOP_CODES[stop[0]]
        print("kernel-ab: error: too many variants ended the process; no report", file=sys.stderr)
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
