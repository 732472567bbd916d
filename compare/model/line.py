"""One line of the headline: the check it is about, how it reads (its level) and what it says."""
from __future__ import annotations

import dataclasses

from compare.model.states import Level


@dataclasses.dataclass(frozen=True)
class Line:
    topic: str           # "numerics", "timing", "compiled code" or "foul"
    level: Level
    text: str


def plural(count: int, noun: str) -> str:
    """'1 case', '3 cases'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
