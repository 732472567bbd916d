"""single_read_coop: x read from device memory once on every shape, small groups packed, large groups split.

It exists because `single_read` and `single_read_tiled` missed issue 14's targets for two reasons
kernel-ab measured: on the seed shapes each program's fixed cost (its load latency, block reductions
and float64 finalize) is paid for one 4-8 KB group, so too few bytes are in flight per multiprocessor;
on the image shapes a group (up to 256 KB) is too large for one multiprocessor, so x was read twice.
This variant answers both with one kernel (`coop_forward`) and its own launcher:

- packed: a program holds `groups_per_program` whole groups in registers ([groups, rows, 8] tile), so
  the fixed costs are paid once per several groups;
- split: a group too large for one program is split over `slices` programs that each hold their slice
  in registers, publish partial statistics, wait for the group's other slices at a per-group counter,
  combine, and write y from the values they still hold. x crosses the memory bus once, y once.
  Programs wait only on programs of their own group, which have neighbouring program ids; the grid is
  persistent and no larger than the GPU holds at once (`resident_programs`), so every program it
  waits on is running, and the launch is cooperative where the GPU offers it (the driver refuses a
  grid that cannot all be resident, rather than letting it hang). The counters only grow (each launch
  adds `slices` per group; a program waits for the next multiple), so nothing is zeroed between calls.
  Triton's interpreter runs programs one after another, so a split group would wait forever there: on
  the CPU the launcher uses one slice per group (the same kernel and arithmetic, the whole group in one
  program) and says so in `plan`'s label.

Statistics (identical in both paths): per slice the sum in float64 (rows of 8 summed in float32, then
in float64), the minimum and maximum, the centre c = fp32(sum / n), and sum((x - c)^2) from values
scaled by a power of two (no overflow or underflow in float32); slices combine exactly in float64
(M2 = sum Q_j + 2 (c_j - mean) (S_j - n_j c_j) + n_j (c_j - mean)^2). An all-equal group is recognised
by min == max: its mean is that value and its variance 0, so y = B exactly. rstd = 1 / sqrt(var + eps)
in float64, once per group. y = (x - mean_hi) * k + (B - mean_lo * k) with k = rstd * W, where
mean_hi + mean_lo is the float64 mean in two float32 parts, so a large mean costs no accuracy. W and B
are loaded once per row of 8 when a channel holds a multiple of 8 elements.

`group_norm_forward` keeps the spec's signature (the IR step and the spec's launcher run it): one
group per program, held in registers when BLOCK_SIZE covers it, else streamed block by block with the
same arithmetic (x then read three times).
"""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

VEC = tl.constexpr(8)        # a tile row: 8 consecutive elements of one group
MAX_HIDDEN = 1 << 24         # the float-reciprocal channel index is exact below this
MAX_POLLS = tl.constexpr(1 << 22)   # a split program gives up waiting after this many polls (seconds)


@triton.jit
def _channel_of(offsets, hidden_per_channel, inv_hpc):
    """offsets // hidden_per_channel without an integer division: a float estimate, corrected by one."""
    q = ((offsets.to(tl.float32) + 0.5) * inv_hpc).to(tl.int32)
    r = offsets - q * hidden_per_channel
    q = tl.where(r < 0, q - 1, q)
    q = tl.where(r >= hidden_per_channel, q + 1, q)
    return q


@triton.jit
def _add_min_max(s, lo, hi, s2, lo2, hi2):
    return s + s2, tl.minimum(lo, lo2), tl.maximum(hi, hi2)


@triton.jit
def _moments(x, mask):
    """Per group of a [G, ROWS, VEC] tile: the sum (rows of VEC in float32, then float64), min and max of
    the unmasked values; two fused reductions (one trip through shared memory, not three)."""
    s, lo, hi = tl.reduce((x, tl.where(mask, x, float("inf")), tl.where(mask, x, -float("inf"))), 2, _add_min_max)
    return tl.reduce((s.to(tl.float64), lo, hi), 1, _add_min_max)


