"""A review's time budget (`--budget`), the order it compares ops in, and `--op`.

Ops are compared most changed first (`change_size`): the kernels and jit helpers whose code changed, was
added or removed, then every other change (a launch, a helper, a constant, the op's own code); ties keep the
order found. Each op starts while the budget lasts; the one running when it runs out is stopped
(compare.runtime.deadline) and reports what finished; the rest are left out (compare.model.budget).
"""
from __future__ import annotations

import math
import time

from compare.model.budget import DtypesLeftOut
from compare.model.errors import UsageError
from compare.review.ops_changed import CODE

# a GPU review's comparisons end here, so that the command, its start and its report fit a minute
GPU_S = 50.0
# Triton's interpreter runs kernels hundreds of times slower: one op's default comparison takes 10-25 s on two
# cores, and a replay's recording and its two plays may each take 240 s (compare.review.replay.Limits)
CPU_S = 900.0
GPU_DTYPES = ("float32", "bfloat16")   # bfloat16: the dtype LLM kernels run in
CPU_DTYPES = ("float32",)


class Budget:
    """Seconds counted from `started` (the command's start: compare.runtime.run_context.run_started) on `clock`."""

    def __init__(self, seconds: float, started: float | None = None, clock=time.time):
        self.seconds, self.clock = seconds, clock
        self.started = clock() if started is None else started
        self.ran_out = False   # a comparison was stopped at its deadline: nothing more starts

    def used(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return self.seconds - self.used()

    def spent(self) -> bool:
        return self.ran_out or self.left() <= 0


def seconds(asked: float | None, gpu: bool) -> float:
    """--budget, checked (UsageError, one line), else the default where the kernels run."""
    if asked is None:
        return GPU_S if gpu else CPU_S
    if not math.isfinite(asked) or asked <= 0:
        raise UsageError(f"--budget {asked:g}: give a positive number of seconds (the review's comparisons end "
                         "that long after the command starts)")
    return asked


def dtypes(asked: str | None, gpu: bool, family) -> tuple[str | None, DtypesLeftOut | None]:
    """(the --dtype an op is compared at, what the default left out): --dtype as given; else on a GPU float32 and
    bfloat16, on the CPU float32, of those `family` has."""
    if asked is not None:
        return asked, None
    kept = [d for d in (GPU_DTYPES if gpu else CPU_DTYPES) if d in family.dtypes] or [next(iter(family.dtypes))]
    left = tuple(d for d in GPU_DTYPES if d not in kept)
    if not left:
        return ",".join(kept), None
    if gpu:   # a family of its own dtypes: none adds them
        return ",".join(kept), DtypesLeftOut(left, f"in family {family.name} (it has no {', '.join(left)})", "")
    return ",".join(kept), DtypesLeftOut(left, "on the CPU", ",".join(dict.fromkeys(kept + list(GPU_DTYPES))))


def change_size(what) -> tuple[int, int]:
    """(kernels and jit helpers whose code changed, was added or removed; every other change) of an op's `what`."""
    code = sum(1 for w in what if w.kind in CODE)
    return code, len(what) - code


def most_changed_first(items: list, what_of) -> list:
    """`items` ordered by `change_size(what_of(item))`, largest first; ties in the order given."""
    return sorted(items, key=lambda item: tuple(-n for n in change_size(what_of(item))))


def labels(ops: list[tuple[str, str]]) -> list[str]:
    """The label of each (module, callable): the callable less `.apply`, with its module where an earlier op has
    that label already."""
    said: list[str] = []
    for module, callable_ in ops:
        label = callable_.removesuffix(".apply")
        said.append(label if label not in said else f"{module}.{label}")
    return said


def names_of(module: str, callable_: str, label: str) -> set[str]:
    """Every name --op takes for an op: its label, its callable, and both with its module."""
    top = callable_.split(".")[0]
    return {label, callable_, top, f"{module}:{callable_}", f"{module}:{top}", f"{module}.{label}"}


def chosen(asked: list[str] | None, ops: dict[str, set[str]]) -> set[str]:
    """Of `ops` (op key -> its names), the keys --op names (all without --op); a name that is no changed op's is
    bad input (UsageError, one line listing them)."""
    if not asked:
        return set(ops)
    unknown = [n for n in asked if not any(n in names for names in ops.values())]
    if unknown:
        known = sorted(min(names, key=len) for names in ops.values())
        raise UsageError(f"--op {unknown[0]}: no changed op of this review is named so; changed ops: "
                         f"{', '.join(known) or 'none'}")
    return {key for key, names in ops.items() if any(n in names for n in asked)}
