"""single_read_coop: x read from device memory once on every shape; large groups split over programs.

It exists because `single_read` and `single_read_tiled` missed issue 14's targets, and kernel-ab said
why: their [rows, 8] tile took 168 registers a thread (6 groups in flight per multiprocessor; a plain
block of the same group needs 66-79), and a group too large for one program (the image shapes) was
read twice. One kernel (`coop_forward`) and its own launcher (`choose`) answer both:

- resident: one program per group, held in registers as a [rows, width] tile whose rows each lie in one
  channel (W, B and rstd * W once per row), the warps side by side along a row (float32: 64 values a
  thread, one warp for the seed's 2,048-element groups; 16-bit: 32 a thread);
- split: a group larger than ON_CHIP is split over programs of 8,192 elements that publish partial
  statistics, wait for the group's other slices at a per-group counter, combine, and write y from the
  values they still hold: x crosses the memory bus once. A program waits only on its group's, which
  have neighbouring ids; the grid is persistent and no larger than the GPU holds at once
  (`coop_sync.resident_programs`; split programs are capped at SPLIT_REGISTERS, so that 4 float32 or
  5 bfloat16 programs fit an SM), so every program waited on is running. The counters only grow (each
  launch adds `slices` per group; one set per slice count and row count, so a program reads the
  launch's epoch once and knows every target: its arrivals need no answer), so nothing is zeroed
  between calls; a wait past MAX_POLLS polls writes NaN (the numerics say so), not a hang. Triton's
  interpreter runs programs one after another, where slices would wait forever: on the CPU a split
  configuration runs the spec entry, streaming the same blocks with the same arithmetic.

16-bit x is loaded and held as 32-bit words, two values each (PAIR): held as 16-bit values the compiler
gives each its own register, so a bfloat16 slice took as many registers as a float32 one.

Statistics: one pass about a centre c = x0, the slice's first value: T1 = sum(x - c) and
Q = sum((x - c)^2), x - c in float32 (exact for values near c, so a large mean costs nothing), squared
and summed in float64 (no overflow on huge inputs, no underflow on tiny ones); slices combine in float64
(Chan). An all-equal slice has x - c = 0: its mean is exact and its variance 0, so y = B exactly.
rstd in float64, once per group; y = (x - mean_hi) * k + (B - mean_lo * k), k = rstd * W, with the
float64 mean in two float32 parts, so a large mean costs y no accuracy.

Measured on the H200: README, "What kernel-ab found", and reports/h200/roofline_coop.
`group_norm_forward` keeps the spec's signature (the IR step and the spec's launcher run it): one group
per program, in registers when BLOCK_SIZE covers it, else streamed (x read twice). The variant's own
backward is in single_read_coop_backward.py.
"""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from variants.group_norm.coop_sync import (arrive_and_wait_for, launch_epoch, narrow_pair, persistent_grid, widen_again,
                                           widen_pair, workspace)
# its own backward, x and dy read once (the family takes these two names as the variant's backward)
from variants.group_norm.single_read_coop_backward import coop_backward as backward_kernel  # noqa: F401
from variants.group_norm.single_read_coop_backward import launch_coop_backward as backward_launcher  # noqa: F401

MAX_HIDDEN = 1 << 24                 # a group this large or larger is refused (int32 offsets, counters)


@triton.jit
def _add_add(a, b, c, d):
    return a + c, b + d


@triton.jit
def _row_sums(x, c, mask, EVEN: tl.constexpr):
    """Over the tile's rows (a thread holds the same columns of every row: no shuffles), float64 sums of
    d = x - c and of d^2 (see `_partials`)."""
    d = x - c
    if not EVEN:
        d = tl.where(mask, d, 0.0)
    d = d.to(tl.float64)
    return tl.reduce((d, d * d), 0, _add_add)


