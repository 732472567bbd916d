"""Each entry's bench calls for one timing case (compare/checks/timing.py times them): one per placement, a
placement being one of a few sets of output buffers shared by every entry and, for each entry, one of the
sealed copies of the inputs (one copy per entry), so that over the rounds every entry meets every pairing of
input copy and output set (on an H100, identical kernels kept 2.4% apart at 537 MB when each kept one)."""
from __future__ import annotations

import contextlib
from typing import Callable, NamedTuple, Sequence

from compare.runtime import sealing, supervisor


def _failing(exc: BaseException) -> Callable[[], None]:
    def fail():
        raise exc
    return fail


class CaseCalls(NamedTuple):
    """One case's bench calls: each variant's, one per placement, and the baseline's again (the A/A control)."""

    calls: dict[str, tuple]
    control: tuple


def case_calls(bench_call: Callable[..., Callable[[], None]], variants: Sequence, inputs, shape, mode: str,
               placements: int = 1) -> "CaseCalls":
    """Every variant's bench calls for one case, and the baseline's again for the A/A control. With E entries
    and S = `placements` output sets, placement p (of E * S) writes set p // E and entry i reads sealed copy
    (i + p) mod E: no two entries read one copy in a round, and each entry pairs every copy with every set
    once a cycle. A variant whose call cannot be built gets a call that raises its error (reported)."""
    count = len(variants) + 1
    copies = [sealing.sealed_copy(inputs) for _ in range(count)]
    sets = [{} for _ in range(placements)]
    cycle = count * placements

    def build(variant, index: int) -> tuple:
        own = [copies[(index + p) % count] for p in range(cycle)]
        try:
            calls = tuple(bench_call(variant, own[p], shape, mode, buffers=sets[p // count]) for p in range(cycle))
        except BaseException as exc:  # reported by time_case, the rest still timed
            supervisor.variant_fault(variant.name, exc)
            return (_failing(exc),) * cycle
        for call, copy in zip(calls, own):
            with contextlib.suppress(AttributeError):   # a callable that takes no attributes: not watched
                call.sealed_inputs = copy
        return calls
    calls = {v.name: build(v, i) for i, v in enumerate(variants)}
    return CaseCalls(calls, build(variants[0], len(variants)))


def as_placements(fn, placements: int) -> tuple:
    """An entry's calls, one per placement (one callable: one placement); ValueError for another count."""
    fns = tuple(fn) if isinstance(fn, (tuple, list)) else (fn,)
    if len(fns) != placements:
        raise ValueError(f"every entry needs {placements} calls (one per placement), got {len(fns)}")
    return fns
