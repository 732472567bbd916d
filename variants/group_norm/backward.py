"""The shared group-norm backward kernel (shared/specs/group_norm.md, "Backward"): one backward for every
forward variant, so the backward check asks whether each one's saved mean and rstd give correct gradients.
Grid (batch, num_groups); each program walks its group twice, in float32: pass 1 adds sum(dy * x_hat) and
sum(dy) atomically into dW[c], dB[c] (zeroed first) and sums c1 = sum(x_hat * W * dy) / N and
c2 = sum(W * dy) / N; pass 2 writes dx = (W * dy - (x_hat * c1 + c2)) * rstd."""
import torch
import triton
import triton.language as tl


@triton.jit
def group_norm_backward(
    DX_ptr, DY_ptr, X_ptr, row_stride, col_stride,
    Mean_ptr, RSTD_ptr, stats_row_stride, stats_col_stride,
    W_ptr, DW_ptr, DB_ptr,
    hidden_size, channels_per_group,
    BLOCK_SIZE: tl.constexpr,
):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    base = batch_idx * row_stride + group_idx * col_stride
    X_ptr += base
    DY_ptr += base
    DX_ptr += base
    stats = batch_idx * stats_row_stride + group_idx * stats_col_stride
    mean = tl.load(Mean_ptr + stats).to(tl.float32)
    rstd = tl.load(RSTD_ptr + stats).to(tl.float32)

    hidden_per_channel = hidden_size // channels_per_group
    first_channel = group_idx * channels_per_group
    c1 = 0.0
    c2 = 0.0
    for channel in tl.range(first_channel, first_channel + channels_per_group):
        w = tl.load(W_ptr + channel).to(tl.float32)
        channel_offset = (channel - first_channel) * hidden_per_channel
        dw = 0.0
        db = 0.0
        for start in tl.range(0, hidden_per_channel, BLOCK_SIZE):
            offsets = channel_offset + start + tl.arange(0, BLOCK_SIZE)
            mask = start + tl.arange(0, BLOCK_SIZE) < hidden_per_channel
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(DY_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
            dw += tl.sum(dy * x_hat)
            db += tl.sum(dy)
        tl.atomic_add(DW_ptr + channel, dw)
        tl.atomic_add(DB_ptr + channel, db)
        c1 += dw * w
        c2 += db * w
    c1 = c1 / hidden_size
    c2 = c2 / hidden_size

    for channel in tl.range(first_channel, first_channel + channels_per_group):
        w = tl.load(W_ptr + channel).to(tl.float32)
        channel_offset = (channel - first_channel) * hidden_per_channel
        for start in tl.range(0, hidden_per_channel, BLOCK_SIZE):
            offsets = channel_offset + start + tl.arange(0, BLOCK_SIZE)
            mask = start + tl.arange(0, BLOCK_SIZE) < hidden_per_channel
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(DY_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            x_hat = (x - mean) * rstd
            dx = (w * dy - (x_hat * c1 + c2)) * rstd
            tl.store(DX_ptr + offsets, dx, mask=mask)


def launch_backward(kernel, x, dy, weight, mean, rstd, dx, dw_acc, db_acc, shape) -> None:
    """Run a backward kernel of this signature: x, dy and dx (batch, channels, *spatial) viewed as
    (batch, groups, hidden); mean, rstd (batch, groups) float32; dw_acc, db_acc zeroed float32
    buffers of length channels that the kernel adds into."""
    n, g, h = shape.batch, shape.num_groups, shape.hidden_size
    x = x.contiguous().view(n, g, h)
    dy = dy.contiguous().view(n, g, h)
    dxv = dx.view(n, g, h)
    assert dxv.stride() == x.stride() == dy.stride()
    assert dw_acc.dtype == db_acc.dtype == torch.float32
    mean, rstd = mean.contiguous(), rstd.contiguous()
    kernel[(n, g)](
        dxv, dy, x, x.stride(0), x.stride(1),
        mean, rstd, mean.stride(0), mean.stride(1),
        weight, dw_acc, db_acc,
        h, shape.channels_per_group,
        BLOCK_SIZE=min(shape.block_size, triton.next_power_of_2(h // shape.channels_per_group)),
    )
