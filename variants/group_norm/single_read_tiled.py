"""single_read_tiled: single_read's contract and numerics (x read once for groups up to 16,384 elements,
a variance that cannot cancel or overflow) with fewer instructions per element, since single_read was
bound by instructions, not bytes: a [rows, 8] tile (channel index, W and B once a row), two fused
reductions, y = (t - mean_t) * k + B, and a streamed path of aligned flat blocks chosen by BLOCK_SIZE alone.
The spec's launcher passes BLOCK_SIZE = next_power_of_2(hidden_size), which the resident path relies on."""
from __future__ import annotations

import dataclasses

import triton
import triton.language as tl

RESIDENT_CAP = tl.constexpr(16384)      # largest BLOCK_SIZE whose group is held in registers
STREAM_BLOCK = tl.constexpr(4096)       # the streamed path's block for a BLOCK_SIZE from the spec's launcher
VEC = tl.constexpr(8)                   # a tile row: 8 consecutive elements, 16 or 32 bytes
MAX_HIDDEN = 1 << 24     # the float-reciprocal channel index is exact below this


@triton.jit
def _sum_max(a, b, c, d):
    return a + c, tl.maximum(b, d)


@triton.jit
def _sum_sum(a, b, c, d):
    return a + c, b + d


@triton.jit
def _sums_max(a, b):
    """sum(a) and max(b) of a [rows, VEC] tile in one reduction (one trip through shared memory, not two)."""
    a, b = tl.reduce((a, b), 1, _sum_max)
    return tl.reduce((a, b), 0, _sum_max)


@triton.jit
def _sums(a, b):
    """sum(a) and sum(b) of a [rows, VEC] tile in one reduction."""
    a, b = tl.reduce((a, b), 1, _sum_sum)
    return tl.reduce((a, b), 0, _sum_sum)


@triton.jit
def _pow2_scale(amax):
    """Exponent field e of amax clamped to [1, 253], a = 2**(e-127) <= amax and 1/a, exact normal floats."""
    e = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    e = tl.minimum(tl.maximum(e, 1), 253)
    a = (e << 23).to(tl.float32, bitcast=True)
    inv = ((254 - e) << 23).to(tl.float32, bitcast=True)
    return e, a, inv


@triton.jit
def _finalize(var_t, a, eps):
    """rstd, and rstd in the scaled units of t = (x - pivot) / a, from the variance of t. Once per group,
    in float64: var = var_t * a^2 cannot overflow there, and rstd lands within half a float32 unit."""
    a64 = a.to(tl.float64)
    var = tl.where(var_t < 0.0, 0.0, var_t).to(tl.float64) * a64 * a64   # rounding below 0; NaN stays NaN
    rstd = 1.0 / tl.sqrt(var + eps)
    # rstd_t <= 1/sqrt(var_t) stays far below 1e30 unless every t is equal (var 0): t - mean_t is 0 then,
    # and the cap keeps (t - mean_t) * rstd_t * W at 0 rather than 0 * inf
    rstd_t = rstd * a64
    return rstd.to(tl.float32), tl.where(rstd_t > 1.0e30, 1.0e30, rstd_t).to(tl.float32)


@triton.jit
def _channel_of(offsets, hidden_per_channel, inv_hpc):
    """offsets // hidden_per_channel without an integer division: a float estimate, corrected by one."""
    q = ((offsets.to(tl.float32) + 0.5) * inv_hpc).to(tl.int32)
    r = offsets - q * hidden_per_channel
    q = tl.where(r < 0, q - 1, q)
    q = tl.where(r >= hidden_per_channel, q + 1, q)
    return q


