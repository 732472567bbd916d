"""explicit_offset: the group-norm forward after Liger-Kernel #999 (the seed's variant B).

Pass 2 never reassigns the base pointers: each channel computes its own
`channel_offset = (channel - first_channel) * hidden_per_channel` and addresses
`X_ptr + channel_offset + offsets`; the inner loop is `tl.range`. The seed claimed this removes
loop-carried pointer dependencies and helps the compiler; this variant is what that claim is about.
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
        channel_offset = (channel - first_channel) * hidden_per_channel
        for start in tl.range(0, hidden_per_channel, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            mask = offsets < hidden_per_channel
            x = tl.load(X_ptr + channel_offset + offsets, mask=mask, other=mean).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(Y_ptr + channel_offset + offsets, y, mask=mask)

    store_statistics(Mean_ptr, Mean_row_stride, Mean_col_stride,
                     RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                     batch_idx, group_idx, mean, rstd)
