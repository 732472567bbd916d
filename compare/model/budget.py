"""What a review did not compare by choice of time or name, as typed records its renderers read: the ops its
time budget (`--budget`) left out or stopped, the ops `--op` did not name, and the dtypes it left out by default.
The budget a later run would need is decided here, once, from the pace of the ops compared."""
from __future__ import annotations

import dataclasses
import math

from compare.model.states import Word


class Cut(Word):
    """Why a changed op was not compared."""

    TIME_BUDGET = "time budget"          # its turn came after the budget was spent
    NOT_NAMED = "not named by --op"      # --op named other ops


@dataclasses.dataclass(frozen=True)
class LeftOut:
    op: str          # module:callable (or module:kernel)
    label: str       # the name --op takes for it
    cut: Cut


@dataclasses.dataclass(frozen=True)
class BudgetUse:
    """The review's time budget: its seconds, the seconds the comparisons took, and a budget that would have
    compared the ops left out at the pace of those compared (rounded up to 10 s)."""

    seconds: float
    used: float
    suggested: int

    @classmethod
    def made(cls, seconds: float, used: float, started: int, left: int) -> "BudgetUse":
        """`started`: ops whose comparison began (finished or stopped); `left`: ops the budget left out or stopped."""
        pace = used / started if started else seconds
        return cls(seconds, used, int(math.ceil((max(seconds, used) + pace * left) / 10.0) * 10))

    def line(self, left: LeftOut) -> str:
        return f"{left.label}: not compared: time budget; --budget {self.suggested} or --op {left.label} compares it"

    def hint(self, label: str) -> str:
        return f"--budget {self.suggested} or --op {label} compares it whole"

    def stopped(self, label: str) -> str:
        return f"{label}: stopped when the time budget ({self.seconds:g} s) ran out; what finished is reported; " + \
            self.hint(label)


@dataclasses.dataclass(frozen=True)
class DtypesLeftOut:
    """Dtypes a review compares only when asked (`--dtype`), and where it left them out by default."""

    dtypes: tuple[str, ...]
    where: str                   # "on the CPU"
    asked_with: str              # the --dtype value that adds them ("": none can)

    def line(self) -> str:
        said = f"{', '.join(self.dtypes)} not compared {self.where}"
        return said if not self.asked_with else \
            f"{said}: --dtype {self.asked_with} adds {'it' if len(self.dtypes) == 1 else 'them'}"
