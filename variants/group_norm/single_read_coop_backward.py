"""single_read_coop's backward: x and dy read from device memory once, dx written once (the shared backward
reads both twice: five tensor passes where three suffice). The gradients of shared/specs/group_norm.md on
the forward's [rows, width] tile (per-channel sums are row sums, one atomic add per channel a slice
touches), split over waiting programs as the forward is. x_hat is taken about the group's own mean, not
the saved float32 one, whose error on large-mean inputs would reach the gradients."""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from variants.group_norm.coop_sync import arrive_and_wait, persistent_grid, widen_again, workspace

ON_CHIP = 8192                 # the largest group one program holds (x and dy: 32 values each a thread, 8 warps)
PER_THREAD = 32                # elements of each of x and dy per thread
SPLIT_BLOCK = 4096
SPLIT_WARPS = 4
TILE_WIDTH_PER_WARP = 256      # as the forward's: 32 threads of 16-byte bfloat16 vectors along a row


@triton.jit
def _group_sums(Part_ptr, Count_ptr, item, row, slices, c1, c2, sx, SLICE_BLOCK: tl.constexpr):
    """The group's c1, c2 and sx: this slice's published in its slot, the group's slices' summed once all
    have arrived; a wait that timed out gives sx NaN, not a hang."""
    part = Part_ptr + 3 * item
    tl.store(part, c1)
    tl.store(part + 1, c2)
    tl.store(part + 2, sx)
    in_time = arrive_and_wait(Count_ptr, row, slices)
    j = tl.arange(0, SLICE_BLOCK)
    part = Part_ptr + 3 * (row * slices + j)
    c1 = tl.sum(tl.load(part, mask=j < slices, other=0.0, cache_modifier=".cg"), axis=0)
    c2 = tl.sum(tl.load(part + 1, mask=j < slices, other=0.0, cache_modifier=".cg"), axis=0)
    sx = tl.sum(tl.load(part + 2, mask=j < slices, other=0.0, cache_modifier=".cg"), axis=0)
    return c1, c2, tl.where(in_time, sx, float("nan"))


