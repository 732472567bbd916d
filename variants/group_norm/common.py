"""Pass 1 of every Triton group-norm variant, and the store of its statistics.

The specification (shared/specs/group_norm.md, "Pass 1") makes this part identical in every
variant, so it lives here once and every variant calls it; Triton inlines it into each kernel.
"""
import triton
import triton.language as tl


@triton.jit
def group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    """Mean and 1/sqrt(var + eps) of the `hidden_size` elements at X_ptr, accumulated in float32.

    One pass: sum and sum of squares, then var = E[x^2] - E[x]^2 (biased)."""
    total = 0.0
    total_sq = 0.0
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X_ptr + offsets, mask=offsets < hidden_size, other=0.0).to(tl.float32)
        total += tl.sum(x)
        total_sq += tl.sum(x * x)
    mean = total / hidden_size
    var = total_sq / hidden_size - mean * mean
    rstd = tl.rsqrt(var + eps)
    return mean, rstd


@triton.jit
def store_statistics(Mean_ptr, Mean_row_stride, Mean_col_stride,
                     RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                     batch_idx, group_idx, mean, rstd):
    """Write the program's mean and rstd at (batch_idx, group_idx)."""
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)
