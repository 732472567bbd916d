"""kernel-ab's exit codes (the table in docs/reports-and-gates.md) and how an internal error ends a run:
one line on stderr naming the error and the file holding its traceback, exit 3, never 1 (a gate's code).
Stdlib only: it must work when a dependency of kernel-ab is what is missing."""
from __future__ import annotations

import enum
import os
import sys
import tempfile
import traceback

DEBUG_ENV = "KERNEL_AB_DEBUG"   # =1: the traceback is printed after the line instead of written to a file


class ExitCode(enum.IntEnum):
    OK = 0               # every gate asked for holds
    GATE_FAILED = 1      # a gate failed or could not be judged; nothing left to compare
    USAGE = 2            # bad input: one line on stderr
    INTERNAL = 3         # kernel-ab's own error or a missing dependency: one line, the traceback in a file
    WRITE_FAILED = 74    # a report file could not be written (sysexits' EX_IOERR)
    POISONED = 75        # a variant poisoned the process (a fatal device error, a tampered process): nothing
                         # more runs in it; the supervisor reruns without that variant (sysexits' EX_TEMPFAIL)
    SIGHUP = 129
    SIGINT = 130
    SIGPIPE = 141        # the reader of the output went away; quiet
    SIGTERM = 143


def signal_name(number: int) -> str:
    """"SIGKILL" for 9; "signal 99" for a number no signal has."""
    import signal
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def after_report(unwritten: int, gates=(), failed: bool = False, otherwise: int = ExitCode.OK) -> int:
    """The exit code of a run whose report is out (compare, review): a report file that could not be written,
    else one of `gates` (compare.model.results.Gate) failing the run, or `failed` (a failure the command counts
    as a gate's: review's replay failures and unjudged changes), else `otherwise`."""
    failed = failed or any(g.fails for g in gates)
    return int(ExitCode.WRITE_FAILED if unwritten else ExitCode.GATE_FAILED if failed else otherwise)


def _what(exc: BaseException) -> str:
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return (f"missing dependency: no module named {exc.name!r} "
                "(reinstall kernel-ab: python3 -m pip install kernel-ab, or -e . in a checkout)")
    if isinstance(exc, ImportError):
        return f"missing dependency: {exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _where(exc: BaseException) -> str:
    """'file:line' of the innermost frame of the traceback, or '' when it has none."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def internal_error(exc: BaseException) -> int:
    """Say an unexpected exception in one line on stderr, keep its traceback, and give ExitCode.INTERNAL."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    where = _where(exc)
    head = f"kernel-ab: internal error: {_what(exc)}" + (f" (at {where})" if where else "")
    if os.environ.get(DEBUG_ENV) == "1":
        print(head, file=sys.stderr)
        sys.stderr.write(text)
        return ExitCode.INTERNAL
    try:
        fd, path = tempfile.mkstemp(prefix="kernel-ab-traceback-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        kept = f"traceback in {path}"
    except OSError as write_error:   # the line still comes out; the traceback is lost, and that is said
        kept = f"traceback not kept ({write_error.strerror or write_error}); {DEBUG_ENV}=1 prints it"
    print(f"{head}; {kept}", file=sys.stderr)
    return ExitCode.INTERNAL
