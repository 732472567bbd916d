"""One-line summaries of exceptions for reports: what failed, without a traceback."""
from __future__ import annotations

# Triton wraps the real error: a compile error's message starts with `at LINE:COL:` and the source,
# the interpreter's repeats the cause's repr; the summary names the cause first
_WRAPPERS = ("CompilationError", "InterpreterError")


def message(exc: BaseException) -> str:
    """`str(exc)`, or what says it could not be had: a variant's exception whose `__str__` raises (or returns
    no str) is still that variant's failure, reported in one line."""
    try:
        text = str(exc)
    except Exception as inner:  # noqa: BLE001 - any error of a variant's __str__
        return f"(its message could not be printed: its __str__ raised {type(inner).__name__})"
    return text if type(text) is str else "(its message could not be printed)"


def _one(exc: BaseException) -> str:
    lines = [line.strip() for line in message(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    if len(lines) > 1:
        text += f" ... {lines[-1]}"
    return text


def summarize(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line`, plus the last line where the message has more (Triton's compile errors put
    the source excerpt first and the actual error last). For Triton's wrappers, the cause first:
    `NameError: name 'x' is not defined (CompilationError at 12:51)`."""
    cause = exc.__cause__
    if type(exc).__name__ in _WRAPPERS and cause is not None and cause is not exc:
        first = next((line.strip() for line in message(exc).splitlines() if line.strip()), "")
        where = f" {first.rstrip(':')}" if first.startswith("at ") else ""
        return f"{_one(cause)} ({type(exc).__name__}{where})"[:limit]
    return _one(exc)[:limit]


class UsageError(ValueError):
    """Bad input from the user: the message is one line saying what was wrong and what would be right (exit 2).
    Defined here, beneath every layer that refuses a value; compare.command_line.usage checks the values."""
