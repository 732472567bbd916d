"""Inputs and the input kinds every normalization family draws (group norm per group, row norms per row).

A generator takes (shape, torch.Generator, dtype) and returns float64 values of `shape.tensor_shape`,
which the declared draw (variants.operands.draw_declared) casts to the dtype; `affine_operands` declares a
normalization family's x, weight and bias. Kinds that plant something per normalized unit use `shape.units(t)`:
a 3-D view (outer, units, members) of the input, each unit normalized on its own (a group of a sample; a row, outer 1).
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch

from variants.operands import Operand, Operands

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def norm_operands(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor], seed: int,
                  kind: str, dy: Optional[torch.Tensor] = None) -> Operands:
    """A normalization family's operands (x, weight, bias or None) and upstream gradient dy built from given
    tensors (as the families' tests hand-make them), as the generic record `variants.operands.Operands`."""
    return Operands({"x": x, "weight": weight, "bias": bias, "dy": dy}, seed, kind, x.dtype, x.device, ("dy",))


def normal(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal values: the easy case."""
    return torch.randn(*shape.tensor_shape, generator=gen, dtype=torch.float64)


def large_mean(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """1000 + s * randn: a mean large against the spread, where var = E[x^2] - E[x]^2 cancels
    catastrophically. s = 0.01, or 16 units in the last place of 1000 in `dtype` where that is
    larger (float16: 8, bfloat16: 64), so that the spread survives the cast to the dtype."""
    spread = max(0.01, 16 * ulp_at(1000.0, dtype))
    return 1000.0 + spread * normal(shape, gen)


def all_equal(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Every even-numbered unit (group of a sample, or row) holds one value repeated (var = 0, so
    rstd = 1/sqrt(eps)); odd-numbered units are standard normal. The values are drawn as 4 * randn,
    so most are not exactly representable squares."""
    x = normal(shape, gen)
    g = shape.units(x)
    const = 4.0 * torch.randn(g.shape[0], g.shape[1], 1, generator=gen, dtype=torch.float64)
    g[:, 0::2, :] = const[:, 0::2, :].to(dtype).to(torch.float64)
    return x


def huge(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Magnitudes near the top of the dtype's range: random sign, |x| uniform in
    [finfo.max / 16, finfo.max / 8]. Every value is representable; a float32 sum of squares (and for
    float32 and bfloat16 even the plain sum) of such values overflows, which the float64 reference
    does not."""
    top = torch.finfo(dtype).max
    n = normal(shape, gen)
    u = torch.rand(n.shape, generator=gen, dtype=torch.float64)
    return torch.sign(n) * (top / 16) * (1.0 + u)


def tiny(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Tiny magnitudes: 8 * (smallest normal of the dtype) * randn, so some values are subnormal
    and every square underflows (var << eps, so rstd is about 1/sqrt(eps))."""
    return 8.0 * torch.finfo(dtype).tiny * normal(shape, gen)


def nonfinite(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal, with a NaN in one unit, a +Inf in another and a -Inf in a third (of the first
    sample; fewer units, fewer kinds), each at a seeded position. The reference's outputs are
    non-finite exactly in those units; a kernel must be non-finite there and nowhere else."""
    x = normal(shape, gen)
    g = shape.units(x)
    h = g.shape[-1]
    for unit, value in zip(range(g.shape[1]), (float("nan"), float("inf"), float("-inf"))):
        pos = int(torch.randint(h, (1,), generator=gen))
        g[0, unit, pos] = value
    return x


def ulp_at(value: float, dtype: torch.dtype) -> float:
    """The spacing of `dtype` at the normal number `value`."""
    return float(torch.finfo(dtype).eps) * 2.0 ** math.floor(math.log2(abs(value)))


# name -> generator(shape, torch.Generator, dtype) -> float64 tensor (cast to the dtype by `draw`)
INPUT_KINDS: dict[str, Callable[..., torch.Tensor]] = {
    "normal": normal,
    "large_mean": large_mean,
    "all_equal": all_equal,
    "huge": huge,
    "tiny": tiny,
    "nonfinite": nonfinite,
}


def affine_operands(params: Callable[[object], tuple], weight_scale: float,
                    bias_scale: Optional[float]) -> tuple[Operand, ...]:
    """A normalization family's operands, drawn in this order from one stream: x (standard normal or the input
    kind's generator), weight W = 1 + weight_scale * randn of the `params(shape)` size, and, unless
    `bias_scale` is None, bias B = bias_scale * randn of that size (the upstream gradient dy follows them)."""
    def weight(shape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
        return 1.0 + weight_scale * torch.randn(params(shape), generator=gen, dtype=torch.float64)

    def bias(shape, gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
        return bias_scale * torch.randn(params(shape), generator=gen, dtype=torch.float64)
    found = (Operand("x", differentiable=True), Operand("weight", params, differentiable=True, draw=weight))
    return found if bias_scale is None else (*found, Operand("bias", params, differentiable=True, draw=bias))
