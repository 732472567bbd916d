"""The supervisor's side of variant isolation (the child's: compare/runtime/supervisor.py, whose docstring says
the protocol). Standard library only: it starts before anything heavy is imported."""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from compare.model.reruns import Blamed, Culprit, Ending, Ran, run_excluding
from compare.model.scratch import SCRATCH_ENV
from compare.model.states import Crash, Failure
from compare.model.task_answers import CrashedVariants
from compare.runtime.exit_codes import ExitCode, signal_name
from compare.runtime.child_processes import (PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, adopt_orphans, child_pids,
                                              comm, group_members, live_children, prctl)
from compare.runtime import status_records
from compare.runtime.run_context import EXCLUDED_ENV, NO_TIMING_ENV, STARTED_ENV, STATUS_ENV, TOKEN_ENV
from compare.runtime.supervisor import STOP_CODES, STOP_WORDS, GRACE_S, POISONED_EXIT, TAMPER, BUSY

_POLL_S = 0.1
AFTER_DONE_S = 30.0   # after its report, the child's time to end (its atexit handlers, its workers) before it is stopped


def _start_child() -> None:
    """In the child, before exec: the stop signals stay blocked until its handlers are in place (it
    unblocks them: supervisor.install_stop_handlers), and it gets SIGTERM if the supervisor dies. It leads
    a process group of its own (os.setsid), which the supervisor signals and, at the end, empties."""
    os.setsid()
    signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_CODES))
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    # a process a variant double-forks out of the group becomes the child's own (not init's) when its
    # parent ends: the child sees it (compare.runtime.child_processes.escaped), and at the end the supervisor does
    adopt_orphans()


def _kill_group(pgid: int, signum: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class _Run:
    """One child run: started, watched for hangs and stop signals, ended with its records read. Its records
    count only with the run's token (a variant that writes the status file forges none); after its report
    the child has AFTER_DONE_S to end; what it leaves (in its group, or adopted by this process from a
    session of its own) is killed."""

    def __init__(self, command: list[str], env: dict, stop: list[int]):
        self.stop = stop
        fd, self.status = tempfile.mkstemp(prefix="kernel-ab-status-")
        os.close(fd)
        self.token = secrets.token_hex(16)
        env = {**env, STATUS_ENV: self.status, TOKEN_ENV: self.token}
        self.before = child_pids()
        self.proc = subprocess.Popen(command, env=env, preexec_fn=_start_child)
        self.hung: dict = {}
        self.leftover: list[str] = []
        self.lingered = False   # it did not end within AFTER_DONE_S of its report and was stopped
        self.cut_short = ""     # why it was killed after a stop signal (GRACE_S passed, or a second stop came)
        self._ended_at: float | None = None

    def wait(self) -> int:
        passed, killed_at = 0, None
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                rc = self.proc.wait(timeout=_POLL_S)
                break
            now = time.monotonic()
            if len(self.stop) > passed:   # the first stop is passed on; a second one does not wait for the report
                if passed:
                    self.cut_short = "a second stop signal came before the report was written"
                _kill_group(self.proc.pid, self.stop[-1] if not passed else signal.SIGKILL)
                killed_at, passed = (now + GRACE_S if not passed else now), len(self.stop)
            elif killed_at is not None and now > killed_at:
                self.cut_short = self.cut_short or f"it had not ended {GRACE_S:g} s after the stop signal"
                _kill_group(self.proc.pid)
            elif not self.stop and not self.hung and not self.lingered:
                self._check(now)
        self.leftover = _lingering(self.proc.pid)   # whatever the child left in its group
        if self.leftover:
            _kill_group(self.proc.pid)
        self.leftover = list(dict.fromkeys(self.leftover + _end_adopted(child_pids() - self.before)))
        return rc

    def _check(self, now: float) -> None:
        records = [r for r in self.records() if "forged" not in r]
        if hung := status_records.hung(records):
            self.hung = hung
            _kill_group(self.proc.pid)
        # a timing process's BUSY record ends that process, not the child (which times the dtype again without it)
        if self._ended_at is None and any("done" in r or (r.get("error") and r.get("failure") != BUSY)
                                          for r in records):
            self._ended_at = now
        if self._ended_at is not None and now - self._ended_at > AFTER_DONE_S:
            self.lingered = True
            _kill_group(self.proc.pid)

    def records(self) -> list[dict]:
        return status_records.read(self.status, self.token)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.status)


