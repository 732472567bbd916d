"""Each variant timed apart with the baseline, in a fresh process of its own: where a dtype's timing process ended
while several variants ran together (the interleaved rounds, where no record names one), one variant must not take
down the others' measurement (docs/threat-model.md). A pair whose process ends too names its variant; the pairs
that time are merged into one section, each comparison decided in its own process against its own A/A control."""
from __future__ import annotations

import dataclasses

from compare.comparison.timing_culprit import in_order
from compare.model.reruns import Culprit
from compare.model.results import TimingCase, TimingSection

APART = "timed apart: left out of the process that timed another variant with the baseline"


def suspects(variants: tuple[str, ...], baseline: str, left_out: tuple[Culprit, ...]) -> tuple[str, ...]:
    """The variants to time apart: every one but the baseline and those left out already."""
    gone = {c.name for c in left_out}
    return tuple(v for v in variants if v != baseline and v not in gone)


def others(each: tuple[str, ...], keep: str) -> list[Culprit]:
    """What a pair's process leaves out besides the earlier culprits: every suspect but `keep`."""
    return [Culprit(v, APART) for v in each if v != keep]


def _key(case: TimingCase) -> tuple[str, str, str]:
    return case.shape, case.mode, case.dtype


def _joined(case: TimingCase, name: str, own: TimingCase | None, order: tuple[str, ...], note: str) -> TimingCase:
    """`case` with `name`'s records taken from `own` (its pair's case; None: its pair did not time this case)."""
    variants = tuple(v for v in case.variants if v.variant != name)
    comparisons = tuple(c for c in case.comparisons if c.variant != name)
    fouls = case.fouls
    if own is not None:
        variants += tuple(v for v in own.variants if v.variant == name)
        comparisons += tuple(c for c in own.comparisons if c.variant == name)
        fouls += tuple(f for f in own.fouls if f.variant == name)
    return dataclasses.replace(case, variants=in_order(variants, order), fouls=fouls,
                               comparisons=in_order(comparisons, order),
                               note="; ".join(n for n in (case.note, note) if n))


def merged_apart(pairs: dict[str, TimingSection], order: tuple[str, ...], note: str) -> TimingSection:
    """One section of the pairs' sections (variant -> the section of its pair, at least one): the first pair's
    cases, with every other variant's records from its own pair's case of the same shape, mode and dtype."""
    names = list(pairs)
    first = pairs[names[0]]
    cases = []
    for case in first.cases:
        case = _joined(case, names[0], case, order, note)
        for name in names[1:]:
            own = next((c for c in pairs[name].cases if _key(c) == _key(case)), None)
            case = _joined(case, name, own, order, "")
        cases.append(case)
    return dataclasses.replace(first, cases=tuple(cases))


def without(section: TimingSection, names: list[str], order: tuple[str, ...]) -> TimingSection:
    """`section` with no record of `names` (variants whose pair did not time: their culprit records say why)."""
    cases = section.cases
    for name in names:
        cases = tuple(_joined(c, name, None, order, "") for c in cases)
    return dataclasses.replace(section, cases=cases)