@triton.jit
def _partials(x, x0, mask, EVEN: tl.constexpr, PAIR: tl.constexpr, DTYPE: tl.constexpr):
    """A slice's centre c = x0 (its first value), T1 = sum(x - c) and Q = sum((x - c)^2), in one pass:
    x - c in float32, squared and summed in float64 (no overflow on huge inputs, no underflow on tiny
    ones). M2 = Q - T1^2 / n then cancels only as far as c lies from the mean in units of the spread,
    and float64 has 29 bits to spare for that; x - c is exact for values near c (a large mean costs
    nothing) and otherwise off by half a float32 unit of |x - c|, noise that averages out of M2 but less
    out of the mean: a float32 mean of values around 0 lands 2-5 times further from float64 than with a
    centre near the mean (README, "What kernel-ab found"; still within torch's reach). An all-equal slice has x - c = 0: its mean is exact and its variance 0, so y = B exactly. x as
    `_load_slice` gave it (PAIR: 16-bit values of DTYPE two to a 32-bit word)."""
    c = x0
    if PAIR:
        even, odd = widen_pair(x, DTYPE, False)
        t1, q = _row_sums(even, c, mask, EVEN)
        t1_odd, q_odd = _row_sums(odd, c, mask, EVEN)
        t1, q = t1 + t1_odd, q + q_odd
    else:
        t1, q = _row_sums(x.to(tl.float32), c, mask, EVEN)
    t1, q = tl.reduce((t1, q), 0, _add_add)
    return c.to(tl.float64), t1, q


@triton.jit
def _finish(mean, m2, inv_count, eps):
    """(mean_hi, mean_lo, rstd) from a group's float64 mean and M2 of 1 / inv_count values; rstd in
    float64, once per group."""
    var = m2 * inv_count
    var = tl.where(var < 0.0, 0.0, var)          # rounding below 0; NaN stays NaN
    rstd = 1.0 / tl.sqrt(var + eps)
    mean_hi = mean.to(tl.float32)
    return mean_hi, (mean - mean_hi.to(tl.float64)).to(tl.float32), rstd.to(tl.float32)


@triton.jit
def _normalize(Y_ptr, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, EVEN: tl.constexpr, PAIR: tl.constexpr):
    """y = (x - mean_hi) * k + (B - mean_lo * k), k = rstd * W: mean_hi + mean_lo is the float64 mean in
    two float32 parts, so a large mean costs y no accuracy. x as `_load_slice` gave it (PAIR: two
    16-bit values a word, and y is stored so)."""
    k = rstd * w
    shift = b - mean_lo * k
    if PAIR:
        even, odd = widen_pair(x, Y_ptr.dtype.element_ty, True)
        words = narrow_pair((even - mean_hi) * k + shift, (odd - mean_hi) * k + shift, Y_ptr.dtype.element_ty)
        if EVEN:
            tl.store(Y_ptr.to(tl.pointer_type(tl.uint32)) + offsets, words)
        else:
            tl.store(Y_ptr.to(tl.pointer_type(tl.uint32)) + offsets, words, mask=mask)
        return
    y = (widen_again(x) - mean_hi) * k + shift
    if EVEN:
        tl.store(Y_ptr + offsets, y)
    else:
        tl.store(Y_ptr + offsets, y, mask=mask)


@triton.jit
def _load_slice(X_ptr, row, start, hidden_size, ROWS: tl.constexpr, WIDTH: tl.constexpr, EVEN: tl.constexpr,
                PAIR: tl.constexpr):
    """The slice [start, start + ROWS * WIDTH) of group row `row` as a [ROWS, WIDTH] tile: x in its dtype
    (PAIR: a [ROWS, WIDTH / 2] tile of 32-bit words, each two 16-bit values, so that the compiler holds
    them packed, not one to a register), the slice's first value (an L1 hit, the centre of its
    statistics), and the tile's offsets and mask."""
    if PAIR:
        offsets = (start + tl.arange(0, ROWS)[:, None] * WIDTH) // 2 + tl.arange(0, WIDTH // 2)[None, :]
        mask = offsets < hidden_size // 2
    else:
        offsets = start + tl.arange(0, ROWS)[:, None] * WIDTH + tl.arange(0, WIDTH)[None, :]
        mask = offsets < hidden_size
    base = X_ptr + row.to(tl.int64) * hidden_size
    if PAIR and EVEN:
        x = tl.load(base.to(tl.pointer_type(tl.uint32)) + offsets)
    elif PAIR:
        x = tl.load(base.to(tl.pointer_type(tl.uint32)) + offsets, mask=mask, other=0)
    elif EVEN:
        x = tl.load(base + offsets)
    else:
        x = tl.load(base + offsets, mask=mask, other=0.0)
    return x, tl.load(base + start).to(tl.float32), offsets, mask


