"""One variant against the baseline in timing, decided once: the headline's timing line, and what the glance's
rows read: why nothing was timed, the same compiled code in every pass, the comparisons by pass, the dtypes
not timed though others were (a process that ended, a stop). No verdict
where the two run the same compiled code, in every pass or in one (compare/model/same_code.py): there a
timing difference is noise by construction."""
from __future__ import annotations

import collections
import dataclasses
from typing import Optional

from compare.model.line import Line, plural as _n
from compare.model.ratios import ratio_span
from compare.model.results import Report
from compare.model.same_code import SameCode, TimingGroup, same_code, timing_groups
from compare.model.skips import Skip, why_not_run
from compare.model.states import Level, TimingVerdict


@dataclasses.dataclass(frozen=True)
class PairTiming:
    line: Line
    unmeasured: Optional[str]          # why timing was not measured (said whole here only); None where it was
    same: Optional[SameCode] = None    # both sides run the same compiled code in every pass: no verdict
    groups: tuple[TimingGroup, ...] = ()   # b against a by pass (and dtype), each with that pass's same code
    untimed: tuple[Skip, ...] = ()         # the dtypes asked for and not timed, though others were


def untimed_dtypes(report: Report) -> tuple[Skip, ...]:
    """Why each dtype the report asked for has no timing where others have (its process ended, a stop)."""
    asked = report.dtype.split(",")
    return tuple(s for s in report.skipped if s.check == "timing" and s.part in asked) if report.timing else ()


def not_timed(skip: Skip) -> str:
    """'bfloat16 not timed (its process ended)'."""
    return f"{skip.part} not timed ({skip.short or skip.why})"


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
    untimed = untimed_dtypes(report)
    return PairTiming(_line(groups, untimed), None, None, groups, untimed)


def _line(groups: tuple[TimingGroup, ...], untimed: tuple[Skip, ...] = ()) -> Line:
    parts, level = [], Level.WARN if untimed else Level.INFO
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
        counts = collections.Counter(c.verdict for c in judged)
        verdicts = ", ".join(f"{v} in {n}" for v, n in counts.most_common())
        span = ratio_span(min(c.ratio for c in judged), max(c.ratio for c in judged))
        parts.append(f"{group.key}: {verdicts} of {_n(len(comps), 'shape')} ({span})")
        if TimingVerdict.SLOWER in counts:
            level = Level.WARN
    return Line("timing", level, "timing: " + "; ".join(parts + [not_timed(s) for s in untimed]))
