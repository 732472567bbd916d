"""Each entry's bench calls for one timing case (compare/checks/timing.py times them): one per placement of the
output buffers, each with a sealed copy of the inputs of its own."""
from __future__ import annotations

import contextlib
from typing import Callable, Sequence

from compare.runtime import sealing, supervisor


def _failing(exc: BaseException) -> Callable[[], None]:
    def fail():
        raise exc
    return fail


def case_calls(bench_call: Callable[..., Callable[[], None]], variants: Sequence, inputs, shape, mode: str,
               placements: int = 1) -> tuple[dict[str, tuple], tuple]:
    """Every variant's bench calls for one case, one per placement, and the baseline's again for the A/A
    control: `placements` sets of buffers, each shared by every variant (bench_call's `buffers`), and a
    sealed copy of `inputs` for each entry (`sealed_inputs`), so no entry's writes reach another. A
    variant whose call cannot be built gets a call that raises its error, so it is reported as failed."""
    sets = [{} for _ in range(placements)]

    def build(variant):
        own = sealing.sealed_copy(inputs)
        try:
            calls = tuple(bench_call(variant, own, shape, mode, buffers=b) for b in sets)
        except BaseException as exc:  # reported by time_case, the rest still timed
            supervisor.variant_fault(variant.name, exc)
            calls = (_failing(exc),) * placements
        for call in calls:
            with contextlib.suppress(AttributeError):   # a callable that takes no attributes: not watched
                call.sealed_inputs = own
        return calls
    calls = {v.name: build(v) for v in variants}
    return calls, build(variants[0])


def as_placements(fn, placements: int) -> tuple:
    """An entry's calls, one per placement (one callable: one placement); ValueError for another count."""
    fns = tuple(fn) if isinstance(fn, (tuple, list)) else (fn,)
    if len(fns) != placements:
        raise ValueError(f"every entry needs {placements} calls (one per placement), got {len(fns)}")
    return fns