@triton.jit
def _load_affine(W_ptr, B_ptr, start, hidden_size, first_channel, offsets, mask, HPC: tl.constexpr,
                 ROWS: tl.constexpr, WIDTH: tl.constexpr, EVEN: tl.constexpr):
    """W and B for the slice `_load_slice` gave (offsets and mask from it). With ROWS > 1 each tile row
    lies in one channel (WIDTH divides HPC): W and B are [ROWS, 1], and rstd * W is computed once per
    row, not per element; with ROWS == 1 (never PAIR) the channel of every element is offset // HPC (a
    shift or a multiply: HPC is a compile-time constant)."""
    if ROWS > 1:
        channel = first_channel + (start + tl.arange(0, ROWS)[:, None] * WIDTH) // HPC
        channel_ok = start + tl.arange(0, ROWS)[:, None] * WIDTH < hidden_size
    else:
        channel = first_channel + offsets // HPC
        channel_ok = mask
    if EVEN:
        w = tl.load(W_ptr + channel).to(tl.float32)
        b = tl.load(B_ptr + channel).to(tl.float32)
    else:
        w = tl.load(W_ptr + channel, mask=channel_ok, other=0.0).to(tl.float32)
        b = tl.load(B_ptr + channel, mask=channel_ok, other=0.0).to(tl.float32)
    return w, b


