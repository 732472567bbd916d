"""What a report does not hold, and why: one record for each check, or part of a check, that did not run,
made where that was decided (the plan, the pipeline, the IR step, the timing processes) and read by the
headline, the gates and the renderers."""
from __future__ import annotations

import dataclasses

NOT_ASKED = "not asked for"


@dataclasses.dataclass(frozen=True)
class Skip:
    """`check` (numerics, backward, timing, ir) or its `part` not run: a dtype or passes of timing, a kernel
    of the IR; "" for the whole check."""

    check: str
    why: str
    part: str = ""

    def __str__(self) -> str:
        return f"{self.check} {self.part}: {self.why}" if self.part else f"{self.check}: {self.why}"


def why_not_run(skipped: tuple[Skip, ...], check: str) -> str:
    """'not asked for' when nothing of `check` was skipped; else each skip's reason, its part first."""
    said = [f"{s.part}: {s.why}" if s.part else s.why for s in skipped if s.check == check]
    return "; ".join(said) if said else NOT_ASKED
