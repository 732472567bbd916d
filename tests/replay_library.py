"""A small Triton library, `toylib`, at two commits, whose ops no family fits, with its own tests: the
review replays the calls those tests make. HEAD~1 to HEAD:

- `scale` (ScaleFunction): the kernel indexes with explicit offsets instead of advancing a pointer, the same
  arithmetic: identical bits.
- `shift`: a planted bug, one element off by 1e-3.
- `clip`: raises at HEAD.
- `accumulate(acc, x)`: writes into `acc`; HEAD adds twice.
- `lonely`: its kernel changes and no test calls it.
- `PolyFunction.apply(X, W, B, eps)`: a layer norm's parameter names, not a layer norm (w0 x^3 + w1 x^2 +
  w2 x + b per row, normalized), its kernel reformatted into the same arithmetic.
- `tests/test_ops.py` (a test file) changes too, and is no op.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

KERNELS = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(X, Y, n, factor, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
{scale_body}


@triton.jit
def _shift_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, x + 0.5{shift_bug}, mask=offs < n)


@triton.jit
def _clip_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, tl.minimum(tl.maximum(x, -1.0), 1.0), mask=offs < n)


@triton.jit
def _accumulate_kernel(A, X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(A + offs, mask=offs < n)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(A + offs, a + {times}x, mask=offs < n)


@triton.jit
def _lonely_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < n) {lonely}, mask=offs < n)


@triton.jit
def _poly_kernel(X, W, B, Y, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * cols + offs, mask=offs < cols, other=0.0)
    {poly}
    tl.store(Y + row * cols + offs, p * tl.rsqrt(tl.sum(p * p, axis=0) / cols + eps) + tl.load(B), mask=offs < cols)


class ScaleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), factor, BLOCK=64)
        ctx.factor = factor
        return y

    @staticmethod
    def backward(ctx, dy):
        return dy * ctx.factor, None


def scale(x, factor=2.0):
    return ScaleFunction.apply(x, factor)


def shift(x):
    y = torch.empty_like(x)
    _shift_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


def clip(x):
    {clip_raise}y = torch.empty_like(x)
    _clip_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


def accumulate(acc, x):
    _accumulate_kernel[(triton.cdiv(x.numel(), 64),)](acc, x, x.numel(), BLOCK=64)
    return acc


def lonely(x):
    _lonely_kernel[(1,)](x, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return x


class PolyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, B, eps):
        assert W.shape == (3,), "W holds the three coefficients"
        Y = torch.empty_like(X)
        _poly_kernel[(X.shape[0],)](X, W, B, Y, X.shape[1], eps, BLOCK=triton.next_power_of_2(X.shape[1]))
        return Y
'''

SCALE = {"before": "    X += pid * BLOCK\n    Y += pid * BLOCK\n    offs = tl.arange(0, BLOCK)\n"
                   "    mask = pid * BLOCK + offs < n\n    tl.store(Y + offs, tl.load(X + offs, mask=mask) * factor, mask=mask)",
         "after": "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                  "    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * factor, mask=offs < n)"}
POLY = {"before": "p = tl.load(W) * x * x * x + tl.load(W + 1) * x * x + tl.load(W + 2) * x",
        "after": "w0 = tl.load(W)\n    w1 = tl.load(W + 1)\n    w2 = tl.load(W + 2)\n    p = w0 * x * x * x + w1 * x * x + w2 * x"}

TESTS = '''\
import pytest
import torch

from toylib.ops import accumulate, clip, scale, shift, PolyFunction


@pytest.mark.parametrize("n", [50, 130, 130, 300])
def test_scale(n):
    x = torch.randn(n, requires_grad=True)
    y = scale(x, 3.0)
    y.sum().backward()
    assert torch.allclose(x.grad, torch.full_like(x, 3.0))


def test_scale_in_double():
    x = torch.randn(40, dtype=torch.float64, requires_grad=True)
    scale(x, 3.0).sum().backward()


@pytest.mark.parametrize("n", [64, 200])
def test_shift_and_clip(n):
    x = torch.randn(n)
    assert torch.allclose(shift(x), x + 0.5, atol=1e-2)
    assert clip(x).abs().max() <= 1.0


def test_accumulate():
    acc, x = torch.zeros(100), torch.randn(100)
    accumulate(acc, x)
    assert acc.shape == x.shape


@pytest.mark.parametrize("rows", [2, 3])
def test_poly(rows):
    y = PolyFunction.apply(torch.randn(rows, 16), torch.tensor([0.5, 0.25, 0.125]), torch.tensor(0.1), 1e-6)
    assert y.shape == (rows, 16){more}
'''

SIDES = {
    "before": dict(scale_body=SCALE["before"], shift_bug="", clip_raise="", times="", lonely="+ 1.0",
                   poly=POLY["before"], more=""),
    "after": dict(scale_body=SCALE["after"], shift_bug=" + 1e-3 * (offs == 3)",
                  clip_raise='raise ValueError("clip takes no more calls")\n    ', times="2.0 * ", lonely="+ 2.0",
                  poly=POLY["after"], more="\n    assert torch.isfinite(y).all()"),
}


def _git(top: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(top), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def commit(top: Path, sides: dict[str, dict[str, str]]) -> Path:
    """A git repository at `top` with a commit per side (its message -> its files, path -> text), in order."""
    top.mkdir(parents=True, exist_ok=True)
    _git(top, "init", "-q")
    for side, files in sides.items():
        for path, text in files.items():
            (top / path).parent.mkdir(parents=True, exist_ok=True)
            (top / path).write_text(text)
        _git(top, "add", "-A")
        _git(top, "commit", "-qm", side)
    return top


def make(top: Path) -> Path:
    """The library at `top`, committed twice (HEAD~1: before; HEAD: after)."""
    return commit(top, {side: {"toylib/__init__.py": "", "toylib/ops.py": KERNELS.format(**SIDES[side]),
                               "tests/test_ops.py": TESTS.format(more=SIDES[side]["more"])} for side in SIDES})
