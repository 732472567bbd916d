"""One variant against the baseline in timing, decided once: the headline's timing line, and what the glance's
rows read: why nothing was timed, the same compiled code in every pass, the comparisons by pass. No verdict
where the two run the same compiled code, in every pass or in one (compare/model/same_code.py): there a
timing difference is noise by construction."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.line import Line, plural as _n
from compare.model.ratios import ratio_span
from compare.model.results import Report
from compare.model.same_code import SameCode, TimingGroup, same_code, timing_groups
from compare.model.skips import why_not_run
from compare.model.states import Level, TimingVerdict


@dataclasses.dataclass(frozen=True)
class PairTiming:
    line: Line
    unmeasured: Optional[str]          # why timing was not measured (said whole here only); None where it was
    same: Optional[SameCode] = None    # both sides run the same compiled code in every pass: no verdict
    groups: tuple[TimingGroup, ...] = ()   # b against a by pass (and dtype), each with that pass's same code


def pair_timing(report: Report, a: str, b: str) -> PairTiming:
    """B against A in the report's timing section."""
    if report.timing is None:
        why = why_not_run(report.skipped, "timing")
        return PairTiming(Line("timing", Level.SKIP, f"timing: not measured: {why}"), why)
    same = same_code(report, a, b)
    if same is not None:
        return PairTiming(Line("timing", Level.INFO, f"timing: no verdict: {same.said}, so a timing difference "
                                                     "between them is noise"), None, same)
    groups = tuple(timing_groups(report, a, b))
    if not groups:
        return PairTiming(Line("timing", Level.SKIP, f"timing: {b} not compared with {a}"), None)
    return PairTiming(_line(groups), None, None, groups)


def _line(groups: tuple[TimingGroup, ...]) -> Line:
    parts, level = [], Level.INFO
    for group in groups:
        comps, judged = group.comparisons, group.judged
        if group.same is not None:
            parts.append(f"{group.key}: no verdict ({', '.join(group.same.kernels)} identical at every stage: "
                         "the same compiled code)")
            continue
        if not judged:
            parts.append(f"{group.key} not compared ({comps[0].reason or 'a variant failed'})")
            level = Level.WARN
            continue
        counts: dict[str, int] = {}
        for c in judged:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        verdicts = ", ".join(f"{v} in {n}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        span = ratio_span(min(c.ratio for c in judged), max(c.ratio for c in judged))
        parts.append(f"{group.key}: {verdicts} of {_n(len(comps), 'shape')} ({span})")
        if TimingVerdict.SLOWER in counts:
            level = Level.WARN
    return Line("timing", level, "timing: " + "; ".join(parts))
