"""What a report does not hold, and why: one record for each check, or part of a check, that did not run,
made where that was decided (the plan, the pipeline, the IR step, the timing processes) and read by the
headline, the gates and the renderers."""
from __future__ import annotations

import dataclasses

from compare.model.jsonform import unwritten

NOT_ASKED = "not asked for"


@dataclasses.dataclass(frozen=True)
class Skip:
    """`check` (numerics, backward, timing, ir) or its `part` not run: a dtype or passes of timing, a kernel
    of the IR; "" for the whole check."""

    check: str
    why: str
    part: str = ""
    interrupted: bool = False   # not run because a stop signal ended the run first (Report.interrupted says how far)
    short: str = unwritten("")   # `why` in a few words, where it says more: what a gate's line names (short_why)

    def __str__(self) -> str:
        return f"{self.check} {self.part}: {self.why}" if self.part else f"{self.check}: {self.why}"


def why_not_run(skipped: tuple[Skip, ...], check: str) -> str:
    """'not asked for' when nothing of `check` was skipped; else each skip's reason, its part first."""
    said = [f"{s.part}: {s.why}" if s.part else s.why for s in skipped if s.check == check]
    return "; ".join(said) if said else NOT_ASKED


def short_why(skipped: tuple[Skip, ...], check: str) -> str:
    """As `why_not_run`, for a line with no room for detail: each skip's reason up to the first that has a short
    form, which ends it (said short)."""
    said = []
    for s in (s for s in skipped if s.check == check):
        said.append(f"{s.part}: {s.short or s.why}" if s.part else s.short or s.why)
        if s.short:
            break
    return "; ".join(said) if said else NOT_ASKED


INTERRUPTED = "interrupted before it ran"
_CHECK_WORDS = {"numerics": "numerics", "backward": "backward", "timing": "timing", "ir": "compiled code"}


@dataclasses.dataclass(frozen=True)
class Interruption:
    """A stop signal ended the run: `done` of the `planned` numerics cases finished (the report holds them, and
    the progress counted them), and the checks asked for in `not_run` never started."""

    stop: str                       # what stopped it, e.g. "interrupted (Ctrl-C)"
    done: int
    planned: int
    not_run: tuple[str, ...] = ()   # numerics, backward, timing, ir
    steps: int = 0                  # the units the progress counted to: the cases and the other checks' (0: none shown)

    def text(self) -> str:
        """'interrupted (Ctrl-C) after 3 of 12 cases (progress counted 13 steps: the 12 cases and 1 more for the
        other checks): timing and compiled code not run'."""
        words = [_CHECK_WORDS.get(c, c) for c in self.not_run]
        left = " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 2 else words)
        counted = (f" (progress counted {self.steps} steps: the {self.planned} cases and {self.steps - self.planned} "
                   "more for the other checks)") if self.steps > self.planned > 0 else ""
        return f"{self.stop} after {self.done} of {self.planned} cases{counted}" + (f": {left} not run" if left else "")

    def skips(self) -> tuple[Skip, ...]:
        """A record for each check that never ran, so that every row asked for still says why it is empty."""
        return tuple(Skip(check, INTERRUPTED, interrupted=True) for check in self.not_run)
