"""The section of a check outside the built-in four (compare/checks/check.py): whether a property holds for each
variant in each case, and each variant's verdict against the baseline, decided once when the section is made
(`judged`); the glance, the renderers and the `--fail-on CHECK` gate read them."""
from __future__ import annotations

import dataclasses
import enum
from typing import Optional

from compare.model.results_gates import Gate
from compare.model.states import GateOutcome, Level


class Outcome(enum.Enum):
    """A variant against the baseline on one check, over the cases both ran in."""

    HOLDS = "holds"                 # for both, in every case judged
    INTRODUCED = "introduced"       # it fails where the baseline holds
    SHARED = "shared"               # it fails only where the baseline fails too
    FIXED = "fixed"                 # the baseline fails where it holds, and it fails nowhere else
    NOT_JUDGED = "not judged"       # no case where both ran

    @property
    def level(self) -> Level:
        return {Outcome.HOLDS: Level.OK, Outcome.INTRODUCED: Level.FAIL, Outcome.SHARED: Level.WARN,
                Outcome.FIXED: Level.OK}.get(self, Level.SKIP)


@dataclasses.dataclass(frozen=True)
class CheckRow:
    """One variant in one case: whether the property holds (None: it did not run), and what was seen."""

    variant: str
    case: str
    holds: Optional[bool]
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class CheckVerdict:
    check: str
    baseline: str
    variant: str
    outcome: Outcome
    amount: str = ""                # e.g. "1 of 2 cases"
    where: str = ""                 # the first case it holds on, and how many more


@dataclasses.dataclass(frozen=True)
class CheckSection:
    check: str                      # the --check word
    title: str
    rows: tuple[CheckRow, ...]
    verdicts: tuple[CheckVerdict, ...] = ()
    intro: tuple[str, ...] = ()
    legend: tuple[str, ...] = ()    # what the property is, under its table


def _verdict(check: str, rows: tuple[CheckRow, ...], a: str, b: str) -> CheckVerdict:
    base = {r.case: r.holds for r in rows if r.variant == a}
    mine = {r.case: r.holds for r in rows if r.variant == b}
    both = [(c, base[c], mine[c]) for c in base if base[c] is not None and mine.get(c) is not None]
    for outcome, hits in ((Outcome.INTRODUCED, [c for c, x, y in both if x and not y]),
                          (Outcome.SHARED, [c for c, x, y in both if not x and not y]),
                          (Outcome.FIXED, [c for c, x, y in both if not x and y]),
                          (Outcome.HOLDS, [c for c, _, _ in both])):
        if hits:
            where = hits[0] + (f", {len(hits) - 1} more" if len(hits) > 1 else "")
            return CheckVerdict(check, a, b, outcome, f"{len(hits)} of {len(both)} case{'s' * (len(both) != 1)}",
                                "every case" if outcome == Outcome.HOLDS else where)
    return CheckVerdict(check, a, b, Outcome.NOT_JUDGED, "", "no case where both ran")


def judged(check: str, title: str, rows: tuple[CheckRow, ...], baseline: str, intro: tuple[str, ...] = (),
           legend: tuple[str, ...] = ()) -> CheckSection:
    """The section of `rows`, with the verdict of each other variant against `baseline`."""
    others = [v for v in dict.fromkeys(r.variant for r in rows) if v != baseline]
    return CheckSection(check, title, rows, tuple(_verdict(check, rows, baseline, b) for b in others), intro, legend)


def verdicts_of(report, a: str, b: str) -> list[CheckVerdict]:
    """The verdicts of `b` against `a` in the report's check sections, in their order."""
    return [v for s in report.checks for v in s.verdicts if (v.baseline, v.variant) == (a, b)]


def gates(report, names: tuple[str, ...], accept_unjudged: bool = False) -> tuple[Gate, ...]:
    """`--fail-on CHECK` for each of `names`: failed where a variant introduced a failure of the check, not
    judged where the check has no section or no verdict judged, else passed."""
    out = []
    for name in names:
        flag, found = f"--fail-on {name}", [s for s in report.checks if s.check == name]
        said = [v for s in found for v in s.verdicts]
        broken = [f"{name}: {v.variant} fails where {v.baseline} holds in {v.amount} ({v.where})"
                  for v in said if v.outcome == Outcome.INTRODUCED]
        if broken:
            out.append(Gate(flag, None, GateOutcome.FAILED, tuple(broken)))
        elif not any(v.outcome != Outcome.NOT_JUDGED for v in said):
            missing = f"{name} {'judged no variant' if found else 'was not run'}"
            out.append(Gate(flag, None, GateOutcome.NOT_JUDGED, (missing,), accept_unjudged))
        else:
            out.append(Gate(flag, None, GateOutcome.PASSED, (f"no variant fails {name} where {report.baseline} holds",)))
    return tuple(out)
