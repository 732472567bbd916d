"""Variant isolation, the child's side (the supervisor's: compare/processes/supervision.py): whatever a variant does
to its process is that variant's result, and the rest of the report still comes out. Around every launch
the child writes which variants run, since when and for how long at most (`running`); a deliberate end
writes `done`. A death, hang or `POISONED_EXIT` makes the supervisor name the variant and run again
without it; SIGINT, SIGTERM and SIGHUP unwind the child and exit 130, 143 or 129."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time

from compare.model.errors import message, summarize
from compare.model.states import Crash, Failure
from compare.runtime import status_records
from compare.runtime.run_context import channel
from compare.runtime.background import left_behind  # noqa: F401 (re-exported)
from compare.runtime.background import note as _note_left
from compare.runtime.child_processes import child_pids, escaped, live_children
from compare.runtime.exit_codes import ExitCode

ISOLATE_ENV = "KERNEL_AB_ISOLATE"        # "0": run in one process (no supervisor)
POISONED_EXIT = ExitCode.POISONED        # the child's exit code after a fatal device error (or a tampered process)
TAMPER = Failure.TAMPER   # a record's failure kind: the variant changed process-wide state (compare.runtime.process_guard)
BUSY = Failure.BUSY       # a record's failure kind: the GPU was busy with none of the variant's calls in flight
KEEPS_BUSY = "keeps the GPU busy between its calls"
DEFAULT_LIMIT_S = 300.0                  # --variant-timeout: one launch (a variant's case) at most this long
GRACE_S = 30.0   # after passing a stop on, the child's time to write the report of what finished (a loaded machine)
_FATAL_DEVICE_ERRORS = ("illegal memory access", "illegal address", "unspecified launch failure",
                        "misaligned address", "illegal instruction", "device-side assert", "launch timed out")
STOP_CODES = {signal.SIGINT: ExitCode.SIGINT, signal.SIGTERM: ExitCode.SIGTERM, signal.SIGHUP: ExitCode.SIGHUP}
STOP_WORDS = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "terminated (SIGTERM)",
               signal.SIGHUP: "hung up (SIGHUP)"}
# what the running launch is doing, whose it is (for poisoned()) and the record `running` wrote (for `alone`)
_NOW: dict = {"what": "", "names": (), "record": {}}
_LIMIT: list[float] = []   # --variant-timeout, set once by the run (`set_limit`): no variant's environment moves it


class ContextPoisoned(BaseException):
    """A fatal device error: nothing more can run in this process. A BaseException so that no
    `except Exception` that reports one variant's error swallows it."""

    def __init__(self, variant: str, error: str, kind: str = "", what: str = ""):
        super().__init__(f"{variant}: {error}")
        self.variant, self.error, self.kind = variant, error, kind   # kind: TAMPER, or "" (a device error)
        self.what = what   # what the variant was running


class Stopped(BaseException):
    """A signal the user (or a CI timeout) sent: the run unwinds, removes its files and says one line.
    Unlike a KeyboardInterrupt that a variant's own code raises, it is never a variant's result."""

    def __init__(self, signum: int):
        super().__init__(STOP_WORDS[signum])
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return STOP_CODES[self.signum]


class OutOfTime(Stopped):
    """The run's own time budget ran out (compare.runtime.deadline): it unwinds as a stop does, the report
    of what finished kept, and is never a variant's result; the run goes on to its report."""

    def __init__(self, said: str):
        BaseException.__init__(self, said)
        self.signum = signal.SIGALRM

    @property
    def exit_code(self) -> int:
        return ExitCode.INTERNAL   # caught by the command that set the budget: reaching here is kernel-ab's error


_DEFERRED: dict[int, float] = {}   # signal -> when it was first put off (it came inside an import)
_DEFERRED_IN: dict[int, tuple] = {}   # signal -> (the variants whose launch it came in, what they ran)
STOP_REQUESTED: list[int] = []
_HANDLING: list[bool] = []   # non-empty while this process's stop handlers are installed
_RUNS: list[bool] = []       # one entry per install: which run put a signal off


def _ask_again(signum: int, run: int) -> None:
    if _HANDLING and run == len(_RUNS):   # only while the run that put it off is still going
        os.kill(os.getpid(), signum)


def _raise_pending() -> None:
    """At the end of a launch (an import of a variant's file included): a stop put off there is raised now."""
    pending = pending_stop()
    if pending is not None and _HANDLING and threading.current_thread() is threading.main_thread():
        _on_stop_signal(pending, None)   # the stop signal received, if any: an error while unwinding from it is the stop


