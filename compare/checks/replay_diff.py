"""One replayed call's tensors at BASE against HEAD's (compare/model/replay.py's TensorDiff): identical bits,
else how far apart, where, and whether beyond the dtype's tolerance. Neither side is the reference."""
from __future__ import annotations

import dataclasses
import math

import torch

from compare.checks.numerics import TOLERANCES, same_bits, ulp
from compare.model.replay import Agreement, TensorDiff
from compare.model.results import SPREAD_FACTOR
from compare.model.vocabulary import dtype_name


def _unlike(name: str, base, head) -> TensorDiff | None:
    """A TensorDiff saying why the two cannot be compared element by element, or None when they can."""
    present = [x for x in (base, head) if isinstance(x, torch.Tensor)]
    if len(present) < 2:
        side = "BASE" if isinstance(base, torch.Tensor) else "HEAD"
        t = present[0] if present else None
        return TensorDiff(name, dtype_name(t.dtype) if t is not None else "", tuple(t.shape) if t is not None else (),
                          Agreement.UNLIKE, why=f"a tensor at {side} only" if present else "no tensor at either")
    if base.shape != head.shape or base.dtype != head.dtype:
        why = f"{dtype_name(base.dtype)}{list(base.shape)} at BASE, {dtype_name(head.dtype)}{list(head.shape)} at HEAD"
        return TensorDiff(name, dtype_name(base.dtype), tuple(base.shape), Agreement.UNLIKE, why=why)
    return None


def tensor_diff(name: str, base, head) -> TensorDiff:
    """BASE's `base` against HEAD's `head` (either may be missing: not comparable, said so)."""
    unlike = _unlike(name, base, head)
    if unlike is not None:
        return unlike
    base, head = base.detach().cpu(), head.detach().cpu()
    dtype, shape = dtype_name(base.dtype), tuple(base.shape)
    differs = ~same_bits(base, head)
    differing = int(differs.sum())
    if differing == 0:
        return TensorDiff(name, dtype, shape, Agreement.IDENTICAL)
    if not base.is_floating_point() or base.dtype not in TOLERANCES:
        where = tuple(int(i) for i in differs.nonzero()[0])
        return TensorDiff(name, dtype, shape, Agreement.BEYOND, differing, differing, where=where,
                          base_value=float(base[where]), head_value=float(head[where]))
    return _float_diff(name, base, head, differing)


def _float_diff(name: str, base: torch.Tensor, head: torch.Tensor, differing: int) -> TensorDiff:
    rtol, atol = TOLERANCES[base.dtype]
    a, b = base.to(torch.float64), head.to(torch.float64)
    finite = torch.isfinite(a) & torch.isfinite(b)
    nan_mismatch = int((torch.isfinite(a) != torch.isfinite(b)).sum())
    close = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    beyond = int((~close).sum())
    gap = torch.where(finite, (a - b).abs(), torch.zeros_like(a))
    flat = int(gap.reshape(-1).argmax()) if gap.numel() else 0
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), gap.shape)) if gap.dim() else ()
    max_abs = float(gap.reshape(-1)[flat]) if gap.numel() else 0.0
    units = gap / ulp(torch.where(finite, torch.maximum(a.abs(), b.abs()), torch.ones_like(a)), base.dtype)
    return TensorDiff(name, dtype_name(base.dtype), tuple(base.shape), Agreement.BEYOND if beyond else Agreement.WITHIN,
                      differing, beyond, max_abs, float(units.max()) if units.numel() else 0.0, where,
                      float(a.reshape(-1)[flat]), float(b.reshape(-1)[flat]),
                      float(units.reshape(-1)[flat]) if units.numel() else 0.0, nan_mismatch)


def value_diff(name: str, base, head) -> TensorDiff:
    """A result that is no tensor (a number, None, a string) at both sides: the same, or not comparable."""
    if base == head:
        return TensorDiff(name, "", (), Agreement.IDENTICAL)
    return TensorDiff(name, "", (), Agreement.UNLIKE, why=f"{base!r:.40} at BASE, {head!r:.40} at HEAD")


def within_spread(d: TensorDiff, base, again) -> TensorDiff:
    """`d` with BASE's run-to-run spread on it (`again`: BASE's second run); a difference from HEAD no larger
    than SPREAD_FACTOR times that spread is the measurement's own, not the change's."""
    if not isinstance(again, torch.Tensor) or d.agreement == Agreement.UNLIKE:
        return d
    own = tensor_diff(d.name, base, again)
    if own.agreement == Agreement.UNLIKE:
        return d
    spread = math.inf if own.nan_mismatch else own.max_abs
    if d.agreement != Agreement.IDENTICAL and own.differing and d.nan_mismatch == 0 and d.max_abs <= SPREAD_FACTOR * spread:
        return dataclasses.replace(d, agreement=Agreement.SPREAD, spread=spread)
    return dataclasses.replace(d, spread=spread)


def compare_named(base: dict, head: dict, again: dict | None = None) -> tuple[TensorDiff, ...]:
    """Each result named at either side, BASE's order first; `again`: BASE's second run, if it ran twice."""
    found = []
    for n in dict.fromkeys([*base, *head]):
        if isinstance(base.get(n), torch.Tensor) or isinstance(head.get(n), torch.Tensor):
            d = tensor_diff(n, base.get(n), head.get(n))
            found.append(within_spread(d, base.get(n), (again or {}).get(n)) if again else d)
        else:
            found.append(value_diff(n, base.get(n, "<absent>"), head.get(n, "<absent>")))
    return tuple(found)
