"""pointer_mutation: the group-norm forward before Liger-Kernel #999 (the seed's variant A).

Pass 2 walks each channel with a plain Python `range` loop addressed from X_ptr/Y_ptr, then
advances both base pointers by `hidden_per_channel`, so the two pointers are values carried from
one iteration of the channel loop to the next. It is the baseline Liger-Kernel #999 is judged
against.
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
    for channel in tl.range(first_channel, first_channel + channels_per_group):
        w = tl.load(W_ptr + channel).to(tl.float32)
        b = tl.load(B_ptr + channel).to(tl.float32)
        for start in range(0, hidden_per_channel, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            mask = offsets < hidden_per_channel
            x = tl.load(X_ptr + offsets, mask=mask, other=mean).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(Y_ptr + offsets, y, mask=mask)
        X_ptr += hidden_per_channel
        Y_ptr += hidden_per_channel

    store_statistics(Mean_ptr, Mean_row_stride, Mean_col_stride,
                     RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                     batch_idx, group_idx, mean, rstd)