@triton.jit
def _add_channel_sums(DW_ptr, DB_ptr, dw_rows, db_rows, start, first_channel, hidden_size, HPC: tl.constexpr,
                      ROWS: tl.constexpr, RPC: tl.constexpr, WIDTH: tl.constexpr):
    """A slice's per-row dW and dB sums added into their channels: RPC consecutive rows lie in one channel,
    summed before the channel's one atomic add."""
    CHANNELS: tl.constexpr = ROWS // RPC
    dw = tl.sum(tl.reshape(dw_rows, [CHANNELS, RPC]), axis=1)
    db = tl.sum(tl.reshape(db_rows, [CHANNELS, RPC]), axis=1)
    channel_start = start + tl.arange(0, CHANNELS) * (RPC * WIDTH)
    channel_ok = channel_start < hidden_size
    tl.atomic_add(DW_ptr + first_channel + channel_start // HPC, dw, mask=channel_ok, sem="relaxed")
    tl.atomic_add(DB_ptr + first_channel + channel_start // HPC, db, mask=channel_ok, sem="relaxed")


@triton.jit
def coop_backward(DX_ptr, DY_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, DW_ptr, DB_ptr, Part_ptr, Count_ptr,
                  n_rows, num_groups, channels_per_group, hidden_size, slices,
                  BLOCK: tl.constexpr, HPC: tl.constexpr, ROWS: tl.constexpr, RPC: tl.constexpr,
                  EVEN: tl.constexpr, SPLIT: tl.constexpr, SLICE_BLOCK: tl.constexpr):
    """Program p takes work items p, p + P, ... (resident: one item, slices = 1); item i is slice
    i % slices (BLOCK elements, a [ROWS, WIDTH] tile) of group row i // slices. Every RPC consecutive
    tile rows lie in one channel: their sums are added before the channel's atomic add."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    for item in tl.range(tl.program_id(0), n_rows * slices, tl.num_programs(0)):
        row = item // slices
        start = (item % slices) * BLOCK
        row_start = start + tl.arange(0, ROWS) * WIDTH                       # [ROWS]
        row_ok = row_start < hidden_size
        offsets = row_start[:, None] + tl.arange(0, WIDTH)[None, :]
        first_channel = (row % num_groups) * channels_per_group
        base = row.to(tl.int64) * hidden_size
        if EVEN:
            x = tl.load(X_ptr + base + offsets)
            dy = tl.load(DY_ptr + base + offsets)
        else:
            x = tl.load(X_ptr + base + offsets, mask=row_ok[:, None], other=0.0)
            dy = tl.load(DY_ptr + base + offsets, mask=row_ok[:, None], other=0.0)
        w = tl.load(W_ptr + first_channel + row_start // HPC, mask=row_ok, other=0.0).to(tl.float32)
        mean = tl.load(Mean_ptr + row)
        rstd = tl.load(RSTD_ptr + row)
        # about the saved float32 mean m: x - m is exact for values near it, and sum(x - m) / N corrects m
        # to the group's mean (a float32 mean is off by up to half its last place, which on a large mean
        # is a large part of the spread: x_hat, and so every gradient, would carry it)
        # (x - m) * rstd, not x - m: sums of the latter overflow float32 on huge inputs
        xm = (x.to(tl.float32) - mean) * rstd
        if not EVEN:
            xm = tl.where(row_ok[:, None], xm, 0.0)
        dyf = dy.to(tl.float32)
        s1_rows = tl.sum(dyf * xm, axis=1)                                  # sum(dy * (x - m) * rstd) per row
        db_rows = tl.sum(dyf, axis=1)
        # c1 and c2 from the row sums: sum(x_hat * W * dy) = sum_rows W_row * (s1_row - corr * db_row),
        # summed over rows in float64: with a large rstd (tiny inputs) dx = (W dy - c2 - x_hat c1) * rstd
        # magnifies their rounding where W dy and c2 nearly cancel
        sx = tl.sum(tl.sum(xm, axis=1).to(tl.float64), axis=0)
        c1 = tl.sum(s1_rows.to(tl.float64) * w.to(tl.float64), axis=0)
        c2 = tl.sum(db_rows.to(tl.float64) * w.to(tl.float64), axis=0)
        if SPLIT:
            c1, c2, sx = _group_sums(Part_ptr, Count_ptr, item, row, slices, c1, c2, sx, SLICE_BLOCK)
        corr = sx / hidden_size                 # (group mean - m) * rstd
        c1 = ((c1 - corr * c2) / hidden_size).to(tl.float32)
        c2 = (c2 / hidden_size).to(tl.float32)
        corr = corr.to(tl.float32)
        _add_channel_sums(DW_ptr, DB_ptr, s1_rows - corr * db_rows, db_rows, start, first_channel, hidden_size,
                          HPC, ROWS, RPC, WIDTH)
        x_hat = (widen_again(x) - mean) * rstd - corr
        dx = (w[:, None] * widen_again(dy) - (x_hat * c1 + c2)) * rstd
        if EVEN:
            tl.store(DX_ptr + base + offsets, dx)
        else:
            tl.store(DX_ptr + base + offsets, dx, mask=row_ok[:, None])


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch_backward` runs one shape: `block` elements per program (a power of two), `num_warps`;
    split: a group over ceil(hidden / block) programs that wait for each other."""

    block: int
    num_warps: int
    split: bool = False

    @property
    def label(self) -> str:
        return f"{'split' if self.split else 'resident'} b{self.block} w{self.num_warps}"


def choose(hidden_size: int, device_type: str = "cuda") -> Config:
    """The configuration for groups of `hidden_size` elements; on the CPU interpreter every group is resident."""
    block = triton.next_power_of_2(hidden_size)
    if block <= ON_CHIP or device_type == "cpu":
        return Config(block, max(1, min(16, block // (32 * PER_THREAD))))
    return Config(SPLIT_BLOCK, SPLIT_WARPS, split=True)


def tile_width(config: Config, hidden_per_channel: int) -> int:
    """Columns of the [rows, width] tile: every warp side by side along a row, narrower where that is
    needed for a row to lie in one channel (the largest power of two dividing the channel's count)."""
    return min(config.block, TILE_WIDTH_PER_WARP * config.num_warps, hidden_per_channel & -hidden_per_channel)


def rows_per_channel(rows: int, width: int, hidden_per_channel: int) -> int:
    """The most consecutive tile rows (a power of two, at most `rows`) that always lie in one channel:
    their span must divide the channel's, so that no such run straddles two channels."""
    run = 1
    while run * 2 <= rows and hidden_per_channel % (run * 2 * width) == 0:
        run *= 2
    return run


def describe_backward(shape, device_type: str = "cuda") -> str:
    """What runs for `shape` on a device of `device_type`."""
    config = choose(shape.hidden_size, device_type)
    width = tile_width(config, shape.hidden_size // shape.channels_per_group)
    return f"{config.label}, tile [{config.block // width}, {width}]"


def launch_backward_with(config: Config, kernel, inputs, saved: dict, grads: dict, shape):
    """A closure computing dx, dW, dB into `grads` with `config` (the family's backward_call contract:
    dW and dB are added into zeroed float32 buffers, cast into `grads` after the launch)."""
    n_rows, h = shape.batch * shape.num_groups, shape.hidden_size
    hpc = h // shape.channels_per_group
    x, dy = inputs.x.contiguous(), inputs.dy.contiguous()
    device = x.device
    wide = grads["dW"].dtype == torch.float32
    dw = grads["dW"] if wide else torch.zeros(shape.channels, dtype=torch.float32, device=device)
    db = grads["dB"] if wide else torch.zeros_like(dw)
    mean, rstd = saved["mean"].contiguous(), saved["rstd"].contiguous()
    if not grads["dx"].is_contiguous():
        raise ValueError("single_read_coop's backward writes a contiguous dx")
    if not config.split and config.block < h:
        raise ValueError(f"{config.label} cannot hold a group of {h} elements in one program")
    slices = -(-h // config.block) if config.split else 1
    parts = workspace(device, "backward parts", torch.float64, 3 * n_rows * slices) if config.split else mean
    counts = workspace(device, f"backward counts{slices}", torch.int32, n_rows) if config.split else mean
    args = (grads["dx"], dy, x, mean, rstd, inputs.weight, dw, db, parts, counts, n_rows, shape.num_groups,
            shape.channels_per_group, h, slices)
    width = tile_width(config, hpc)
    rows = config.block // width
    constants = dict(BLOCK=config.block, HPC=hpc, ROWS=rows, RPC=rows_per_channel(rows, width, hpc),
                     EVEN=h % config.block == 0, SPLIT=config.split,
                     SLICE_BLOCK=max(2, triton.next_power_of_2(slices)), num_warps=config.num_warps)
    grid = n_rows
    if config.split:
        grid = persistent_grid(kernel, args, constants, (kernel, str(device), config, x.dtype, hpc, constants["EVEN"]),
                               n_rows * slices, slices, config.label)

    def backward():
        dw.zero_()
        db.zero_()
        kernel[(grid,)](*args, **constants)
        if not wide:
            grads["dW"].copy_(dw)
            grads["dB"].copy_(db)
    return backward


def launch_coop_backward(kernel, inputs, saved: dict, grads: dict, shape):
    """The variant's backward launcher (Family.backward_call's signature): `choose`'s configuration."""
    config = choose(shape.hidden_size, inputs.x.device.type)
    return launch_backward_with(config, kernel, inputs, saved, grads, shape)