def inside_import(frame, code=None) -> bool:
    """Whether `frame`, or a frame that called it, runs an import (or runs `code`)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib") or frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _on_stop_signal(signum, frame):
    # never raised inside an import (a half-imported C extension refuses to load again, and an exception
    # through C++ aborts) or an output file's write (its temporary file left, or it written but not said):
    # asked again shortly, when that is done
    first = _DEFERRED.setdefault(signum, time.monotonic())
    _DEFERRED_IN.setdefault(signum, (_NOW["names"], _NOW["what"]))   # whose launch it came in (raised after it?)
    writing = getattr(getattr(sys.modules.get("compare.command_line.output_files"), "write_atomic", None), "__code__", None)
    if time.monotonic() - first < 2.0 and inside_import(frame, writing):   # at most 2 s: then wherever it is
        again = threading.Timer(0.05, _ask_again, (signum, len(_RUNS)))
        again.daemon = True
        again.start()
        return
    for s in STOP_CODES:   # once: a second signal must not interrupt the cleanup
        signal.signal(s, signal.SIG_IGN)
    came_in, what = (_NOW["names"], _NOW["what"]) if _NOW["names"] else _DEFERRED_IN.get(signum, ((), ""))
    if came_in:   # the supervisor tells a stop it did not send (the variant's own) by this record
        _write({"stopped": signum, "variants": list(came_in), "what": what})
    STOP_REQUESTED.append(signum)
    raise Stopped(signum)


def install_stop_handlers(early: list[int] | tuple = ()) -> dict:
    """SIGINT, SIGTERM, SIGHUP raise `Stopped` (main thread only); signals the supervisor held blocked
    while this process started are delivered now, and one that came `early` is raised. Returns the
    handlers they replace (for `restore_handlers`)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {s: signal.signal(s, _on_stop_signal) for s in STOP_CODES}
    _DEFERRED.clear()
    _DEFERRED_IN.clear()
    STOP_REQUESTED.clear()
    _HANDLING[:] = [True]
    _RUNS.append(True)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_CODES))
    if early:
        _on_stop_signal(early[0], None)
    return previous


def own_stop(exit_code: int) -> str:
    """The stop signal that ended a worker of this run with `exit_code` where none came to this process (raised,
    or put off): the variant it ran sent it ("SIGTERM"); "" where it was no stop signal, or the run's own."""
    if -exit_code not in STOP_CODES or STOP_REQUESTED or _DEFERRED:
        return ""
    return signal.Signals(-exit_code).name


def pending_stop() -> int | None:
    """A stop signal put off (it came inside an import) and not raised before the run ended, if any."""
    return next((s for s in _DEFERRED if s not in STOP_REQUESTED), None)


def restore_handlers(previous: dict) -> None:
    _HANDLING.clear()
    for s, handler in previous.items():
        signal.signal(s, handler)


def is_variant_fault(exc: BaseException) -> bool:
    """Whether `exc`, raised while a variant ran, is that variant's result (SystemExit, a KeyboardInterrupt
    its code raised, any error) rather than the user's signal or a poisoned context, which end the run."""
    return not isinstance(exc, (Stopped, ContextPoisoned))


def is_fatal(exc: BaseException) -> bool:
    """A device error after which the CUDA context is unusable (every later launch would fail)."""
    text = message(exc).lower()
    return type(exc).__name__ == "AcceleratorError" or ("cuda" in text and any(e in text for e in _FATAL_DEVICE_ERRORS))


def variant_fault(name: str, exc: BaseException) -> str:
    """The one line that reports `exc`, raised while variant `name` ran, as its failure; `exc` itself raised
    again where it is not the variant's (`is_variant_fault`), and a fatal device error ends the process as
    `poisoned` by `name` (the supervisor reruns without it). Call it from the `except BaseException` of a launch."""
    if not is_variant_fault(exc):
        raise exc
    if is_fatal(exc):   # no later launch can run: the next variant would be blamed for this one's error
        poisoned(name, f"{Crash.POISONED} ({summarize(exc)})")
    return summarize(exc)


def _write(record: dict) -> None:
    ch = channel()
    if ch.status:
        if ch.token:
            record = {**record, "token": ch.token}
        with open(ch.status, "a", encoding="utf-8") as f:   # closed at once: the line survives a crash
            f.write(json.dumps(record) + "\n")


def set_limit(seconds: float) -> None:
    """--variant-timeout for this process; a process it starts is handed the limit as an argument (a timing
    worker's command line, a task's field), never through the environment."""
    _LIMIT[:] = [float(seconds)]


def limit_s() -> float:
    """The time limit of one launch in this process (--variant-timeout: `set_limit`, else the default)."""
    return _LIMIT[0] if _LIMIT else DEFAULT_LIMIT_S


def snapshot():
    """The process-wide state before a launch of variant code (compare.runtime.process_guard; None while
    no guard is on), for `check` after it."""
    from compare.runtime import process_guard
    channel()   # taken out of os.environ before the snapshot: that is kernel-ab's own change
    guard = process_guard.active()
    return (guard, guard.take()) if guard is not None else None


def check(before, names, what: str, more: list[str] = ()) -> None:
    """After a launch of `names`' code: what it changed since `before` (and `more` it did) is put back,
    and ends the process as tampered with (`tampered`)."""
    changed = (before[0].undo(before[1]) if before is not None else []) + list(more)
    if changed:
        tampered(names, "; ".join(changed), what)


