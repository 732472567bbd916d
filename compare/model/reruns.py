"""Run again without the culprit: the one loop behind every rerun that leaves out what ended a run (the
supervisor's child, compare.processes.supervision; a distributed run, compare.processes.distributed; a dtype's
timing process, compare.comparison.timing_run). Standard library only: the supervisor imports it first."""
from __future__ import annotations

import dataclasses
import enum
from typing import Callable, Generic, Optional, TypeVar, Union

MAX_RERUNS = 7   # runs after the first: a comparison runs 8 times at the most

R = TypeVar("R")
C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class Culprit:
    """What a run is done again without: a variant (`name`) that ended it, and why (`reason`), with the failure
    kind of its exclusion (`kind`: "" a crash). `name` "" leaves out timing instead: several variants ran
    together when it ended, so no one is to blame (compare.processes.supervision.without_culprit)."""

    name: str
    reason: str
    kind: str = ""


@dataclasses.dataclass(frozen=True)
class Ran(Generic[R]):
    """A run that came to its result (a report, an exit code, why there is none): no rerun."""

    result: R


@dataclasses.dataclass(frozen=True)
class Blamed(Generic[R, C]):
    """A run that `culprit` ended: done again without it, unless it was left out already (its `name` says
    which it is) or too many were; `otherwise` is the result then."""

    culprit: C
    name: str
    otherwise: Optional[R] = None


class Ending(enum.Enum):
    RAN = "ran"                   # the last run came to its result
    TOO_MANY = "too many"         # the last run named one more culprit after max_reruns were left out
    NAMED_AGAIN = "named again"   # the last run named a culprit already left out: without it changed nothing


@dataclasses.dataclass(frozen=True)
class Reruns(Generic[R, C]):
    """How the runs ended: the last one's result (Ran's, or Blamed's `otherwise`), the culprits left out in
    order, and the one the last run named where no rerun came (`last`)."""

    ending: Ending
    result: Optional[R]
    culprits: tuple[C, ...]
    last: Optional[C] = None


def run_excluding(attempt: Callable[[tuple[C, ...]], Union[Ran[R], Blamed[R, C]]],
                  max_reruns: int = MAX_RERUNS) -> Reruns[R, C]:
    """`attempt` run with no culprit, then again without each one it names, at most `max_reruns` times."""
    culprits: list[C] = []
    names: set[str] = set()
    while True:
        said = attempt(tuple(culprits))
        if isinstance(said, Ran):
            return Reruns(Ending.RAN, said.result, tuple(culprits))
        if said.name in names or len(culprits) >= max_reruns:
            ending = Ending.NAMED_AGAIN if said.name in names else Ending.TOO_MANY
            return Reruns(ending, said.otherwise, tuple(culprits), said.culprit)
        culprits.append(said.culprit)
        names.add(said.name)
