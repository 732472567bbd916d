"""A variant that ends a dtype's timing process (compare/comparison/timing_run.py) while it runs alone (its warm-up,
launch cost, graph capture, audit: compare.runtime.supervisor.alone), or that kernel-ab ended there for keeping the
GPU busy (compare.runtime.device_busy), is named by that launch's record; the dtype is timed again in a fresh
process without it, and its section says why. One that ends while several ran together (the interleaved rounds)
blames none: each variant is then timed apart with the baseline (compare/comparison/timing_apart.py)."""
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