@contextlib.contextmanager
def running(names: tuple[str, ...] | list[str], what: str, launches: int = 1, extra_s: float = 0.0,
            importing: bool = False):
    """Say, for a supervisor, that `names` (usually one variant) run `what` for the length of the block,
    allowed `launches` times the launch limit and `extra_s` more; note threads and processes it leaves.
    What the block changed in the process's shared state (compare.runtime.process_guard) is put back and
    ends the process as poisoned (`tampered`): the supervisor runs again without the variant. `importing`:
    the block imports a library, whose habits are its own (compare.runtime.import_acts)."""
    before = snapshot()
    pid = os.getpid()
    threads = set(threading.enumerate())
    children = child_pids()
    record = {"variants": list(names), "what": what, "since": time.time(), "limit": limit_s() * launches + extra_s}
    _NOW.update(what=what, names=tuple(names), record=record)
    _write(record)
    error: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        error = exc
        raise
    finally:
        if os.getpid() != pid:   # a copy the variant forked, back in kernel-ab's code: it says so and ends
            _forked(names, what)
        _NOW.update(what="", names=(), record={})
        none_running()
        new_children = live_children(child_pids() - children)
        _note_left(tuple(names), threads, new_children)
        if error is None or is_variant_fault(error):   # a stop or a poisoned context ends the run anyway
            if importing and before is not None:
                from compare.runtime import import_acts
                import_acts.record(names, what, before[0].library_acts(before[1]))
            check(before, names, what, escaped(new_children))
    _raise_pending()


@contextlib.contextmanager
def alone(name: str, what: str):
    """Inside a `running` block of several variants, say that `name` alone runs `what` (its warm-up, its graph
    capture) for the length of this block, within the outer block's time: a crash here is its own. The outer
    record is written back at the end, so one after it names them all again. One record in and one out:
    never inside timed rounds."""
    outer, pid = dict(_NOW), os.getpid()
    _NOW.update(what=what, names=(name,))
    _write({**outer["record"], "variants": [name], "what": what})
    try:
        yield
    finally:
        _NOW.update(outer)
        if os.getpid() == pid:   # a forked copy says so in `running` (`_forked`), and nothing else
            _write(outer["record"] or {"variants": [], "what": ""})


def none_running() -> None:
    """Record that no launch runs now (at the end of one; after a timing process that shared the status file
    ended inside one of its own)."""
    _write({"variants": [], "what": ""})


def status_mark() -> int:
    """Where the run's status file ends now (0 without one): `last_launch` reads what is written after it."""
    status = channel().status
    try:
        return os.path.getsize(status) if status else 0
    except OSError:
        return 0


def last_launch(since: int) -> status_records.Launch | None:
    """The launch a process sharing this one's status file (a timing process) ended in, read from its records
    after `since` (`status_mark`) that carry the run's token; None unsupervised or without one."""
    ch = channel()
    if not ch.status:
        return None
    return status_records.last_launch(status_records.read(ch.status, ch.token or None, since))


def _forked(names, what: str) -> None:
    """In a copy of this process that a variant's os.fork made and let return: tell the supervisor whose it
    was, and end at once (no report, no atexit handler, no buffered output written twice)."""
    try:
        _write({"forked": os.getpid(), "variants": list(names), "what": what})
    finally:
        os._exit(POISONED_EXIT)   # its parent reads no code of it: the record says it


@contextlib.contextmanager
def importing_families(what: str):
    """Say, for a supervisor, that the family packages of `what` are imported while the block runs: a
    package whose import ends the process (os._exit, a crash) is then bad input, named by where it is."""
    _write({"families": what})
    try:
        yield
    finally:
        _write({"families": ""})


def done(code: int) -> None:
    """Record that the child ends deliberately (a report written, or a usage error said) with `code`."""
    _write({"done": code})


def poisoned(variant: str, error: str) -> None:
    """Record, for the supervisor, the fatal device error `variant` caused (then raise ContextPoisoned)."""
    _write({"variants": [variant], "what": _NOW["what"], "error": error})
    raise ContextPoisoned(variant, error, what=_NOW["what"])


def tampered(names, changes: str, what: str) -> None:
    """Record, for the supervisor, what `names` (one variant, or those timed together) changed in the process
    while running `what`, with the failure kind TAMPER (then raise ContextPoisoned: the run ends, and the
    supervisor runs it again without them)."""
    _write({"variants": list(names), "what": what, "error": changes, "failure": TAMPER})
    raise ContextPoisoned(", ".join(names), changes, TAMPER, what)


def keeps_busy(name: str, what: str, seen: str) -> None:
    """Record, for the process that started this timing process, that `name` keeps the GPU busy between its
    calls (`seen`: how that showed while running `what`), with the failure kind BUSY; then raise ContextPoisoned:
    this process ends, and the dtype is timed again without it (compare/comparison/timing_culprit.py)."""
    error = f"{KEEPS_BUSY} ({seen})"
    _write({"variants": [name], "what": what, "error": error, "failure": BUSY})
    raise ContextPoisoned(name, error, BUSY, what)
