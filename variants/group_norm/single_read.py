"""single_read: a group-norm forward that reads x from device memory once, near the memory roofline: what a
good kernel for the seed's problem looks like, measured by kernel-ab itself (docs/findings.md). A group that
fits a block stays in registers (x crosses the bus once); values are shifted by a pivot and scaled by a
power of two, so the variance neither cancels nor overflows (all-equal groups: y = B exactly); `launch`
picks warps by group size, and streams or splits groups too large for registers over several programs."""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

RESIDENT_CAP = tl.constexpr(32768)      # largest BLOCK_SIZE whose group is held in registers
STREAM_CHUNK_CAP = tl.constexpr(8192)   # block of the streamed path, whatever BLOCK_SIZE is passed
MAX_HIDDEN = 1 << 24     # the float-reciprocal channel index is exact below this


@triton.jit
def _pow2_scale(amax):
    """Exponent field e of amax clamped to [1, 253], a = 2**(e-127) and 1/a, both exact normal floats."""
    e = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    e = tl.minimum(tl.maximum(e, 1), 253)
    a = (e << 23).to(tl.float32, bitcast=True)
    inv = ((254 - e) << 23).to(tl.float32, bitcast=True)
    return e, a, inv


@triton.jit
def _finalize(m2, count, a, eps):
    """rstd, and rstd in the scaled units of t = (x - pivot) / a, from M2 of t over `count` values.
    Once per group, in float64: var = M2 / count * a^2 cannot overflow there, and the two correctly
    rounded operations leave rstd within half a float32 unit of 1 / sqrt(var + eps)."""
    a64 = a.to(tl.float64)
    var = m2.to(tl.float64) / count * a64 * a64
    rstd = 1.0 / tl.sqrt(var + eps)
    return rstd.to(tl.float32), (rstd * a64).to(tl.float32)


@triton.jit
def _channel_of(offsets, hidden_per_channel, inv_hpc):
    """offsets // hidden_per_channel without an integer division: a float estimate, corrected by one."""
    q = ((offsets.to(tl.float32) + 0.5) * inv_hpc).to(tl.int32)
    r = offsets - q * hidden_per_channel
    q = tl.where(r < 0, q - 1, q)
    q = tl.where(r >= hidden_per_channel, q + 1, q)
    return q