@triton.jit
def _write_y(Y_ptr, W_ptr, B_ptr, t, offsets, mask, row_start, limit, hidden_per_channel, first_channel,
             mean_t, rstd_t):
    """y = (t - mean_t) * rstd_t * W[c] + B[c] for a [rows, VEC] tile of scaled values t. When a
    channel holds a multiple of VEC elements no row straddles two channels: the channel, W and B are
    then found once per row, not once per element."""
    inv_hpc = 1.0 / hidden_per_channel
    if hidden_per_channel % VEC == 0:
        row_channel = first_channel + _channel_of(row_start, hidden_per_channel, inv_hpc)
        row_mask = row_start < limit
        row_k = rstd_t * tl.load(W_ptr + row_channel, mask=row_mask, other=0.0).to(tl.float32)
        row_b = tl.load(B_ptr + row_channel, mask=row_mask, other=0.0).to(tl.float32)
        y = (t - mean_t) * row_k[:, None] + row_b[:, None]   # (names differ per branch: shapes differ)
    else:
        channel = first_channel + _channel_of(offsets, hidden_per_channel, inv_hpc)
        k = rstd_t * tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        y = (t - mean_t) * k + tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y_ptr + offsets, y, mask=mask)


@triton.jit
def _resident(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel, first_channel, eps,
              BLOCK_SIZE: tl.constexpr):
    """The whole group (hidden_size <= BLOCK_SIZE) loaded once and kept in registers; returns mean, rstd.
    Pivot: the plain mean sum(x / n) (no overflow); the shifted one-pass sums about it cannot cancel, and
    on an all-equal group x - pivot is one few-bit constant, so the variance comes out exactly 0."""
    rows = tl.arange(0, BLOCK_SIZE // VEC)
    offsets = rows[:, None] * VEC + tl.arange(0, VEC)[None, :]
    mask = offsets < hidden_size
    x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    pivot, amax = _sums_max(x * (1.0 / hidden_size), tl.abs(x))
    e, a, inv = _pow2_scale(amax)
    t = tl.where(mask, (x - pivot) * inv, 0.0)
    s1, s2 = _sums(t, t * t)
    mean_t = s1 / hidden_size
    rstd, rstd_t = _finalize(s2 / hidden_size - mean_t * mean_t, a, eps)
    _write_y(Y_ptr, W_ptr, B_ptr, t, offsets, mask, rows * VEC, hidden_size, hidden_per_channel,
             first_channel, mean_t, rstd_t)
    return pivot + mean_t * a, rstd


@triton.jit
def _streamed(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel, first_channel, eps,
              CHUNK: tl.constexpr):
    """A group larger than one block: pass 1 accumulates, block by block, the plain mean and the sums of
    t = (x - pivot) / a and t^2 (pivot: the plain mean of the first block; a: a power of two that only
    grows, earlier sums rescaled exactly when it does); pass 2 re-reads x (from L2 while the group's
    bytes stay there) and writes y in aligned blocks. Returns mean, rstd."""
    rows = tl.arange(0, CHUNK // VEC)
    tile = rows[:, None] * VEC + tl.arange(0, VEC)[None, :]
    first = tl.load(X_ptr + tile, mask=tile < hidden_size, other=0.0).to(tl.float32)
    pivot = tl.sum(tl.sum(first * (1.0 / tl.minimum(hidden_size, CHUNK)), axis=1), axis=0)
    inv_n = 1.0 / hidden_size
    plain = 0.0
    s1 = 0.0
    s2 = 0.0
    e_run = 1
    for start in tl.range(0, hidden_size, CHUNK):
        offsets = start + tile
        mask = offsets < hidden_size
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        part, amax = _sums_max(x * inv_n, tl.abs(x))
        plain += part
        e_blk, a_blk, inv_blk = _pow2_scale(amax)
        e_new = tl.maximum(e_run, e_blk)
        shrink = (tl.maximum(127 + e_run - e_new, 0) << 23).to(tl.float32, bitcast=True)
        t = tl.where(mask, (x - pivot) * ((254 - e_new) << 23).to(tl.float32, bitcast=True), 0.0)
        b1, b2 = _sums(t, t * t)
        s1 = s1 * shrink + b1
        s2 = s2 * shrink * shrink + b2
        e_run = e_new
    a = (e_run << 23).to(tl.float32, bitcast=True)
    inv = ((254 - e_run) << 23).to(tl.float32, bitcast=True)
    mean_t = s1 / hidden_size
    rstd, rstd_t = _finalize(s2 / hidden_size - mean_t * mean_t, a, eps)
    for start in tl.range(0, hidden_size, CHUNK):
        offsets = start + tile
        mask = offsets < hidden_size
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        _write_y(Y_ptr, W_ptr, B_ptr, (x - pivot) * inv, offsets, mask, start + rows * VEC, hidden_size,
                 hidden_per_channel, first_channel, mean_t, rstd_t)
    return plain, rstd


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
    BLOCK: tl.constexpr = BLOCK_SIZE if BLOCK_SIZE > VEC else 2 * VEC   # at least two tile rows
    if BLOCK <= RESIDENT_CAP:   # the group fits: BLOCK_SIZE >= hidden_size, as the launchers pass it
        mean, rstd = _resident(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel,
                               first_channel, eps, BLOCK)
    else:
        # BLOCK_SIZE = 2 * RESIDENT_CAP + c (c < RESIDENT_CAP, from `kernel_block`) asks for blocks of c;
        # any other value (the spec's launcher: a power of two) for STREAM_BLOCK
        CHUNK: tl.constexpr = ((BLOCK - 2 * RESIDENT_CAP if BLOCK < 3 * RESIDENT_CAP else STREAM_BLOCK)
                               if BLOCK > 2 * RESIDENT_CAP else STREAM_BLOCK)
        mean, rstd = _streamed(X_ptr, Y_ptr, W_ptr, B_ptr, hidden_size, hidden_per_channel,
                               first_channel, eps, CHUNK)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch` runs one shape: which path, the block and the warps per program."""

    path: str              # "resident" or "streamed"
    block: int
    num_warps: int

    def __post_init__(self):
        if self.path not in ("resident", "streamed"):
            raise ValueError(f"path must be resident or streamed, got {self.path!r}")
        if self.block & (self.block - 1) or self.num_warps & (self.num_warps - 1) or self.block < 2 * VEC.value:
            raise ValueError(f"block and num_warps must be powers of two, block at least {2 * VEC.value}: {self}")

    @property
    def label(self) -> str:
        return f"{self.path} b{self.block} w{self.num_warps}"


# single_read's rule, from roofline_probe.py on the H200 (reports/single_read_probe): 32 values per thread for a
# resident group, the streamed path with 4,096-element blocks and 8 warps above 16,384 elements.
RESIDENT_ELEMENTS_PER_THREAD = 32
RESIDENT_MAX_WARPS = 16
LARGE_GROUP = Config("streamed", 4096, 8)


def choose(hidden_size: int) -> Config:
    """The configuration `launch` uses for a group of `hidden_size` elements."""
    block = max(2 * VEC.value, triton.next_power_of_2(hidden_size))
    warps = block // (32 * RESIDENT_ELEMENTS_PER_THREAD)
    if block <= RESIDENT_CAP.value and warps <= RESIDENT_MAX_WARPS:
        return Config("resident", block, max(1, warps))
    return LARGE_GROUP


def launch_with(config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's)."""
    n, g, h = shape.batch, shape.num_groups, shape.hidden_size
    if h >= MAX_HIDDEN:
        raise ValueError(f"single_read handles groups of fewer than {MAX_HIDDEN} elements, got {h}")
    if config.path == "resident" and config.block < h:
        raise ValueError(f"a resident block of {config.block} cannot hold a group of {h} elements")
    x = inputs.x.contiguous().view(n, g, h)
    y = outputs["y"].view(n, g, h)
    mean, rstd = outputs["mean"], outputs["rstd"]
    group_norm_forward[(n, g)](
        y, y.stride(0), y.stride(1), x, x.stride(0), x.stride(1),
        mean, mean.stride(0), mean.stride(1), rstd, rstd.stride(0), rstd.stride(1),
        inputs.weight, inputs.bias, h, shape.channels_per_group, shape.eps,
        BLOCK_SIZE=kernel_block(config), num_warps=config.num_warps)


def kernel_block(config: Config) -> int:
    """The BLOCK_SIZE the kernel gets: the resident block, or 2 * RESIDENT_CAP + the streamed block
    (above RESIDENT_CAP, which is how the kernel knows to stream; see `_stream_block`)."""
    if config.path == "resident":
        return config.block
    if config.block >= RESIDENT_CAP.value:
        raise ValueError(f"a streamed block must be under {RESIDENT_CAP.value}, got {config.block}")
    return 2 * RESIDENT_CAP.value + config.block


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `choose`'s configuration for the shape."""
    launch_with(choose(shape.hidden_size), inputs, outputs, shape)