def _lingering(pgid: int, wait_s: float = 1.0) -> list[str]:
    """The group's live members once those that end with the child (kernel-ab's warm workers:
    compare.runtime.warm_worker.die_with_parent) had `wait_s` to go."""
    deadline = time.monotonic() + wait_s
    while (found := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _end_adopted(pids: set[int]) -> list[str]:
    """Kill and reap the processes this one adopted (as child subreaper) from a run: 'NAME (PID)' each."""
    said = [f"{comm(pid)} ({pid})" for pid in sorted(live_children(pids))]   # a zombie is only reaped
    for pid in sorted(pids):
        with contextlib.suppress(OSError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return said


def _why(rc: int, last: dict, hung: dict) -> str:
    """How the child's end is said of the variant it was running ("" for a deliberate end)."""
    if hung:
        return f"{Crash.HUNG} within {hung.get('limit', 0):g} s (--variant-timeout) and was stopped"
    if rc == POISONED_EXIT and last.get("error"):
        return last["error"]
    if rc == -signal.SIGKILL:
        return f"{Crash.CRASHED} (SIGKILL: killed from outside, as the out-of-memory killer does)"
    if rc < 0:
        return f"{Crash.CRASHED} ({signal_name(-rc)})"
    return f"{Crash.ENDED} (exit code {rc}, no report)"


def _culprit(records: list[dict], rc: int, ended: int | None) -> tuple[list[str], str, str] | None:
    """(variants, what they did, while running what) for an outcome the child's code did not decide: a
    record without the run's token (forged), a stop signal the supervisor never sent (a variant's own), or
    a tampered process that was not the child itself (a timing worker's, whose end the child outlived)."""
    forged = next((r for r in records if "forged" in r and (r["after"].get("variants"))), None)
    if forged is not None:
        what = "a 'done'" if isinstance(forged["forged"], dict) and "done" in forged["forged"] else "a record"
        return (forged["after"]["variants"], f"forged kernel-ab's status ({what} without the run's token)",
                forged["after"].get("what", ""))
    forked = next((r for r in records if "forked" in r and r.get("variants")), None)
    if forked is not None:
        return (forked["variants"], "forked the process (os.fork) and its copy went on into kernel-ab's code",
                forked.get("what", ""))
    tamper = next((r for r in records if r.get("failure") == TAMPER and r.get("variants")), None)
    if tamper is not None and ended is not None:
        return tamper["variants"], tamper["error"], tamper.get("what", "")
    stopped = next((r for r in records if "stopped" in r and r.get("variants")), None)
    if stopped is not None and (ended in STOP_CODES.values() or rc in STOP_CODES.values()
                                or -rc in STOP_CODES):
        return stopped["variants"], f"sent the process {signal_name(stopped['stopped'])}", stopped.get("what", "")
    return None


def failed_by(records: list[dict], rc: int, hung: dict, ended: int | None = None,
              own_stop: str = "") -> CrashedVariants:
    """Who ended a process that wrote `records` (read with its token) and exited with `rc` (a supervised child,
    without a report or with one a variant decided: `_culprit`; a task worker, `ended` None): the variants
    named (none: it ended outside any launch), why, what they ran, the failure kind. `own_stop`: the stop
    signal that ended it came to no other process of the run (supervisor.own_stop): the variant sent it."""
    found = _culprit(records, rc, ended)
    if found is not None:
        return CrashedVariants(tuple(found[0]), found[1], found[2], Failure.TAMPER)
    last = status_records.ended_in(records, rc == POISONED_EXIT)
    if own_stop and last.get("variants"):
        return CrashedVariants(tuple(last["variants"]), f"sent the process {own_stop}", last.get("what", ""),
                               Failure.TAMPER)
    return CrashedVariants(tuple(last.get("variants") or ()), _why(rc, last, hung), last.get("what", ""),
                           Failure(last.get("failure", "")))


def without_culprit(names, why: str, where: str, kind: str = "") -> Culprit:
    """The one policy for a run a variant ended (here, and for a worker: compare.processes.distributed):
    the one variant that was running, to run again without; timing (a Culprit named "") when several
    were (a timing process's), to run again without timing. Says which, on stderr."""
    if len(names) == 1:
        reason = f"{why} while running {where}"
        print(f"kernel-ab: variant {names[0]} {reason}; running again without it", file=sys.stderr)
        return Culprit(names[0], reason, kind)
    no_timing = f"the process {why} while timing {where} ({', '.join(names)}); left out"
    print(f"kernel-ab: {no_timing}; running again without timing", file=sys.stderr)
    return Culprit("", no_timing)


def _outside_launches(records: list[dict], why: str) -> int:
    """Say a child's end outside any variant's launch: while family packages were imported, bad input (exit
    2); elsewhere kernel-ab's own (or what it runs on) end, never a gate's failure (exit 3)."""
    families = next((r["families"] for r in reversed(records) if "families" in r and "forged" not in r), "")
    if families:
        print(f"kernel-ab: error: the import of {families} {why}; fix the package that does it or leave its folder "
              "out", file=sys.stderr)
        return ExitCode.USAGE
    print(f"kernel-ab: error: the comparison {why} outside any variant's launch; no report", file=sys.stderr)
    return ExitCode.INTERNAL


def _empty(folder: str) -> None:
    """Remove what a child left in its scratch folder (its trees, where it ended before removing them)."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _after_report(rc: int, ended: int) -> int:
    """The exit code of a child that wrote its report with code `ended` and then ended with `rc`: a crash or
    another exit code as it ended (a finalizer, a thread of a variant's) is said, and fails the run."""
    if rc == ended:
        return ended
    if rc < 0:
        how, code = f"was ended by {signal_name(-rc)} as it exited", 128 - rc
    else:
        how, code = f"exited with code {rc}", rc
    print(f"kernel-ab: the report was written (exit code {ended}), but the process then {how} (a finalizer or "
          f"thread a variant left?); exit code {ended or code}", file=sys.stderr)
    return ended or code


def _stopped(signum: int, rc: int, ended: int | None, cut_short: str = "") -> int:
    """A stop signal's exit code, said here where the child did not say it: it ended without a word (no report;
    `cut_short`: why it was killed), or it had finished, its report written, before the stop reached it."""
    words, code = STOP_WORDS[signum], STOP_CODES[signum]
    if ended is None and cut_short:
        print(f"kernel-ab: {words}; the run was killed ({cut_short}); no report", file=sys.stderr)
    elif ended is None and rc not in STOP_CODES.values():
        print(f"kernel-ab: {words}; no report", file=sys.stderr)
    elif ended is not None and ended not in STOP_CODES.values():
        print(f"kernel-ab: {words} after the run had finished (exit code {ended}, its output written); exit code "
              f"{code}", file=sys.stderr)
    return code


def _attempt(command: list[str], culprits: tuple[Culprit, ...], stop: list[int], started: str,
             scratch: str) -> Ran[int | None] | Blamed:
    """One run of the child without `culprits`: its exit code (None: a stop signal came before it started),
    or the culprit that ended it."""
    if stop:
        return Ran(None)
    _empty(scratch)
    excluded = [[c.name, c.reason, c.kind] if c.kind else [c.name, c.reason] for c in culprits if c.name]
    env = {**os.environ, EXCLUDED_ENV: json.dumps(excluded), STARTED_ENV: started, SCRATCH_ENV: scratch}
    no_timing = next((c.reason for c in reversed(culprits) if not c.name), "")
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
        return Ran(_stopped(stop[0], rc, ended, run.cut_short))
    if ended is not None and _culprit(records, rc, ended) is None:   # the report came out: its code stands
        if run.lingered:
            print(f"kernel-ab: the process did not end within {AFTER_DONE_S:g} s after its report "
                  "(an atexit handler?) and was stopped", file=sys.stderr)
            return Ran(ended)
        return Ran(_after_report(rc, ended))
    failed = failed_by(records, rc, run.hung, ended)
    if not failed.variants:
        return Ran(_outside_launches(records, failed.why))
    culprit = without_culprit(list(failed.variants), failed.why, failed.what, failed.failure.value)
    return Blamed(culprit, culprit.name)


def supervise(command: list[str], stop: list[int] | None = None) -> int:
    """Run `command` (a kernel-ab child) until it ends deliberately; rerun without each variant that ended,
    hung or tampered with its process (or with the run's outcome: a forged status, a stop it sent itself).
    The exit code is the child's, or 130/143/129 when a stop signal came (`stop` may hold one that came
    before this was called)."""
    started = repr(time.time())   # a rerun keeps the first run's clock: a time budget counts from here
    stop = stop if stop is not None else []
    previous = {s: signal.signal(s, lambda signum, _frame: stop.append(signum)) for s in STOP_CODES}
    adopt_orphans()   # what a run double-forks out of its group comes here, to be ended
    scratch = tempfile.mkdtemp(prefix="kernel-ab-run-")   # the child's temporary trees: emptied after each run
    try:
        reruns = run_excluding(lambda culprits: _attempt(command, culprits, stop, started, scratch))
        if reruns.ending is Ending.RAN and reruns.result is not None:
            return reruns.result
        if stop:
            print(f"kernel-ab: {STOP_WORDS[stop[0]]}; no report", file=sys.stderr)
            return STOP_CODES[stop[0]]
        print("kernel-ab: error: too many variants ended the process; no report", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        prctl(PR_SET_CHILD_SUBREAPER, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)