@triton.jit
def _scale_of(lo, hi):
    """(a, 1/a): a power of two near max(|lo|, |hi|), both exact normal floats (exponent clamped to [1, 253])."""
    e = (tl.maximum(tl.abs(lo), tl.abs(hi)).to(tl.int32, bitcast=True) >> 23) & 0xFF
    e = tl.minimum(tl.maximum(e, 1), 253)
    return (e << 23).to(tl.float32, bitcast=True), ((254 - e) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _add_add(a, b, c, d):
    return a + c, b + d


@triton.jit
def _deviations(x, mask, centre, inv):
    """Per group: sum(t) and sum(t^2) for t = (x - centre) * inv, in one fused reduction (rows of VEC in
    float32, then float64 across rows). Deviations from a centre near the mean are exact differences, so
    sum(t) corrects the centre to the mean without the cancellation a plain float32 sum of x has."""
    t = tl.where(mask, (x - centre[:, None, None]) * inv[:, None, None], 0.0)
    t1, t2 = tl.reduce((t, t * t), 2, _add_add)
    return tl.reduce((t1.to(tl.float64), t2.to(tl.float64)), 1, _add_add)


@triton.jit
def _finish(mean, m2, lo, hi, count, eps):
    """(mean_hi, mean_lo, rstd, mean as stored) from the combined float64 mean and M2 of `count` values."""
    equal = (lo == hi) & (mean == mean)          # all one value (NaN keeps its NaN mean)
    mean = tl.where(equal, lo.to(tl.float64), mean)
    m2 = tl.where(equal, 0.0, m2)
    var = m2 / count
    var = tl.where(var < 0.0, 0.0, var)          # rounding below 0; NaN stays NaN
    rstd = 1.0 / tl.sqrt(var + eps)
    mean_hi = mean.to(tl.float32)
    mean_lo = (mean - mean_hi.to(tl.float64)).to(tl.float32)
    return mean_hi, mean_lo, rstd.to(tl.float32)


@triton.jit
def _write(Y_ptr, W_ptr, B_ptr, x, mask, offsets, row_start, row_ok, first_channel, hidden_per_channel,
           mean_hi, mean_lo, rstd):
    """y = (x - mean_hi) * k + (B - mean_lo * k), k = rstd * W[c]; W and B once per row when no row of
    VEC straddles two channels, else per element."""
    inv_hpc = 1.0 / hidden_per_channel
    if hidden_per_channel % VEC == 0:
        # (names differ per branch: their shapes differ)
        row_channel = first_channel[:, None] + _channel_of(row_start, hidden_per_channel, inv_hpc)
        row_k = rstd[:, None] * tl.load(W_ptr + row_channel, mask=row_ok, other=0.0).to(tl.float32)
        row_c = tl.load(B_ptr + row_channel, mask=row_ok, other=0.0).to(tl.float32) - mean_lo[:, None] * row_k
        y = (x - mean_hi[:, None, None]) * row_k[:, :, None] + row_c[:, :, None]
    else:
        element = row_start[:, :, None] + tl.arange(0, VEC)[None, None, :]
        channel = first_channel[:, None, None] + _channel_of(element, hidden_per_channel, inv_hpc)
        k = rstd[:, None, None] * tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32) - mean_lo[:, None, None] * k
        y = (x - mean_hi[:, None, None]) * k + c
    tl.store(Y_ptr + offsets, y, mask=mask)


@triton.jit
def _partials(x, mask, count):
    """A slice's centre c (float32 near its mean), T1 = sum(x - c) and Q = sum((x - c)^2) in float64, and
    its min and max: the corrected two-pass, with the deviations scaled by a power of two so that
    their squares neither overflow nor underflow in float32."""
    s1, lo, hi = _moments(x, mask)
    centre = (s1 / count).to(tl.float32)
    a, inv = _scale_of(lo, hi)
    a64 = a.to(tl.float64)
    t1, t2 = _deviations(x, mask, centre, inv)
    return centre.to(tl.float64), t1 * a64, t2 * a64 * a64, lo, hi


@triton.jit
def _combine(c, t1, q, n, lo, hi, total):
    """mean and M2 of a group from its slices' partials (vectors over slices; n = 0 where absent)."""
    n_safe = tl.where(n > 0, n, 1.0)
    slice_mean = c + t1 / n_safe
    mean = tl.sum(n * c + t1, axis=0) / total
    d = slice_mean - mean
    m2 = tl.sum(tl.where(n > 0, q - t1 * t1 / n_safe + n * d * d, 0.0), axis=0)
    return mean, m2, tl.min(lo, axis=0), tl.max(hi, axis=0)