@triton.jit
def _combine(Part_ptr, row, slices, hidden_size, inv_count, inv_last, SLICE_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """A group's float64 mean and M2 from its slices' partials (Chan's combination, in float64:
    M2 = sum(Q_j - T1_j^2 / n_j + n_j (mean_j - mean)^2), mean_j = c_j + T1_j / n_j). The reciprocals
    of the count and of the last slice's n_j come from before the wait: a float64 division takes
    hundreds of cycles, and every cycle after the wait is a cycle of the group's critical path."""
    j = tl.arange(0, SLICE_BLOCK)
    ok = j < slices
    part = Part_ptr + 3 * (row * slices + j)
    c = tl.load(part, mask=ok, other=0.0, cache_modifier=".cg")
    t1 = tl.load(part + 1, mask=ok, other=0.0, cache_modifier=".cg")
    q = tl.load(part + 2, mask=ok, other=0.0, cache_modifier=".cg")
    n = tl.where(ok, tl.minimum((j + 1) * BLOCK, hidden_size) - j * BLOCK, 1).to(tl.float64)
    inv_n = tl.where(j == slices - 1, inv_last, 1.0 / BLOCK)
    mean = tl.sum(n * c + t1, axis=0) * inv_count
    d = c + t1 * inv_n - mean
    return mean, tl.sum(tl.where(ok, q - t1 * t1 * inv_n + n * d * d, 0.0), axis=0)


@triton.jit
def coop_forward(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr,
                 n_rows, num_groups, channels_per_group, hidden_size, slices, eps,
                 BLOCK: tl.constexpr, HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr,
                 SPLIT: tl.constexpr, SLICE_BLOCK: tl.constexpr, PAIR: tl.constexpr):
    """resident (SPLIT False): program r normalizes group row r, held in registers (hidden <= BLOCK).
    split: persistent; program p takes work items p, p + P, ... (P programs, a multiple of `slices`);
    item i is slice i % slices (BLOCK elements) of group row i // slices, so a program keeps its slice
    index and its group's other slices are its neighbours, running at the same time."""
    inv_count = 1.0 / hidden_size.to(tl.float64)
    WIDTH: tl.constexpr = BLOCK // ROWS
    if SPLIT:
        inv_last = 1.0 / (hidden_size - (slices - 1) * BLOCK).to(tl.float64)
        target = (launch_epoch(Count_ptr, tl.program_id(0) // slices, slices) + 1) * slices
        for item in tl.range(tl.program_id(0), n_rows * slices, tl.num_programs(0)):
            row = item // slices
            s = item % slices
            x, x0, offsets, mask = _load_slice(X_ptr, row, s * BLOCK, hidden_size, ROWS, WIDTH, EVEN, PAIR)
            w, b = _load_affine(W_ptr, B_ptr, s * BLOCK, hidden_size, (row % num_groups) * channels_per_group,
                                offsets, mask, HPC, ROWS, WIDTH, EVEN)
            c, t1, q = _partials(x, x0, mask, EVEN, PAIR, X_ptr.dtype.element_ty)
            part = Part_ptr + 3 * item
            tl.store(part, c)
            tl.store(part + 1, t1)
            tl.store(part + 2, q)
            in_time = arrive_and_wait_for(Count_ptr, row, target)
            mean, m2 = _combine(Part_ptr, row, slices, hidden_size, inv_count, inv_last, SLICE_BLOCK, BLOCK)
            mean_hi, mean_lo, rstd = _finish(mean, m2, inv_count, eps)
            rstd = tl.where(in_time, rstd, float("nan"))   # a barrier that timed out: NaN, not a hang
            _normalize(Y_ptr + row.to(tl.int64) * hidden_size, x, offsets, mask, w, b, mean_hi, mean_lo,
                       rstd, EVEN, PAIR)
            if s == 0:
                tl.store(Mean_ptr + row, mean_hi)
                tl.store(RSTD_ptr + row, rstd)
    else:
        row = tl.program_id(0)
        x, x0, offsets, mask = _load_slice(X_ptr, row, 0, hidden_size, ROWS, WIDTH, EVEN, PAIR)
        w, b = _load_affine(W_ptr, B_ptr, 0, hidden_size, (row % num_groups) * channels_per_group, offsets, mask,
                            HPC, ROWS, WIDTH, EVEN)
        c, t1, q = _partials(x, x0, mask, EVEN, PAIR, X_ptr.dtype.element_ty)
        # one slice: the combination reduces to mean = c + T1 / n, M2 = Q - T1^2 / n
        mean_hi, mean_lo, rstd = _finish(c + t1 * inv_count, q - t1 * t1 * inv_count, inv_count, eps)
        _normalize(Y_ptr + row.to(tl.int64) * hidden_size, x, offsets, mask, w, b, mean_hi, mean_lo,
                   rstd, EVEN, PAIR)
        tl.store(Mean_ptr + row, mean_hi)
        tl.store(RSTD_ptr + row, rstd)


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
    lanes = tl.arange(0, BLOCK_SIZE)[None, :]
    count = hidden_size.to(tl.float64)
    if hidden_size <= BLOCK_SIZE:
        # the group in registers: read once
        mask = lanes < hidden_size
        channel = first_channel + lanes // hidden_per_channel
        x = tl.load(X_ptr + lanes, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        c, t1, q = _partials(x, tl.load(X_ptr).to(tl.float32), mask, False, False, tl.float32)
        mean_hi, mean_lo, rstd = _finish(c + t1 / count, q - t1 * t1 / count, 1.0 / count, eps)
        _normalize(Y_ptr, x, lanes, mask, w, b, mean_hi, mean_lo, rstd, False, False)
    else:
        # streamed, block by block, with the block statistics combined as the slices' are (x read twice)
        n = tl.zeros([], tl.float64)
        mean = tl.zeros([], tl.float64)
        m2 = tl.zeros([], tl.float64)
        for start in tl.range(0, hidden_size, BLOCK_SIZE):
            offsets = start + lanes
            mask = offsets < hidden_size
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.minimum(BLOCK_SIZE, hidden_size - start).to(tl.float64)
            c, t1, q = _partials(x, tl.load(X_ptr + start).to(tl.float32), mask, False, False, tl.float32)
            total = n + n_b
            d = c + t1 / n_b - mean
            mean = mean + d * (n_b / total)
            m2 = m2 + (q - t1 * t1 / n_b) + d * d * (n * n_b / total)
            n = total
        mean_hi, mean_lo, rstd = _finish(mean, m2, 1.0 / count, eps)
        for start in tl.range(0, hidden_size, BLOCK_SIZE):
            offsets = start + lanes
            mask = offsets < hidden_size
            channel = first_channel + offsets // hidden_per_channel
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
            _normalize(Y_ptr, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, False, False)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean_hi)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch` runs one shape: `block` elements per program (a power of two), `num_warps`; split:
    a group over ceil(hidden / block) programs that wait for each other (else one program per group,
    block >= hidden); `max_registers` caps the registers a thread may take (more programs in flight per
    SM), None leaves them to the compiler."""

    block: int
    num_warps: int
    split: bool = False
    max_registers: int | None = None

    def __post_init__(self):
        for name in ("block", "num_warps"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")

    @property
    def label(self) -> str:
        cap = f" r{self.max_registers}" if self.max_registers else ""
        return f"{'split' if self.split else 'resident'} b{self.block} w{self.num_warps}{cap}"


# Chosen from benchmarks/coop_probe.py on the H200 (reports/h200/roofline_coop/probe/README.md), by element
# size in bytes. Resident: elements a thread holds (float32 64: 2,048-element groups in one warp;
# bfloat16 32: two warps, 56 registers). Split: registers a thread may take, the fewest without spills
# (float32 128: 4 programs an SM where 160 would fit 3; bfloat16 96: 5 programs an SM).
RESIDENT_PER_THREAD = {4: 64, 2: 32}
ON_CHIP = 16384              # the largest group one program holds; larger groups are split
SPLIT_BLOCK = 8192
SPLIT_WARPS = 4
SPLIT_REGISTERS = {4: 128, 2: 96}
TILE_WIDTH_PER_WARP = 256    # 32 threads of 16-byte bfloat16 vectors: narrower rows put warps across rows


def choose(hidden_size: int, element_size: int = 4) -> Config:
    """The configuration `launch` uses for groups of `hidden_size` elements of `element_size` bytes."""
    block = triton.next_power_of_2(hidden_size)
    if block <= ON_CHIP:
        per_thread = RESIDENT_PER_THREAD.get(element_size, 64)
        return Config(block, max(1, min(16, block // (32 * per_thread))))
    return Config(SPLIT_BLOCK, SPLIT_WARPS, split=True, max_registers=SPLIT_REGISTERS.get(element_size, 128))


def tile_rows(block: int, hidden_per_channel: int, num_warps: int) -> int:
    """Rows of the [rows, block // rows] tile: several when a row of TILE_WIDTH_PER_WARP * num_warps
    elements (every warp side by side along the row, so a thread holds the same columns of every row
    and sums them without shuffles) lies in one channel, else 1 (W and B per element)."""
    width = TILE_WIDTH_PER_WARP * num_warps
    if width <= block and hidden_per_channel % width == 0:
        return block // width
    return 1


def describe(config: Config, device) -> str:
    """What runs for `config` on `device`."""
    if device.type == "cpu" and config.split:
        return f"{config.label}, interpreted as one program per group streaming blocks of {config.block}"
    return config.label


def _streamed(config: Config, x, inputs, outputs: dict, shape) -> None:
    """Under the interpreter, whose programs run one after another (split slices would wait for each
    other forever): the spec entry, one program per group, streaming blocks of `config.block` with the
    slices' arithmetic and combination."""
    n, g, h = shape.batch, shape.num_groups, shape.hidden_size
    xv, y = x.view(n, g, h), outputs["y"].view(n, g, h)
    mean, rstd = outputs["mean"], outputs["rstd"]
    group_norm_forward[(n, g)](y, y.stride(0), y.stride(1), xv, xv.stride(0), xv.stride(1),
                               mean, mean.stride(0), mean.stride(1), rstd, rstd.stride(0), rstd.stride(1),
                               inputs.weight, inputs.bias, h, shape.channels_per_group, shape.eps,
                               BLOCK_SIZE=config.block, num_warps=config.num_warps)


def kernel_arguments(config: Config, x, inputs, outputs: dict, shape) -> tuple[tuple, dict]:
    """coop_forward's arguments and compile-time constants for `shape` with `config` (x contiguous)."""
    n_rows, h, hpc = shape.batch * shape.num_groups, shape.hidden_size, shape.hidden_size // shape.channels_per_group
    device = x.device
    slices = -(-h // config.block) if config.split else 1
    if not config.split and config.block < h:
        raise ValueError(f"{config.label} cannot hold a group of {h} elements in one program")
    mean, rstd = outputs["mean"], outputs["rstd"]
    if not (mean.is_contiguous() and rstd.is_contiguous() and outputs["y"].is_contiguous()):
        raise ValueError("single_read_coop writes contiguous y, mean and rstd")
    parts = workspace(device, "parts", torch.float64, 3 * n_rows * slices) if config.split else mean
    # one set of counters per slice count and row count: every launch adds `slices` to each row's
    # counter, so all of a set's rows stay at the same multiple of it (`launch_epoch`); a counter shared
    # with another slice count would be off and wait forever, one shared with fewer rows would lag
    counts = workspace(device, f"counts{slices}x{n_rows}", torch.int32, n_rows) if config.split else mean
    args = (outputs["y"], x, mean, rstd, inputs.weight, inputs.bias, parts, counts, n_rows, shape.num_groups,
            shape.channels_per_group, h, slices, shape.eps)
    rows = tile_rows(config.block, hpc, config.num_warps)
    # 16-bit values two to a word: whole words per row (h even), tile rows within a channel (a word
    # never straddles two), and the word loads and stores aligned
    pair = (x.element_size() == 2 and h % 2 == 0 and rows > 1
            and x.data_ptr() % 4 == 0 and outputs["y"].data_ptr() % 4 == 0)
    constants = dict(BLOCK=config.block, HPC=hpc, ROWS=rows, EVEN=h % config.block == 0, SPLIT=config.split,
                     SLICE_BLOCK=max(2, triton.next_power_of_2(slices)), PAIR=pair, num_warps=config.num_warps)
    if config.max_registers:
        constants["maxnreg"] = config.max_registers
    return args, constants


def launch_with(config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's)."""
    n_rows, h = shape.batch * shape.num_groups, shape.hidden_size
    if h >= MAX_HIDDEN:
        raise ValueError(f"single_read_coop handles groups of fewer than {MAX_HIDDEN} elements, got {h}")
    x = inputs.x.contiguous()
    if x.device.type == "cpu" and config.split:
        _streamed(config, x, inputs, outputs, shape)
        return
    args, constants = kernel_arguments(config, x, inputs, outputs, shape)
    grid = n_rows
    if config.split:
        key = ("forward", str(x.device), config, x.dtype, constants["HPC"], constants["EVEN"], constants["PAIR"])
        slices = -(-h // config.block)
        grid = persistent_grid(coop_forward, args, constants, key, n_rows * slices, slices, config.label)
    coop_forward[(grid,)](*args, **constants)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `choose`'s configuration for the shape."""
    launch_with(choose(shape.hidden_size, inputs.x.element_size()), inputs, outputs, shape)
