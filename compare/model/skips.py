"""Why a check has no section in a report: read from the report's `skipped` lines, which the pipeline writes
as "CHECK: why" or, for a check run once per dtype, "CHECK DTYPE: why" (timing's processes)."""
from __future__ import annotations

NOT_ASKED = "not asked for"


def why_not_run(skipped: tuple[str, ...], check: str) -> str:
    """'not asked for' when no line names `check`; else each line's reason, its dtype first where it has one."""
    said = []
    for line in skipped:
        head, sep, why = line.partition(": ")
        words = head.split()
        if sep and words and words[0] == check and len(words) <= 2:
            said.append(f"{words[1]}: {why}" if len(words) == 2 else why)
    return "; ".join(said) if said else NOT_ASKED
