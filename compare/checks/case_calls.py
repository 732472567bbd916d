"""Each entry's bench calls for one timing case (compare/checks/timing.py times them): one per placement, a
placement being a set of output buffers shared by every entry and, for each entry, one of the sealed copies of
the inputs (one copy per entry), passed on from entry to entry round by round."""
from __future__ import annotations

import contextlib
import math
from typing import Callable, Sequence

from compare.runtime import sealing, supervisor


def _failing(exc: BaseException) -> Callable[[], None]:
    def fail():
        raise exc
    return fail


def case_calls(bench_call: Callable[..., Callable[[], None]], variants: Sequence, inputs, shape, mode: str,
               placements: int = 1) -> tuple[dict[str, tuple], tuple]:
    """Every variant's bench calls for one case, and the baseline's again for the A/A control: per placement
    one set of output buffers shared by every entry, and entry i reads sealed copy (i + placement) mod E of
    the E copies, so no entry keeps one copy's place in memory through the case and no two read one copy in
    a round. Placements: at least `placements`, a multiple of E. A variant whose call cannot be built gets a call that raises its error (reported)."""
    count = len(variants) + 1
    placements = count * math.ceil(placements / count)
    copies = [sealing.sealed_copy(inputs) for _ in range(count)]
    sets = [{} for _ in range(placements)]

    def build(variant, index: int) -> tuple:
        own = [copies[(index + p) % count] for p in range(placements)]
        try:
            calls = tuple(bench_call(variant, own[p], shape, mode, buffers=b) for p, b in enumerate(sets))
        except BaseException as exc:  # reported by time_case, the rest still timed
            supervisor.variant_fault(variant.name, exc)
            return (_failing(exc),) * placements
        for call, copy in zip(calls, own):
            with contextlib.suppress(AttributeError):   # a callable that takes no attributes: not watched
                call.sealed_inputs = copy
        return calls
    calls = {v.name: build(v, i) for i, v in enumerate(variants)}
    return calls, build(variants[0], len(variants))


def as_placements(fn, placements: int) -> tuple:
    """An entry's calls, one per placement (one callable: one placement); ValueError for another count."""
    fns = tuple(fn) if isinstance(fn, (tuple, list)) else (fn,)
    if len(fns) != placements:
        raise ValueError(f"every entry needs {placements} calls (one per placement), got {len(fns)}")
    return fns