@triton.jit
def coop_forward(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr,
                 n_rows, num_groups, channels_per_group, hidden_size, slices, slice_len, eps,
                 G: tl.constexpr, ROWS: tl.constexpr, SPLIT: tl.constexpr, SLICE_BLOCK: tl.constexpr):
    """Persistent: program p takes work items p, p + P, ... (P programs). packed (SPLIT False): item i is
    group rows i*G .. i*G+G-1, whole, in registers. split: item i is slice i % slices of group row
    i // slices, and P is a multiple of `slices`, so a program keeps one slice index and its group's
    other slices are its neighbours."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    hidden_per_channel = hidden_size // channels_per_group
    rows = tl.arange(0, ROWS)
    n_items = n_rows * slices if SPLIT else tl.cdiv(n_rows, G)
    for item in tl.range(pid, n_items, nprog):
        if SPLIT:
            group_rows = item // slices + tl.arange(0, G)     # G is 1 here
            s = item % slices
        else:
            group_rows = item * G + tl.arange(0, G)
            s = 0
        start = s * slice_len
        end = tl.minimum(start + slice_len, hidden_size)
        row_start = start + rows[None, :] * VEC + 0 * group_rows[:, None]
        offsets = (group_rows.to(tl.int64) * hidden_size)[:, None, None] + row_start[:, :, None] \
            + tl.arange(0, VEC)[None, None, :]
        mask = ((row_start[:, :, None] + tl.arange(0, VEC)[None, None, :]) < end) \
            & (group_rows < n_rows)[:, None, None]
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        c, t1, q, lo, hi = _partials(x, mask, (end - start).to(tl.float64))
        if SPLIT:
            row = item // slices
            part = Part_ptr + 5 * item
            tl.store(part, tl.sum(c, axis=0))
            tl.store(part + 1, tl.sum(t1, axis=0))
            tl.store(part + 2, tl.sum(q, axis=0))
            tl.store(part + 3, tl.sum(lo, axis=0).to(tl.float64))
            tl.store(part + 4, tl.sum(hi, axis=0).to(tl.float64))
            tl.debug_barrier()
            arrived = tl.atomic_add(Count_ptr + row, 1, sem="release", scope="gpu")
            target = (arrived // slices + 1) * slices
            polls = 0
            while (tl.atomic_add(Count_ptr + row, 0, sem="acquire", scope="gpu") < target) & (polls < MAX_POLLS):
                polls += 1
            tl.debug_barrier()
            j = tl.arange(0, SLICE_BLOCK)
            ok = j < slices
            parts = Part_ptr + 5 * (row * slices + j)
            n_j = tl.where(ok, tl.minimum((j + 1) * slice_len, hidden_size) - j * slice_len, 0).to(tl.float64)
            mean, m2, lo_g, hi_g = _combine(
                tl.load(parts, mask=ok, other=0.0, cache_modifier=".cg"),
                tl.load(parts + 1, mask=ok, other=0.0, cache_modifier=".cg"),
                tl.load(parts + 2, mask=ok, other=0.0, cache_modifier=".cg"), n_j,
                tl.load(parts + 3, mask=ok, other=float("inf"), cache_modifier=".cg").to(tl.float32),
                tl.load(parts + 4, mask=ok, other=-float("inf"), cache_modifier=".cg").to(tl.float32),
                hidden_size.to(tl.float64))
            mean_hi, mean_lo, rstd = _finish(mean, m2, lo_g, hi_g, hidden_size.to(tl.float64), eps)
            rstd = tl.where(polls < MAX_POLLS, rstd, float("nan"))   # a barrier that timed out: NaN, not a hang
            mean_hi = mean_hi + tl.zeros([G], tl.float32)
            mean_lo = mean_lo + tl.zeros([G], tl.float32)
            rstd = rstd + tl.zeros([G], tl.float32)
            stats_mask = (group_rows < n_rows) & (s == 0)
        else:
            # one slice: the combination reduces to mean = c + T1 / n, M2 = Q - T1^2 / n
            count = hidden_size.to(tl.float64)
            mean_hi, mean_lo, rstd = _finish(c + t1 / count, q - t1 * t1 / count, lo, hi, count, eps)
            stats_mask = group_rows < n_rows
        first_channel = (group_rows % num_groups) * channels_per_group
        row_ok = (row_start < end) & (group_rows < n_rows)[:, None]
        _write(Y_ptr, W_ptr, B_ptr, x, mask, offsets, row_start, row_ok, first_channel, hidden_per_channel,
               mean_hi, mean_lo, rstd)
        tl.store(Mean_ptr + group_rows, mean_hi + mean_lo, mask=stats_mask)
        tl.store(RSTD_ptr + group_rows, rstd, mask=stats_mask)


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
    first_channel = group_idx * channels_per_group + tl.zeros([1], tl.int32)
    ROWS: tl.constexpr = BLOCK_SIZE // VEC if BLOCK_SIZE >= 2 * VEC else 2
    rows = tl.arange(0, ROWS)[None, :]
    lanes = tl.arange(0, VEC)[None, None, :]
    count = hidden_size.to(tl.float64)
    if hidden_size <= ROWS * VEC:
        # the group in registers: read once
        offsets = rows[:, :, None] * VEC + lanes
        mask = offsets < hidden_size
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        c, t1, q, lo, hi = _partials(x, mask, count)
        mean_hi, mean_lo, rstd = _finish(c + t1 / count, q - t1 * t1 / count, lo, hi, count, eps)
        _write(Y_ptr, W_ptr, B_ptr, x, mask, offsets, rows * VEC, rows * VEC < hidden_size, first_channel,
               hidden_per_channel, mean_hi, mean_lo, rstd)
    else:
        # streamed with the same arithmetic: sum, min and max; squares about the centre; then y
        s1 = tl.zeros([1], tl.float64)
        lo = tl.full([1], float("inf"), tl.float32)
        hi = tl.full([1], -float("inf"), tl.float32)
        for start in tl.range(0, hidden_size, ROWS * VEC):
            offsets = start + rows[:, :, None] * VEC + lanes
            mask = offsets < hidden_size
            b1, blo, bhi = _moments(tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32), mask)
            s1 += b1
            lo = tl.minimum(lo, blo)
            hi = tl.maximum(hi, bhi)
        centre = (s1 / count).to(tl.float32)
        a, inv = _scale_of(lo, hi)
        t1 = tl.zeros([1], tl.float64)
        t2 = tl.zeros([1], tl.float64)
        for start in tl.range(0, hidden_size, ROWS * VEC):
            offsets = start + rows[:, :, None] * VEC + lanes
            mask = offsets < hidden_size
            b1, b2 = _deviations(tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32), mask, centre, inv)
            t1 += b1
            t2 += b2
        a64 = a.to(tl.float64)
        t1 = t1 * a64
        mean_hi, mean_lo, rstd = _finish(centre.to(tl.float64) + t1 / count, t2 * a64 * a64 - t1 * t1 / count,
                                         lo, hi, count, eps)
        for start in tl.range(0, hidden_size, ROWS * VEC):
            offsets = start + rows[:, :, None] * VEC + lanes
            mask = offsets < hidden_size
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            _write(Y_ptr, W_ptr, B_ptr, x, mask, offsets, start + rows * VEC, start + rows * VEC < hidden_size,
                   first_channel, hidden_per_channel, mean_hi, mean_lo, rstd)
    stats = tl.arange(0, 1)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride + stats, mean_hi + mean_lo)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride + stats, rstd)


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch` runs one shape. packed: `groups` whole groups per program, each in `rows` rows of 8.
    split: `slices` programs per group, each holding `rows` rows of 8. `programs_per_sm` caps the
    persistent grid (0: as many as the GPU holds at once); `cooperative` asks the driver for a
    cooperative launch (split only)."""

    path: str
    rows: int
    num_warps: int
    groups: int = 1
    slices: int = 1
    programs_per_sm: int = 0
    cooperative: bool = False

    def __post_init__(self):
        if self.path not in ("packed", "split"):
            raise ValueError(f"path must be packed or split, got {self.path!r}")
        for name in ("rows", "num_warps", "groups"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")
        if self.rows < 2 or self.slices < 1 or (self.path == "split" and self.groups != 1):
            raise ValueError(f"rows must be at least 2, slices at least 1, and split takes one group: {self}")

    @property
    def label(self) -> str:
        what = f"g{self.groups}" if self.path == "packed" else f"s{self.slices}"
        extra = (f" p{self.programs_per_sm}" if self.programs_per_sm else "") + (" coop" if self.cooperative else "")
        return f"{self.path} {what} r{self.rows} w{self.num_warps}{extra}"


# Chosen from benchmarks/roofline_probe.py on the H200 (README, "What kernel-ab found").
PACKED_ELEMENTS = 8192       # elements a packed program holds (groups * group size)
PACKED_PER_THREAD = 16       # elements per thread of a packed program
SPLIT_ROWS = 1024            # rows of 8 a split program holds (8,192 elements)
SPLIT_WARPS = 8
ON_CHIP = 16384              # the largest group one program holds; larger groups are split


def choose(hidden_size: int, interpreted: bool = False) -> Config:
    """The configuration `launch` uses for groups of `hidden_size` elements."""
    block = max(2 * VEC.value, triton.next_power_of_2(hidden_size))
    if interpreted or block <= ON_CHIP:
        groups = 1 if interpreted else max(1, PACKED_ELEMENTS // block)
        warps = max(1, min(16, groups * block // (32 * PACKED_PER_THREAD)))
        return Config("packed", block // VEC.value, warps, groups=groups)
    return Config("split", SPLIT_ROWS, SPLIT_WARPS, slices=-(-hidden_size // (SPLIT_ROWS * VEC.value)))


_WORKSPACE: dict = {}     # (device, what) -> tensor, grown on demand: the counters must persist across calls
_RESIDENT: dict = {}      # (device, config, dtype) -> programs the GPU holds at once


def _workspace(device, what: str, dtype, numel: int) -> torch.Tensor:
    key = (str(device), what)
    have = _WORKSPACE.get(key)
    if have is None or have.numel() < numel:
        grown = torch.zeros(max(numel, 2 * (have.numel() if have is not None else 0)), dtype=dtype, device=device)
        if have is not None:
            grown[:have.numel()].copy_(have)
        _WORKSPACE[key] = have = grown
    return have


def resident_programs(compiled, num_warps: int, device) -> int:
    """How many programs of `compiled` the GPU holds at once (registers, warps, shared memory per SM)."""
    props = torch.cuda.get_device_properties(device)
    threads = getattr(props, "max_threads_per_multi_processor", 2048)
    regs = getattr(props, "regs_per_multiprocessor", 65536)
    smem = getattr(props, "shared_memory_per_multiprocessor", 233472)
    warps_by_threads = threads // 32 // num_warps
    per_warp = -(-max(compiled.n_regs, 1) * 32 // 256) * 256
    by_regs = (regs // per_warp) // num_warps
    by_smem = smem // (compiled.metadata.shared + 1024)
    return props.multi_processor_count * max(1, min(32, warps_by_threads, by_regs, by_smem))


def plan(config: Config, shape, device) -> tuple[Config, str]:
    """The configuration that will run (split becomes one slice under the interpreter) and its label."""
    if device.type == "cpu" and config.path == "split":
        return choose(shape.hidden_size, interpreted=True), "interpreter: one program per group"
    return config, config.label


def launch_with(config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's)."""
    n_rows, h = shape.batch * shape.num_groups, shape.hidden_size
    if h >= MAX_HIDDEN:
        raise ValueError(f"single_read_coop handles groups of fewer than {MAX_HIDDEN} elements, got {h}")
    x = inputs.x.contiguous()
    device = x.device
    config, _ = plan(config, shape, device)
    split = config.path == "split"
    slice_len = config.rows * VEC.value if split else h
    if split and config.slices * slice_len < h or not split and config.rows * VEC.value < h:
        raise ValueError(f"{config.label} does not cover groups of {h} elements")
    slices = config.slices if split else 1
    mean, rstd = outputs["mean"], outputs["rstd"]
    if not (mean.is_contiguous() and rstd.is_contiguous() and outputs["y"].is_contiguous()):
        raise ValueError("single_read_coop writes contiguous y, mean and rstd")
    parts = _workspace(device, "parts", torch.float64, 5 * n_rows * slices) if split else mean
    # one set of counters per slice count: every launch adds `slices` to each row's counter, so each
    # stays a multiple of it; a counter shared with another slice count would be off and wait forever
    counts = _workspace(device, f"counts{slices}", torch.int32, n_rows) if split else mean
    n_items = n_rows * slices if split else -(-n_rows // config.groups)
    args = (outputs["y"], x, mean, rstd, inputs.weight, inputs.bias, parts, counts, n_rows, shape.num_groups,
            shape.channels_per_group, h, slices, slice_len, shape.eps)
    constants = dict(G=config.groups, ROWS=config.rows, SPLIT=split,
                     SLICE_BLOCK=max(2, triton.next_power_of_2(slices)), num_warps=config.num_warps)
    if split and config.cooperative:
        constants["launch_cooperative_grid"] = True
    grid = n_items
    if device.type == "cuda":
        key = (str(device), config, x.dtype)
        if key not in _RESIDENT:
            compiled = coop_forward.warmup(*args, grid=(1,), **constants)
            compiled._init_handles()
            _RESIDENT[key] = resident_programs(compiled, config.num_warps, device)
        cap = _RESIDENT[key]
        if config.programs_per_sm < 0 and not split:
            cap = n_items
        elif config.programs_per_sm > 0:
            cap = min(cap, config.programs_per_sm * torch.cuda.get_device_properties(device).multi_processor_count)
        grid = min(n_items, cap - cap % slices)
        if grid < slices:
            raise ValueError(f"{config.label}: the GPU holds {cap} programs at once, fewer than a group's {slices} slices")
    coop_forward[(grid,)](*args, **constants)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `choose`'s configuration for the shape."""
    launch_with(choose(shape.hidden_size), inputs, outputs, shape)
