"""What the cross-entropy kernels share (shared/specs/cross_entropy.md): the gradient pass, the launch
and the reduction of the per-row losses. A kernel takes the spec's parameters; `n_valid` is a pointer to
a one-element integer tensor (the count of rows not ignored), counted on the device, so a forward never
waits on the host and can be captured in a CUDA graph."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# the widest chunk of a row a program holds at once: V up to 256k never fits one block
MAX_BLOCK = 16384
REDUCTIONS = ("mean", "sum", "none")


@triton.jit
def ignored_row(x_row, Loss_ptr, row, n_cols, BLOCK_SIZE: tl.constexpr):
    """A row whose target is ignore_index: gradient 0 over its logits, loss 0; its logits are never read."""
    cols = tl.arange(0, BLOCK_SIZE)
    for start in range(0, n_cols, BLOCK_SIZE):
        tl.store(x_row + start + cols, tl.zeros((BLOCK_SIZE,), x_row.dtype.element_ty), mask=start + cols < n_cols)
    tl.store(Loss_ptr + row, 0.0)


@triton.jit
def gradient_pass(x_row, target, row_max, row_sum, n_cols, n_valid, label_smoothing,
                  reduction: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """Writes (softmax(x) - q) * scale over the row's logits, in their dtype: q = eps/V + (1 - eps)[j = t],
    scale 1/n_valid for `mean` (the gradient of the mean loss), else 1. The last read of the row."""
    cols = tl.arange(0, BLOCK_SIZE)
    scale = 1.0
    if reduction == "mean":
        scale = 1.0 / tl.load(n_valid).to(tl.float32)
    smooth = label_smoothing / n_cols
    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + cols
        mask = idx < n_cols
        x = tl.load(x_row + idx, mask=mask, other=0.0).to(tl.float32)
        dx = tl.exp(x - row_max) / row_sum - smooth - tl.where(idx == target, 1.0 - label_smoothing, 0.0)
        tl.store(x_row + idx, (dx * scale).to(x_row.dtype.element_ty), mask=mask)


@triton.jit
def row_loss(x_row, target, row_max, row_sum, x_sum_smoothed, label_smoothing):
    """lse - (1 - eps) x_t - (eps/V) sum_j x_j, in float32; `x_sum_smoothed` is already (eps/V) sum_j x_j.
    max - x_t is taken first: exact where the target holds the max, where lse - x_t would cancel (a row of
    equal logits c loses the bits of c + log V)."""
    x_target = tl.load(x_row + target).to(tl.float32)
    return tl.log(row_sum) + (row_max - x_target) + (label_smoothing * x_target - x_sum_smoothed)


def next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def block_size(n_cols: int, max_block: int = MAX_BLOCK) -> int:
    return min(next_power_of_2(n_cols), max_block)


def num_warps(block: int) -> int:
    return 16 if block >= 8192 else 8 if block >= 2048 else 4


def count_valid(target: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """The rows not ignored, as a one-element int32 tensor on the targets' device (no host sync)."""
    return (target != ignore_index).sum().to(torch.int32).reshape(1)


def reduce(loss_rows: torch.Tensor, n_valid: torch.Tensor, reduction: str) -> torch.Tensor:
    """The op's loss from the per-row float32 losses: mean (0/0 = NaN when every row is ignored, as torch), sum, none."""
    if reduction == "none":
        return loss_rows
    total = loss_rows.sum()
    return total / n_valid[0] if reduction == "mean" else total


def launch(kernel, x: torch.Tensor, target: torch.Tensor, ignore_index: int = -100, label_smoothing: float = 0.0,
           reduction: str = "mean", max_block: int = MAX_BLOCK) -> torch.Tensor:
    """Runs a forward kernel (the spec's parameters) over x (rows, V), which it overwrites with the gradient of
    the loss for an upstream gradient of 1; returns the loss (float32: a scalar, or per row for `none`)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction {reduction!r} is not one of {', '.join(REDUCTIONS)}")
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError("the logits must be (rows, V) with contiguous rows")
    rows, cols = x.shape
    loss_rows = torch.empty(rows, dtype=torch.float32, device=x.device)
    n_valid = count_valid(target, ignore_index)
    block = block_size(cols, max_block)
    kernel[(rows,)](x, x.stride(0), target, loss_rows, cols, n_valid, ignore_index, label_smoothing,
                    reduction=reduction, BLOCK_SIZE=block, num_warps=num_warps(block))
    return reduce(loss_rows, n_valid, reduction)


@triton.jit
def scale_gradient(dX_ptr, dX_row_stride, Grad_ptr, Grad_row_stride, G_ptr, G_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    """The backward: dX = (the gradient the forward wrote) * g, g the upstream gradient of the row's loss
    (G_stride 0: one scalar for mean and sum). Grid (rows, chunks of BLOCK_SIZE)."""
    row = tl.program_id(0).to(tl.int64)
    idx = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = idx < n_cols
    g = tl.load(G_ptr + row * G_stride).to(tl.float32)
    grad = tl.load(Grad_ptr + row * Grad_row_stride + idx, mask=mask, other=0.0).to(tl.float32)
    tl.store(dX_ptr + row * dX_row_stride + idx, (grad * g).to(dX_ptr.dtype.element_ty), mask=mask)
