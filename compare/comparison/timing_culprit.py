"""A dtype's timing process (compare/comparison/timing_run.py) that ended. Where one variant ran alone (its warm-up,
launch cost, graph capture, audit: compare.runtime.supervisor.alone), or kernel-ab ended it for keeping the GPU busy
(compare.runtime.device_busy), that launch's record names it: the dtype is timed again in a fresh process without it,
its section saying why. Where several ran together (the interleaved rounds), none is blamed: each variant is then
timed apart with the baseline in a fresh process of its own, so one cannot take down the others' measurement."""
from __future__ import annotations

import dataclasses
import json
import signal

from compare.model.reruns import Culprit
from compare.model.results import TimingCase, TimingComparison, TimingSection, TimingVariant
from compare.model.states import Crash, TimingStatus, TimingVerdict
from compare.runtime import run_context, supervisor
from compare.runtime.status_records import Launch


def _exit(exit_code: int) -> str:
    if exit_code >= 0:
        return f"exit code {exit_code}"
    try:
        return f"exit code {exit_code}, {signal.Signals(-exit_code).name}"
    except ValueError:
        return f"exit code {exit_code}"


def blamed(launch: Launch | None, exit_code: int, dtype: str, baseline: str) -> Culprit | None:
    """The variant to time `dtype` again without: the one the launch its process ended in (`launch`) names
    alone, unless it is the baseline (nothing to time against); else None. One left out already is not
    again (compare.model.reruns)."""
    if launch is None or len(launch.names) != 1 or launch.names[0] == baseline:
        return None
    if launch.failure == supervisor.BUSY:   # kernel-ab ended that process: its exit code says nothing of the variant
        return Culprit(launch.names[0], f"{launch.error}, seen in the process that timed {dtype} at {launch.what}; "
                                        f"{dtype} was timed again without it", launch.failure)
    said = (f"{launch.error} in the process that timed {dtype}" if launch.error else
            f"{Crash.CRASHED if exit_code < 0 else Crash.ENDED} that timed {dtype}")
    return Culprit(launch.names[0], f"{said} ({_exit(exit_code)}) while running {launch.what or 'it'}; {dtype} was "
                                    "timed again without it", launch.failure)


def not_timed_why(why: str, launch: Launch | None, baseline: str, earlier: list[Culprit]) -> str:
    """Why a dtype is not timed: `why` its process ended, who was running then, and the culprits left out before."""
    names = launch.names if launch is not None else ()
    if len(names) > 1:
        why += f" while running {launch.what} with {', '.join(names)} timed together (no one of them to blame)"
    elif names == (baseline,):
        why += f" while the baseline {baseline} ran alone ({launch.what}): nothing to time the others against"
    elif names:
        why += f" while {names[0]} ran alone ({launch.what}), after {len(earlier)} variants had ended it"
    return "; ".join([why] + [f"before, {c.name} {c.reason}" for c in earlier])


def excluding(culprits: list[Culprit]) -> str:
    """run_context.EXCLUDED_ENV for a fresh timing process: what the supervisor excluded, and `culprits`."""
    earlier = [[c.name, c.reason, c.kind] for c in run_context.culprits()]
    return json.dumps(earlier + [[c.name, c.reason, c.kind] for c in culprits])


def with_culprits(section: TimingSection, culprits: list[Culprit], order: tuple[str, ...]) -> TimingSection:
    """`section` (timed without `culprits`) with each culprit in every case as not timed, and not compared,
    saying why; in `order` (the comparison's variants, the baseline first)."""
    if not culprits:
        return section
    return dataclasses.replace(section, cases=tuple(_with_culprits(c, culprits, order) for c in section.cases))


def in_order(records, order: tuple[str, ...]) -> tuple:
    """`records` (each with a `variant`) in the comparison's `order`, those it does not name last."""
    return tuple(sorted(records, key=lambda r: order.index(r.variant) if r.variant in order else len(order)))


def _with_culprits(case: TimingCase, culprits: list[Culprit], order: tuple[str, ...]) -> TimingCase:
    baseline = case.variants[0].variant if case.variants else order[0]
    variants = case.variants + tuple(TimingVariant(c.name, TimingStatus.ERROR, reason=c.reason) for c in culprits)
    comparisons = case.comparisons + tuple(TimingComparison(c.name, TimingVerdict.NA, baseline=baseline,
                                                            reason=f"{c.name} {c.reason}") for c in culprits)
    return dataclasses.replace(case, variants=in_order(variants, order), comparisons=in_order(comparisons, order))


# Timed apart (docs/threat-model.md): a pair whose process ends too names its variant; the pairs that time are
# merged into one section, each comparison decided in its own process against its own A/A control.
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
