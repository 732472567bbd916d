"""single_read_coop: x read from device memory once on every shape, large groups split over programs.
A group is held in registers as a [rows, width] tile whose rows each lie in one channel (W, B, rstd * W
once a row); a group over ON_CHIP is split over programs that publish partial statistics, wait for their
group's other slices at a counter (coop_sync) and write y from what they hold. Statistics: coop_math; its
launcher: coop_launch; its backward: single_read_coop_backward.py; measured: docs/findings.md."""
from __future__ import annotations

import triton
import triton.language as tl

from variants.group_norm.coop_launch import (  # noqa: F401
    MAX_HIDDEN, ON_CHIP, OVERLAP_REGISTERS, OVERLAP_SLICES_PER_SM, REREAD_BLOCK, REREAD_WARPS,
    RESIDENT_PER_THREAD, SPLIT_BLOCK, SPLIT_REGISTERS, SPLIT_WARPS, Config, choose, chosen, describe, kernel_arguments,
    run, tile_rows)
from variants.group_norm.coop_math import centre, finish, load_affine, load_chunk, normalize, partials, tile
from variants.group_norm.coop_sync import arrive, launch_epoch, wait_for
# its own backward, x and dy read once (the family takes these two names as the variant's backward)
from variants.group_norm.single_read_coop_backward import coop_backward as backward_kernel  # noqa: F401
from variants.group_norm.single_read_coop_backward import launch_coop_backward as backward_launcher  # noqa: F401


@triton.jit
def _load_slice(X_ptr, row, start, hidden_size, live, ROWS: tl.constexpr, WIDTH: tl.constexpr, EVEN: tl.constexpr,
                PAIR: tl.constexpr):
    """The slice [start, start + ROWS * WIDTH) of group row `row` (nothing read unless `live`), as
    `load_chunk` gives it, and the centre of its statistics (`centre`)."""
    base = X_ptr + row.to(tl.int64) * hidden_size
    x, offsets, mask = load_chunk(base, start, hidden_size, live, ROWS, WIDTH, EVEN, PAIR, "")
    return x, centre(base, start, hidden_size, live), offsets, mask


@triton.jit
def _combine(Part_ptr, row, slices, hidden_size, inv_count, inv_last, SLICE_BLOCK: tl.constexpr, SLICE: tl.constexpr):
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
    n = tl.where(ok, tl.minimum((j + 1) * SLICE, hidden_size) - j * SLICE, 1).to(tl.float64)
    inv_n = tl.where(j == slices - 1, inv_last, 1.0 / SLICE)
    mean = tl.sum(n * c + t1, axis=0) * inv_count
    d = c + t1 * inv_n - mean
    return mean, tl.sum(tl.where(ok, q - t1 * t1 * inv_n + n * d * d, 0.0), axis=0)


@triton.jit
def _publish(Part_ptr, Count_ptr, item, row, x, centre, mask, EVEN: tl.constexpr, PAIR: tl.constexpr,
             DTYPE: tl.constexpr):
    """A held slice's partial statistics (`partials`), published (`_store_partials`)."""
    c, t1, q = partials(x, centre, mask, EVEN, PAIR, DTYPE)
    _store_partials(Part_ptr, Count_ptr, item, row, c, t1, q)


@triton.jit
def _store_partials(Part_ptr, Count_ptr, item, row, c, t1, q):
    """A slice's partial statistics (float64 c, T1, Q) stored in its slot, then the arrival at its
    group's counter."""
    part = Part_ptr + 3 * item
    tl.store(part, c)
    tl.store(part + 1, t1)
    tl.store(part + 2, q)
    arrive(Count_ptr, row)


@triton.jit
def _group_statistics(Part_ptr, Count_ptr, row, target, slices, hidden_size, inv_count, inv_last, eps,
                      SLICE_BLOCK: tl.constexpr, SLICE: tl.constexpr):
    """(mean_hi, mean_lo, rstd) of group row `row` once all its slices have arrived; a wait that timed out
    gives rstd NaN, not a hang."""
    in_time = wait_for(Count_ptr, row, target)
    mean, m2 = _combine(Part_ptr, row, slices, hidden_size, inv_count, inv_last, SLICE_BLOCK, SLICE)
    mean_hi, mean_lo, rstd = finish(mean, m2, inv_count, eps)
    return mean_hi, mean_lo, tl.where(in_time, rstd, float("nan"))


