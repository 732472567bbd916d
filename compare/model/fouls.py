"""Fouls: what a variant did to win a comparison rather than compute (a Tensor subclass returned, timed calls
whose outputs do not match its checked ones, work outside the timed stream or after the timer, a time no
memory can give). The checks record each as a `Finding` of its case; here, once, the model decides what a
foul costs: the variant gets no accuracy and no timing verdict, and every gate fails on it. Renderers read
`fouls_of` and `foul_lines`; nothing reads a finding's words to decide anything."""
from __future__ import annotations

import dataclasses

from compare.model.states import TimingVerdict, Word


class Foul(Word):
    """The kinds of foul, each value the words the headline uses."""

    SUBCLASS = "returned a Tensor subclass"
    TIMED_MISMATCH = "its timed calls returned outputs that do not match its checked ones"
    FRESH_SLOWER = "its calls on fresh inputs were slower than its timed ones"
    OFF_STREAM = "work outside the timed stream"
    THREAD = "a thread it started was still running when its call returned"
    BEYOND_COPY = "faster than copy bandwidth allows"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One foul of one variant in one case, with the figures that show it (one line)."""

    variant: str
    foul: Foul
    detail: str = ""     # e.g. "0.4 ms for 2.1 GB at 4.2 TB/s"; how it was seen, never parsed


def fouls_of(report, name: str) -> tuple[Finding, ...]:
    """Every foul of `name` in the report's numerics and timing cases, the first of each kind (with the
    number of cases it was seen in folded into its detail)."""
    seen: dict[Foul, list[tuple[str, Finding]]] = {}
    for where, case in _cases(report):
        for f in getattr(case, "fouls", ()):
            if f.variant == name:
                seen.setdefault(f.foul, []).append((where, f))
    out = []
    for foul, items in seen.items():
        where, first = items[0]
        more = f"; in {len(items)} cases" if len(items) > 1 else ""
        out.append(Finding(name, foul, f"{where}: {first.detail}{more}" if first.detail else f"{where}{more}"))
    return tuple(out)


def _cases(report):
    if report.numerics is not None:
        for c in report.numerics.cases:
            yield f"numerics {c.direction} {c.shape} {c.dtype} {c.input_kind}", c
    if report.timing is not None:
        for c in report.timing.cases:
            yield f"timing {c.mode} {c.shape} {c.dtype}".rstrip(), c


def said(findings: tuple[Finding, ...]) -> str:
    """'returned a Tensor subclass (numerics forward ...: LazyY); work outside the timed stream (...)'."""
    return "; ".join(f"{f.foul.value} ({f.detail})" if f.detail else f.foul.value for f in findings)


def fouled(report) -> dict[str, tuple[Finding, ...]]:
    """Variant -> its fouls, for every loaded variant that has any."""
    found = {v.name: fouls_of(report, v.name) for v in report.variants}
    return {n: f for n, f in found.items() if f}


def foul_lines(report) -> list[str]:
    """The gates' lines: one per fouled variant (every gate fails on a foul)."""
    return [f"foul: {name}: {said(f)}" for name, f in fouled(report).items()]


def withheld(comparison, findings):
    """A fouled side's timing comparison (a TimingComparison), as the report keeps it: no verdict, the foul
    as the reason (its ratio and interval stay, as measured)."""
    return dataclasses.replace(comparison, verdict=TimingVerdict.NA, reason=f"foul: {said(tuple(findings))}")
