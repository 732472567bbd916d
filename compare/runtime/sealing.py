"""Sealed inputs: every run of every variant reads its own copy of the drawn inputs, so one variant's writes
never reach another; comparing the copy bit for bit afterwards tells a variant that writes into an input.

Inputs are an `Operands` record, or any dataclass or mapping whose tensor fields are the operands. Writes a
family documents (`Family.overwrites`) are left out by `writes(..., expected=)`.
"""
from __future__ import annotations

import dataclasses

import torch

from compare.model.results import InputWrite

_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def tensors(inputs) -> dict[str, torch.Tensor]:
    """The input tensors by name."""
    if hasattr(inputs, "named_tensors"):
        return inputs.named_tensors()
    items = ({f.name: getattr(inputs, f.name) for f in dataclasses.fields(inputs)}
             if dataclasses.is_dataclass(inputs) else dict(inputs))
    return {k: v for k, v in items.items() if isinstance(v, torch.Tensor)}


def sealed_copy(inputs):
    """`inputs` with every tensor cloned (same values, bits, dtype, device, strides); other fields are kept."""
    if inputs is None:
        return None
    copies = {k: t.clone() for k, t in tensors(inputs).items()}
    if hasattr(inputs, "named_tensors"):
        return inputs.replace(**copies)
    return dataclasses.replace(inputs, **copies) if dataclasses.is_dataclass(inputs) else {**inputs, **copies}


def int_view(t: torch.Tensor) -> torch.dtype | None:
    """The integer dtype of t's element size, to compare raw bits through (None for bool and odd sizes)."""
    return None if t.dtype == torch.bool else _INT_VIEW.get(t.element_size())


def changed_elements(a: torch.Tensor, b: torch.Tensor) -> int:
    """Elements whose raw bits differ (a NaN rewritten with the same bits is no change)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return a.numel()
    view = int_view(a)
    if view is None:
        return int((a != b).sum())
    return int((a.contiguous().view(view) != b.contiguous().view(view)).sum())


def writes(original, used, expected=()) -> tuple[InputWrite, ...]:
    """Each input `used` no longer holds bit for bit as in `original`, with how many elements changed; the
    inputs named in `expected` (written over by design) are not looked at."""
    old, new = tensors(original), tensors(used)
    found = []
    for name, t in old.items():
        if name in new and name not in expected and t.device.type != "meta":
            n = changed_elements(t, new[name])
            if n:
                found.append(InputWrite(name, n, t.numel()))
    return tuple(found)


def restore(used, original, names=None) -> None:
    """Copy the original values back into `used`'s tensors (`names`, default all), in place: their addresses
    stay, and so do their autograd version counters (through `.data`), so a graph that saved one of them
    for its backward still accepts it (the values are the ones it saved)."""
    new = tensors(used)
    for name, t in tensors(original).items():
        if names is None or name in names:
            new[name].data.copy_(t)


def merge(found: list[tuple[InputWrite, ...]]) -> tuple[InputWrite, ...]:
    """Writes over several runs: per input, the changed and total elements summed."""
    total: dict[str, InputWrite] = {}
    for run in found:
        for w in run:
            seen = total.get(w.input)
            total[w.input] = w if seen is None else InputWrite(w.input, seen.changed + w.changed, seen.numel + w.numel)
    return tuple(total.values())
