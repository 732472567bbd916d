"""One-line summaries of exceptions for reports: what failed, without a traceback."""
from __future__ import annotations


def summarize(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line`, plus the last line where the message has more (Triton's compile errors put
    the source excerpt first and the actual error last)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    if len(lines) > 1:
        text += f" ... {lines[-1]}"
    return text[:limit]