@triton.jit
def _streamed_moments(X_ptr, x0, length, inv_n, CHUNK: tl.constexpr):
    """Scaled (exponent, mean_t, M2_t) of the `length` values at X_ptr shifted by x0, block by block
    (Chan's combination), and sum(x * inv_n) (the plain mean's share, no cancellation against x0).
    The running scale only grows; earlier sums are rescaled by an exact power of two when it does."""
    count = 0.0
    mean_t = 0.0
    m2 = 0.0
    plain = 0.0
    e_run = 1
    for start in tl.range(0, length, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        mask = offsets < length
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        plain += tl.sum(x * inv_n, axis=0)
        d = tl.where(mask, x - x0, 0.0)
        e_blk, a_blk, inv_blk = _pow2_scale(tl.max(tl.abs(d), axis=0))
        e_new = tl.maximum(e_run, e_blk)
        shrink = (tl.maximum(127 + e_run - e_new, 0) << 23).to(tl.float32, bitcast=True)
        mean_t = mean_t * shrink
        m2 = m2 * shrink * shrink
        t = d * ((254 - e_new) << 23).to(tl.float32, bitcast=True)
        n_b = tl.minimum(length - start, CHUNK).to(tl.float32)
        mean_b = tl.sum(t, axis=0) / n_b
        dev = tl.where(mask, t - mean_b, 0.0)
        total = count + n_b
        delta = mean_b - mean_t
        mean_t = mean_t + delta * (n_b / total)
        m2 = m2 + tl.sum(dev * dev, axis=0) + delta * delta * (count * n_b / total)
        count = total
        e_run = e_new
    return e_run, mean_t, m2, plain


@triton.jit
def _normalize_channels(X_ptr, Y_ptr, W_ptr, B_ptr, first_channel, begin, end, hidden_per_channel,
                        x0, inv, mean_t, rstd_t, CHUNK: tl.constexpr):
    """y for the group's channels [begin, end) (X_ptr, Y_ptr at the group's start), x re-read."""
    for c in tl.range(begin, end):
        k = rstd_t * tl.load(W_ptr + first_channel + c).to(tl.float32)
        b = tl.load(B_ptr + first_channel + c).to(tl.float32)
        base = c * hidden_per_channel
        for start in tl.range(0, hidden_per_channel, CHUNK):
            offsets = start + tl.arange(0, CHUNK)
            mask = offsets < hidden_per_channel
            x = tl.load(X_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
            y = ((x - x0) * inv - mean_t) * k + b
            tl.store(Y_ptr + base + offsets, y, mask=mask)


@triton.jit
def _resident(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel, first_channel, eps,
              BLOCK_SIZE: tl.constexpr):
    """The whole group (hidden_size <= BLOCK_SIZE) loaded once and kept in registers; returns mean, rstd."""
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < hidden_size
    x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    # pivot: the plain mean (sum of x / n, no overflow); exact on an all-equal group up to a few-bit rest
    pivot = tl.sum(x * (1.0 / hidden_size), axis=0)
    d = tl.where(mask, x - pivot, 0.0)
    e, a, inv = _pow2_scale(tl.max(tl.abs(d), axis=0))
    t = d * inv
    mean_t = tl.sum(t, axis=0) / hidden_size
    dev = tl.where(mask, t - mean_t, 0.0)
    mean = pivot + mean_t * a
    rstd, rstd_t = _finalize(tl.sum(dev * dev, axis=0), hidden_size, a, eps)
    channel = first_channel + _channel_of(offsets, hidden_per_channel, 1.0 / hidden_per_channel)
    w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y_ptr + offsets, dev * rstd_t * w + b, mask=mask)
    return mean, rstd


@triton.jit
def _streamed(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, channels_per_group, hidden_per_channel,
              first_channel, eps, CHUNK: tl.constexpr):
    """Block statistics combined over the group, then a second read of x (from L2 while the group's
    bytes stay there) to write y channel by channel; returns mean, rstd."""
    x0 = tl.load(X_ptr).to(tl.float32)
    e, mean_t, m2, mean = _streamed_moments(X_ptr, x0, hidden_size, 1.0 / hidden_size, CHUNK)
    a = (e << 23).to(tl.float32, bitcast=True)
    inv = ((254 - e) << 23).to(tl.float32, bitcast=True)
    rstd, rstd_t = _finalize(m2, hidden_size, a, eps)
    _normalize_channels(X_ptr, Y_ptr, W_ptr, B_ptr, first_channel, 0, channels_per_group,
                        hidden_per_channel, x0, inv, mean_t, rstd_t, CHUNK)
    return mean, rstd


# the spec's signature, so the IR comparison and the spec's launcher (4 warps) still run it: resident up to
# RESIDENT_CAP elements, else streamed
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
    hidden_per_channel = hidden_size // channels_per_group
    first_channel = group_idx * channels_per_group
    if BLOCK_SIZE <= RESIDENT_CAP:
        if hidden_size <= BLOCK_SIZE:
            mean, rstd = _resident(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel,
                                   first_channel, eps, BLOCK_SIZE)
        else:
            mean, rstd = _streamed(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, channels_per_group,
                                   hidden_per_channel, first_channel, eps, BLOCK_SIZE)
    else:
        mean, rstd = _streamed(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, channels_per_group,
                               hidden_per_channel, first_channel, eps, STREAM_CHUNK_CAP)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


@triton.jit
def slice_statistics(X_ptr, Part_ptr, hidden_size, channels_per_group, slices, channels_per_slice,
                     CHUNK: tl.constexpr):
    """split, kernel 1 of 2: scaled (exponent, mean_t, M2_t) of one slice of channels of one group,
    shifted by the group's first element; program (batch * groups + group) * slices + slice."""
    pid = tl.program_id(0)
    group_row = pid // slices
    s = pid % slices
    hidden_per_channel = hidden_size // channels_per_group
    X_ptr += group_row.to(tl.int64) * hidden_size
    x0 = tl.load(X_ptr).to(tl.float32)
    begin = s * channels_per_slice * hidden_per_channel
    end = tl.minimum((s + 1) * channels_per_slice, channels_per_group) * hidden_per_channel
    e, mean_t, m2, plain = _streamed_moments(X_ptr + begin, x0, end - begin, 1.0 / hidden_size, CHUNK)
    tl.store(Part_ptr + 4 * pid, e.to(tl.float32))
    tl.store(Part_ptr + 4 * pid + 1, mean_t)
    tl.store(Part_ptr + 4 * pid + 2, m2)
    tl.store(Part_ptr + 4 * pid + 3, plain)


@triton.jit
def slice_normalize(Y_ptr, X_ptr, Part_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr,
                    hidden_size, channels_per_group, num_groups, slices, channels_per_slice, eps,
                    CHUNK: tl.constexpr, SLICES_BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    """split, kernel 2 of 2: combine the group's slice statistics (Chan, at the largest slice scale),
    then write y for this program's slice, re-reading x; with REVERSE the slices read last by kernel 1
    (still in L2) go first. Slice 0 writes mean and rstd."""
    pid = tl.program_id(0)
    if REVERSE:
        pid = tl.num_programs(0) - 1 - pid
    group_row = pid // slices
    s = pid % slices
    hidden_per_channel = hidden_size // channels_per_group
    j = tl.arange(0, SLICES_BLOCK)
    valid = j < slices
    part = Part_ptr + 4 * (group_row * slices + j)
    e_j = tl.load(part, mask=valid, other=1.0).to(tl.int32)
    mean_j = tl.load(part + 1, mask=valid, other=0.0)
    m2_j = tl.load(part + 2, mask=valid, other=0.0)
    mean = tl.sum(tl.load(part + 3, mask=valid, other=0.0), axis=0)
    first_j = j * channels_per_slice
    last_j = tl.minimum(first_j + channels_per_slice, channels_per_group)
    count_j = tl.where(valid, (last_j - first_j) * hidden_per_channel, 0).to(tl.float32)
    e = tl.max(e_j, axis=0)
    shrink = (tl.maximum(127 + e_j - e, 0) << 23).to(tl.float32, bitcast=True)
    mean_j = mean_j * shrink
    m2_j = m2_j * shrink * shrink
    mean_t = tl.sum(count_j * mean_j, axis=0) / hidden_size
    spread = mean_j - mean_t
    m2 = tl.sum(m2_j, axis=0) + tl.sum(count_j * spread * spread, axis=0)
    a = (e << 23).to(tl.float32, bitcast=True)
    inv = ((254 - e) << 23).to(tl.float32, bitcast=True)
    X_ptr += group_row.to(tl.int64) * hidden_size
    Y_ptr += group_row.to(tl.int64) * hidden_size
    x0 = tl.load(X_ptr).to(tl.float32)
    rstd, rstd_t = _finalize(m2, hidden_size, a, eps)
    if s == 0:
        tl.store(Mean_ptr + group_row, mean)
        tl.store(RSTD_ptr + group_row, rstd)
    first_channel = (group_row % num_groups) * channels_per_group
    _normalize_channels(X_ptr, Y_ptr, W_ptr, B_ptr, first_channel, s * channels_per_slice,
                        tl.minimum((s + 1) * channels_per_slice, channels_per_group), hidden_per_channel,
                        x0, inv, mean_t, rstd_t, CHUNK)


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch` runs one shape: which path, the block, warps per program, and for "split" the
    programs per group and the order of the normalize kernel."""

    path: str              # "resident", "streamed" or "split"
    block: int
    num_warps: int
    slices: int = 1
    reverse: bool = True

    def __post_init__(self):
        if self.path not in ("resident", "streamed", "split"):
            raise ValueError(f"path must be resident, streamed or split, got {self.path!r}")
        if self.block & (self.block - 1) or self.num_warps & (self.num_warps - 1) or self.slices < 1:
            raise ValueError(f"block and num_warps must be powers of two and slices >= 1: {self}")

    @property
    def label(self) -> str:
        extra = f" s{self.slices}{' rev' if self.reverse else ''}" if self.path == "split" else ""
        return f"{self.path} b{self.block} w{self.num_warps}{extra}"


# The rule below was set from roofline_probe.py's table on the H200 (reports/single_read_probe, commit cef537c):
# resident groups did best with 32 values per thread (2 warps for the seed's 2,048-element groups: 85% of
# copy in float32 at 2,048 channels; 4 warps tied), groups over 16,384 with the streamed path, 4,096-element
# blocks and 8 warps (57-61% float32, 40-44% bfloat16 on the image shapes; split peaked at 54-56%).
RESIDENT_ELEMENTS_PER_THREAD = 32
RESIDENT_MAX_WARPS = 16
LARGE_GROUP = Config("streamed", 4096, 8)


def choose(hidden_size: int, channels_per_group: int) -> Config:
    """The configuration `launch` uses for a group of `hidden_size` elements."""
    block = triton.next_power_of_2(hidden_size)
    warps = block // (32 * RESIDENT_ELEMENTS_PER_THREAD)
    if block <= RESIDENT_CAP.value and warps <= RESIDENT_MAX_WARPS:
        return Config("resident", block, max(1, warps))
    if LARGE_GROUP.path == "split":
        per_slice = max(1, channels_per_group // LARGE_GROUP.slices)
        return dataclasses.replace(LARGE_GROUP, slices=-(-channels_per_group // per_slice))
    return LARGE_GROUP


def launch_with(config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's)."""
    n, g, h = shape.batch, shape.num_groups, shape.hidden_size
    if h >= MAX_HIDDEN:
        raise ValueError(f"single_read handles groups of fewer than {MAX_HIDDEN} elements, got {h}")
    x = inputs.x.contiguous().view(n, g, h)
    y = outputs["y"].view(n, g, h)
    mean, rstd = outputs["mean"], outputs["rstd"]
    if config.path != "split":
        group_norm_forward[(n, g)](
            y, y.stride(0), y.stride(1), x, x.stride(0), x.stride(1),
            mean, mean.stride(0), mean.stride(1), rstd, rstd.stride(0), rstd.stride(1),
            inputs.weight, inputs.bias, h, shape.channels_per_group, shape.eps,
            BLOCK_SIZE=config.block, num_warps=config.num_warps)
        return
    cpg = shape.channels_per_group
    per_slice = -(-cpg // config.slices)
    slices = -(-cpg // per_slice)
    parts = torch.empty(n * g * slices * 4, dtype=torch.float32, device=x.device)
    grid = (n * g * slices,)
    hpc = h // cpg
    slice_statistics[grid](x, parts, h, cpg, slices, per_slice,
                           CHUNK=min(config.block, triton.next_power_of_2(per_slice * hpc)), num_warps=config.num_warps)
    slice_normalize[grid](y, x, parts, mean, rstd, inputs.weight, inputs.bias, h, cpg, g, slices, per_slice,
                          shape.eps, CHUNK=min(config.block, triton.next_power_of_2(hpc)),
                          SLICES_BLOCK=triton.next_power_of_2(slices), REVERSE=config.reverse,
                          num_warps=config.num_warps)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `choose`'s configuration for the shape."""
    launch_with(choose(shape.hidden_size, shape.channels_per_group), inputs, outputs, shape)
