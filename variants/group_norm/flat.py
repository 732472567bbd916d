"""flat: a later rewrite of the group-norm forward with no channel loop.

One `tl.range` loop walks all `hidden_size` elements of the group; each element's channel is
`first_channel + offset // hidden_per_channel`, and W and B are gathered per element. It asks
whether the channel loop, pointer-mutating or not, is worth having at all.
"""
import triton
import triton.language as tl

from variants.group_norm.common import group_statistics, store_statistics


@triton.jit
def group_norm_forward(
    Y_ptr, Y_row_stride, Y_col_stride,
    X_ptr, X_row_stride, X_col_stride,
    Mean_ptr, Mean_row_stride, Mean_col_stride,
    RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
    W_ptr, B_ptr,
    hidden_size, channels_per_group, eps,
    BLOCK_SIZE: tl.constexpr,
):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    X_ptr += batch_idx * X_row_stride + group_idx * X_col_stride
    Y_ptr += batch_idx * Y_row_stride + group_idx * Y_col_stride
    mean, rstd = group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE)

    hidden_per_channel = hidden_size // channels_per_group
    first_channel = group_idx * channels_per_group
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < hidden_size
        channel = first_channel + offsets // hidden_per_channel
        w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y_ptr + offsets, y, mask=mask)

    store_statistics(Mean_ptr, Mean_row_stride, Mean_col_stride,
                     RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                     batch_idx, group_idx, mean, rstd)