@triton.jit
def _write(Y_ptr, Mean_ptr, RSTD_ptr, row, s, hidden_size, x, w, b, mean_hi, mean_lo, rstd, ROWS: tl.constexpr,
           WIDTH: tl.constexpr, EVEN: tl.constexpr, PAIR: tl.constexpr):
    """y of slice `s` of group row `row` from the x it holds; the group's mean and rstd from its slice 0."""
    offsets, mask = tile(s * ROWS * WIDTH, hidden_size, ROWS, WIDTH, PAIR)
    normalize(Y_ptr + row.to(tl.int64) * hidden_size, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, EVEN, PAIR, "")
    if s == 0:
        tl.store(Mean_ptr + row, mean_hi)
        tl.store(RSTD_ptr + row, rstd)


@triton.jit
def _reread_publish(X_ptr, Part_ptr, Count_ptr, item, slices, hidden_size, BLOCK: tl.constexpr, CHUNKS: tl.constexpr,
                    ROWS: tl.constexpr, EVEN: tl.constexpr, PAIR: tl.constexpr):
    """Split item `item` streamed through, not held: its CHUNKS blocks summed about one centre (the blocks'
    sums of x - c and (x - c)^2 add up to the slice's), then published at its group's counter."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    row, start = item // slices, (item % slices) * (BLOCK * CHUNKS)
    base = X_ptr + row.to(tl.int64) * hidden_size
    c = centre(base, start, hidden_size, True)
    t1 = tl.zeros([], tl.float64)
    q = tl.zeros([], tl.float64)
    for chunk in tl.range(start, tl.minimum(start + BLOCK * CHUNKS, hidden_size), BLOCK):
        x, offsets, mask = load_chunk(base, chunk, hidden_size, True, ROWS, WIDTH, EVEN, PAIR, "")
        _, t1_chunk, q_chunk = partials(x, c, mask, EVEN, PAIR, X_ptr.dtype.element_ty)
        t1 += t1_chunk
        q += q_chunk
    _store_partials(Part_ptr, Count_ptr, item, row, c.to(tl.float64), t1, q)


@triton.jit
def _reread_write(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, item, target, slices,
                  num_groups, channels_per_group, hidden_size, inv_count, inv_last, eps, BLOCK: tl.constexpr,
                  CHUNKS: tl.constexpr, HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr,
                  SLICE_BLOCK: tl.constexpr, PAIR: tl.constexpr):
    """y of item `item` (`_reread_publish`) once its group has arrived: its blocks read again, from L2
    while it holds them. That read and y's stores ask L2 to evict their lines first, so that the x
    other programs have still to read again stays (probe runs 12 and 17: without the hint the call took
    35.1 us against 29.0; asking L2 to keep the first read's lines as well gained nothing)."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    row, s = item // slices, item % slices
    start = s * (BLOCK * CHUNKS)
    mean_hi, mean_lo, rstd = _group_statistics(Part_ptr, Count_ptr, row, target, slices, hidden_size, inv_count,
                                               inv_last, eps, SLICE_BLOCK, BLOCK * CHUNKS)
    first_channel = (row % num_groups) * channels_per_group
    base = X_ptr + row.to(tl.int64) * hidden_size
    y_base = Y_ptr + row.to(tl.int64) * hidden_size
    for chunk in tl.range(start, tl.minimum(start + BLOCK * CHUNKS, hidden_size), BLOCK):
        x, offsets, mask = load_chunk(base, chunk, hidden_size, True, ROWS, WIDTH, EVEN, PAIR, "evict_first")
        w, b = load_affine(W_ptr, B_ptr, chunk, hidden_size, first_channel, offsets, mask, HPC, ROWS, WIDTH, EVEN)
        normalize(y_base, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, EVEN, PAIR, "evict_first")
    if s == 0:
        tl.store(Mean_ptr + row, mean_hi)
        tl.store(RSTD_ptr + row, rstd)


@triton.jit
def _overlapped(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, pid, programs, items, target,
                num_groups, channels_per_group, hidden_size, slices, inv_count, inv_last, eps, BLOCK: tl.constexpr,
                HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr, SLICE_BLOCK: tl.constexpr,
                PAIR: tl.constexpr, CHUNKS: tl.constexpr):
    """coop_forward's OVERLAP split: item i + P loaded and published before the wait for item i's group,
    whose y is written after it. Every program publishes its k-th item before it waits for its (k-1)-th,
    so every wait ends."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    DTYPE: tl.constexpr = X_ptr.dtype.element_ty
    row, s = pid // slices, pid % slices
    x, centre, offsets, mask = _load_slice(X_ptr, row, s * BLOCK, hidden_size, True, ROWS, WIDTH, EVEN, PAIR)
    w, b = load_affine(W_ptr, B_ptr, s * BLOCK, hidden_size, (row % num_groups) * channels_per_group,
                       offsets, mask, HPC, ROWS, WIDTH, EVEN)
    _publish(Part_ptr, Count_ptr, pid, row, x, centre, mask, EVEN, PAIR, DTYPE)
    # the last turn loads nothing (its item is past the end) and finishes the last item held
    for item in tl.range(pid + programs, items + programs, programs):
        live = item < items
        row, s = item // slices, item % slices
        x_next, centre, offsets, mask = _load_slice(X_ptr, row, s * BLOCK, hidden_size, live, ROWS, WIDTH, EVEN, PAIR)
        w_next, b_next = load_affine(W_ptr, B_ptr, s * BLOCK, hidden_size, (row % num_groups) * channels_per_group,
                                     offsets, mask, HPC, ROWS, WIDTH, EVEN)
        held = (item - programs) // slices
        mean_hi, mean_lo, rstd = _group_statistics(Part_ptr, Count_ptr, held, target, slices, hidden_size,
                                                   inv_count, inv_last, eps, SLICE_BLOCK, BLOCK * CHUNKS)
        if live:
            _publish(Part_ptr, Count_ptr, item, row, x_next, centre, mask, EVEN, PAIR, DTYPE)
        _write(Y_ptr, Mean_ptr, RSTD_ptr, held, (item - programs) % slices, hidden_size, x, w, b, mean_hi,
               mean_lo, rstd, ROWS, WIDTH, EVEN, PAIR)
        x, w, b = x_next, w_next, b_next


@triton.jit
def _held(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, pid, programs, items, target,
          num_groups, channels_per_group, hidden_size, slices, inv_count, inv_last, eps, BLOCK: tl.constexpr,
          HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr, SLICE_BLOCK: tl.constexpr, PAIR: tl.constexpr,
          CHUNKS: tl.constexpr):
    """coop_forward's plain split: each item loaded, published, waited for and written in turn."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    DTYPE: tl.constexpr = X_ptr.dtype.element_ty
    for item in tl.range(pid, items, programs):
        row, s = item // slices, item % slices
        x, centre, offsets, mask = _load_slice(X_ptr, row, s * BLOCK, hidden_size, True, ROWS, WIDTH, EVEN, PAIR)
        w, b = load_affine(W_ptr, B_ptr, s * BLOCK, hidden_size, (row % num_groups) * channels_per_group,
                           offsets, mask, HPC, ROWS, WIDTH, EVEN)
        _publish(Part_ptr, Count_ptr, item, row, x, centre, mask, EVEN, PAIR, DTYPE)
        mean_hi, mean_lo, rstd = _group_statistics(Part_ptr, Count_ptr, row, target, slices, hidden_size,
                                                   inv_count, inv_last, eps, SLICE_BLOCK, BLOCK * CHUNKS)
        _write(Y_ptr, Mean_ptr, RSTD_ptr, row, s, hidden_size, x, w, b, mean_hi, mean_lo, rstd, ROWS, WIDTH,
               EVEN, PAIR)


@triton.jit
def _resident(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, num_groups, channels_per_group, hidden_size, inv_count,
              eps, BLOCK: tl.constexpr, HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr, PAIR: tl.constexpr):
    """coop_forward unsplit: program r normalizes group row r, held in registers (hidden <= BLOCK)."""
    WIDTH: tl.constexpr = BLOCK // ROWS
    row = tl.program_id(0)
    x, centre, offsets, mask = _load_slice(X_ptr, row, 0, hidden_size, True, ROWS, WIDTH, EVEN, PAIR)
    w, b = load_affine(W_ptr, B_ptr, 0, hidden_size, (row % num_groups) * channels_per_group, offsets, mask,
                       HPC, ROWS, WIDTH, EVEN)
    c, t1, q = partials(x, centre, mask, EVEN, PAIR, X_ptr.dtype.element_ty)
    # one slice: the combination reduces to mean = c + T1 / n, M2 = Q - T1^2 / n
    mean_hi, mean_lo, rstd = finish(c + t1 * inv_count, q - t1 * t1 * inv_count, inv_count, eps)
    normalize(Y_ptr + row.to(tl.int64) * hidden_size, x, offsets, mask, w, b, mean_hi, mean_lo,
              rstd, EVEN, PAIR, "")
    tl.store(Mean_ptr + row, mean_hi)
    tl.store(RSTD_ptr + row, rstd)


@triton.jit
def coop_forward(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr,
                 n_rows, num_groups, channels_per_group, hidden_size, slices, eps,
                 BLOCK: tl.constexpr, HPC: tl.constexpr, ROWS: tl.constexpr, EVEN: tl.constexpr,
                 SPLIT: tl.constexpr, SLICE_BLOCK: tl.constexpr, PAIR: tl.constexpr, OVERLAP: tl.constexpr,
                 CHUNKS: tl.constexpr):
    """resident (SPLIT False): `_resident`. split: persistent; program p takes items p, p + P, ... (P a
    multiple of `slices`); item i is slice i % slices of group row i // slices, so a group's slices are
    neighbours running at once: `_overlapped` (OVERLAP), `_reread_publish` then `_reread_write` (CHUNKS > 1,
    a slice streamed), else `_held`."""
    inv_count = 1.0 / tl.cast(hidden_size, tl.float64)   # tl.cast: the JIT makes a hidden_size of 1 a constant
    if SPLIT:
        inv_last = 1.0 / (hidden_size - (slices - 1) * (BLOCK * CHUNKS)).to(tl.float64)
        pid, programs, items = tl.program_id(0), tl.num_programs(0), n_rows * slices
        target = (launch_epoch(Count_ptr, pid // slices, slices) + 1) * slices
        if OVERLAP:
            _overlapped(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, pid, programs, items,
                        target, num_groups, channels_per_group, hidden_size, slices, inv_count, inv_last, eps, BLOCK,
                        HPC, ROWS, EVEN, SLICE_BLOCK, PAIR, CHUNKS)
        elif CHUNKS > 1:
            for item in tl.range(pid, items, programs):
                _reread_publish(X_ptr, Part_ptr, Count_ptr, item, slices, hidden_size, BLOCK, CHUNKS, ROWS, EVEN, PAIR)
                _reread_write(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, item, target, slices,
                              num_groups, channels_per_group, hidden_size, inv_count, inv_last, eps, BLOCK, CHUNKS, HPC,
                              ROWS, EVEN, SLICE_BLOCK, PAIR)
        else:
            _held(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, Part_ptr, Count_ptr, pid, programs, items, target,
                  num_groups, channels_per_group, hidden_size, slices, inv_count, inv_last, eps, BLOCK, HPC, ROWS, EVEN,
                  SLICE_BLOCK, PAIR, CHUNKS)
    else:
        _resident(Y_ptr, X_ptr, Mean_ptr, RSTD_ptr, W_ptr, B_ptr, num_groups, channels_per_group, hidden_size,
                  inv_count, eps, BLOCK, HPC, ROWS, EVEN, PAIR)


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
    count = tl.cast(hidden_size, tl.float64)   # not .to: the JIT makes a hidden_size of 1 a constant (an int)
    if hidden_size <= BLOCK_SIZE:
        # the group in registers: read once
        mask = lanes < hidden_size
        channel = first_channel + lanes // hidden_per_channel
        x = tl.load(X_ptr + lanes, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        c, t1, q = partials(x, centre(X_ptr, 0, hidden_size, True), mask, False, False, tl.float32)
        mean_hi, mean_lo, rstd = finish(c + t1 / count, q - t1 * t1 / count, 1.0 / count, eps)
        normalize(Y_ptr, x, lanes, mask, w, b, mean_hi, mean_lo, rstd, False, False, "")
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
            c, t1, q = partials(x, centre(X_ptr, start, hidden_size, True), mask, False, False, tl.float32)
            total = n + n_b
            d = c + t1 / n_b - mean
            mean = mean + d * (n_b / total)
            m2 = m2 + (q - t1 * t1 / n_b) + d * d * (n * n_b / total)
            n = total
        mean_hi, mean_lo, rstd = finish(mean, m2, 1.0 / count, eps)
        for start in tl.range(0, hidden_size, BLOCK_SIZE):
            offsets = start + lanes
            mask = offsets < hidden_size
            channel = first_channel + offsets // hidden_per_channel
            x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
            normalize(Y_ptr, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, False, False, "")
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean_hi)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


def launch_with(config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's): this module's
    kernels, through `coop_launch.run`."""
    run(coop_forward, group_norm_forward, config, inputs, outputs, shape)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `choose`'s configuration for the shape on this GPU."""
    launch_with(chosen(inputs.x, shape), inputs, outputs, shape)
