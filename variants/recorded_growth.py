"""How big a recorded call is timed: on a GPU, the recorded call moving the most bytes is grown along the
leading dimension its tensor arguments share until it moves at least TARGET_BYTES, or memory (or 32-bit
indexing) stops it. Where growing would change what the op does (an argument says the size, a tensor not
grown holds that size too, an output holds it elsewhere, a grown tensor is strided) it is declined, and the
call is timed at its recorded size; `Growth.why` says which, in one line. Pure: decided from sizes alone."""
from __future__ import annotations

import dataclasses
import math

TARGET_BYTES = 256 << 20
MAX_ELEMENTS = 2**31 - 1
# what a timing run holds of a case at once, in copies of the call's tensors: the drawn inputs, the audit's
# unseen draw, a sealed copy per entry (BASE, HEAD, the A/A control), their outputs and gradients
PEAK_COPIES = 8


@dataclasses.dataclass(frozen=True)
class Sized:
    """A tensor of the call, by its size alone."""

    name: str
    shape: tuple[int, ...]
    itemsize: int
    contiguous: bool = True

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


@dataclasses.dataclass(frozen=True)
class Growth:
    factor: int                          # 1: the recorded size
    rows: int = 0                        # the leading dimension's recorded size (0: none)
    grown: tuple[str, ...] = ()          # the arguments grown along it
    why: str = ""                        # how it was grown, or why it was not


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"


def _declined(tensors: list[Sized], scalars: dict, outputs: list[Sized], rows: int, grown: list[Sized]) -> str:
    """Why growing along `rows` would change what the op does ('' where nothing says so)."""
    strided = [t.name for t in grown if not t.contiguous]
    if strided:
        return f"{strided[0]} is strided: growing it would change its layout"
    said = [n for n, v in scalars.items() if type(v) is int and v > 1 and v in (rows, max(t.bytes // t.itemsize
                                                                                        for t in grown))]
    if said:
        return f"argument {said[0]}={scalars[said[0]]} says the size: growing the tensors alone would change what the op does"
    held = [t for t in tensors if t not in grown and rows in t.shape and rows > 1]
    if held:
        return f"{held[0].name} {list(held[0].shape)} also holds {rows}: whether it follows the rows is not known"
    odd = [o for o in outputs if rows in o.shape[1:] and rows > 1]
    if odd:
        return f"output {odd[0].name} {list(odd[0].shape)} holds {rows} in another dimension"
    return ""


def plan(tensors: list[Sized], scalars: dict, outputs: list[Sized], free_bytes: int | None,
         target: int = TARGET_BYTES) -> Growth:
    """The growth of one call (see the module docstring); `free_bytes` None: no GPU, the recorded size."""
    moved = sum(t.bytes for t in tensors) + sum(o.bytes for o in outputs)
    if free_bytes is None:
        return Growth(1, why=f"the recorded size ({_mb(moved)} moved; grown only on a GPU)")
    if moved >= target:
        return Growth(1, why=f"the recorded size: it moves {_mb(moved)} already")
    largest = max(tensors, key=lambda t: t.bytes, default=None)
    if largest is None or not largest.shape:
        return Growth(1, why="the recorded size: no tensor argument has a leading dimension to grow")
    rows = largest.shape[0]
    grown = [t for t in tensors if t.shape and t.shape[0] == rows]
    why = _declined(tensors, scalars, outputs, rows, grown)
    if why:
        return Growth(1, rows, why=f"the recorded size, not grown: {why}")
    following = grown + [o for o in outputs if o.shape and o.shape[0] == rows]
    per_copy = sum(t.bytes for t in following)
    fixed = moved - per_copy
    factor = max(1, math.ceil((target - fixed) / per_copy)) if per_copy else 1
    caps = {"32-bit indexing": min(MAX_ELEMENTS // max(1, math.prod(t.shape)) for t in following)}
    caps["memory"] = max(1, (free_bytes // PEAK_COPIES - fixed) // per_copy) if per_copy else 1
    stopped = [k for k, v in caps.items() if v < factor]
    factor = min(factor, *caps.values())
    if factor <= 1:
        return Growth(1, rows, why=f"the recorded size: {stopped[0] if stopped else 'memory'} stops it growing "
                                   f"({_mb(moved)} moved)")
    names = tuple(t.name for t in grown)
    said = f"grown along the leading dimension of {', '.join(names)} from {rows} to {rows * factor} (x{factor}): " \
           f"{_mb(fixed + factor * per_copy)} moved"
    return Growth(factor, rows, names, said + (f"; {stopped[0]} stops it short of {_mb(target)}" if stopped else ""))
