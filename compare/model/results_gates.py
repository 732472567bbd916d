"""The exit-code gates of the result model (compare.model.results re-exports them): each gate asked for and how
it ended, decided once by compare/model/gates.py before any renderer runs, and read by every one of them."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.states import GateOutcome


@dataclasses.dataclass(frozen=True)
class Gate:
    """One gate asked for on the command line, e.g. --fail-if-slower 2."""

    name: str                         # the flag: "--fail-on-numerics" or "--fail-if-slower"
    threshold: Optional[float]        # the flag's value (percent for --fail-if-slower); None for a switch
    outcome: GateOutcome              # NOT_JUDGED: its evidence is missing
    lines: tuple[str, ...] = ()       # what failed it, why it could not be judged, or what it passed on
    accepted: bool = False            # a "not judged" accepted by --accept-unjudged: it does not fail the run

    @property
    def fails(self) -> bool:
        return self.outcome == GateOutcome.FAILED or (self.outcome == GateOutcome.NOT_JUDGED and not self.accepted)
