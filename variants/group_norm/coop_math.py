"""The arithmetic single_read_coop's kernels share: a slice's statistics about a centre of few bits,
their combination's last step, the normalization, and the tile a program holds or streams through.
Why each is as it is: single_read_coop's docstring, and each function's own.
"""
from __future__ import annotations

import triton
import triton.language as tl

from variants.group_norm.coop_sync import narrow_pair, widen_again, widen_pair


@triton.jit
def add_add(a, b, c, d):
    return a + c, b + d


@triton.jit
def row_sums(x, c, mask, EVEN: tl.constexpr):
    """Over the tile's rows (a thread holds the same columns of every row: no shuffles), float64 sums of
    d = x - c and of d^2 (see `partials`)."""
    d = x - c
    if not EVEN:
        d = tl.where(mask, d, 0.0)
    d = d.to(tl.float64)
    return tl.reduce((d, d * d), 0, add_add)


@triton.jit
def partials(x, c, mask, EVEN: tl.constexpr, PAIR: tl.constexpr, DTYPE: tl.constexpr):
    """About the slice's centre c (`centre`), T1 = sum(x - c) and Q = sum((x - c)^2) in one pass: x - c in
    float32, squared and summed in float64 (no overflow or underflow). M2 = Q - T1^2 / n cancels only as far as
    c lies from the mean in units of the spread, which float64's spare 29 bits absorb, and x - c is exact near
    c's few significant bits; an all-equal slice has x - c = 0, so y = B exactly. x as `load_chunk` gave it
    (PAIR: 16-bit values of DTYPE two to a 32-bit word)."""
    if PAIR:
        even, odd = widen_pair(x, DTYPE, False)
        t1, q = row_sums(even, c, mask, EVEN)
        t1_odd, q_odd = row_sums(odd, c, mask, EVEN)
        t1, q = t1 + t1_odd, q + q_odd
    else:
        t1, q = row_sums(x.to(tl.float32), c, mask, EVEN)
    t1, q = tl.reduce((t1, q), 0, add_add)
    return c.to(tl.float64), t1, q


@triton.jit
def finish(mean, m2, inv_count, eps):
    """(mean_hi, mean_lo, rstd) from a group's float64 mean and M2 of 1 / inv_count values; rstd in
    float64, once per group."""
    var = m2 * inv_count
    var = tl.where(var < 0.0, 0.0, var)          # rounding below 0; NaN stays NaN
    rstd = 1.0 / tl.sqrt(var + eps)
    mean_hi = mean.to(tl.float32)
    return mean_hi, (mean - mean_hi.to(tl.float64)).to(tl.float32), rstd.to(tl.float32)


@triton.jit
def normalize(Y_ptr, x, offsets, mask, w, b, mean_hi, mean_lo, rstd, EVEN: tl.constexpr, PAIR: tl.constexpr,
               EVICT: tl.constexpr):
    """y = (x - mean_hi) * k + (B - mean_lo * k), k = rstd * W: mean_hi + mean_lo is the float64 mean in
    two float32 parts, so a large mean costs y no accuracy. x as `load_chunk` gave it (PAIR: two
    16-bit values a word, and y is stored so)."""
    k = rstd * w
    shift = b - mean_lo * k
    if PAIR:
        even, odd = widen_pair(x, Y_ptr.dtype.element_ty, True)
        words = narrow_pair((even - mean_hi) * k + shift, (odd - mean_hi) * k + shift, Y_ptr.dtype.element_ty)
        if EVEN:
            tl.store(Y_ptr.to(tl.pointer_type(tl.uint32)) + offsets, words, eviction_policy=EVICT)
        else:
            tl.store(Y_ptr.to(tl.pointer_type(tl.uint32)) + offsets, words, mask=mask, eviction_policy=EVICT)
        return
    y = (widen_again(x) - mean_hi) * k + shift
    if EVEN:
        tl.store(Y_ptr + offsets, y, eviction_policy=EVICT)
    else:
        tl.store(Y_ptr + offsets, y, mask=mask, eviction_policy=EVICT)


@triton.jit
def centre(base, start, hidden_size, live):
    """The centre of a slice's statistics (`partials`): the mean of its first 8 values (in its first 32 bytes)
    rounded to a multiple of a power of two above their spread, so x - c is exact in float32 near it; 0 where
    that mean lies within 256 such units of 0 (x - 0 is always exact, while a one-unit centre rounds the values
    of the other sign); the first value itself where the 8 are equal, not finite, or far from their spread's
    scale."""
    first = tl.load(base + start, mask=live).to(tl.float32)
    near = start + tl.arange(0, 8)
    ok = (near < hidden_size) & live
    sample = tl.where(ok, tl.load(base + near, mask=ok, other=0.0).to(tl.float32), first)
    estimate = first + tl.sum((sample - first) * 0.125, axis=0)   # scaled first: 8 huge terms overflow
    spread = tl.max(tl.abs(sample - estimate), axis=0)
    e = ((spread.to(tl.uint32, bitcast=True) >> 23) & 0xFF) + 1       # unit = 2^e > spread
    unit = (e << 23).to(tl.float32, bitcast=True)
    scaled = estimate * ((254 - e) << 23).to(tl.float32, bitcast=True)  # estimate / unit, exactly
    rounded = ((scaled + 12582912.0) - 12582912.0) * unit              # 1.5 * 2^23: round to an integer
    rounded = tl.where(tl.abs(scaled) < 256.0, 0.0, rounded)
    return tl.where((spread > 0.0) & (e < 254) & (tl.abs(scaled) < 4194304.0), rounded, first)


@triton.jit
def tile(start, hidden_size, ROWS: tl.constexpr, WIDTH: tl.constexpr, PAIR: tl.constexpr):
    """Offsets and mask of the slice [start, start + ROWS * WIDTH) as a [ROWS, WIDTH] tile (PAIR: a
    [ROWS, WIDTH / 2] tile of 32-bit words, each two 16-bit values)."""
    if PAIR:
        offsets = (start + tl.arange(0, ROWS)[:, None] * WIDTH) // 2 + tl.arange(0, WIDTH // 2)[None, :]
        mask = offsets < hidden_size // 2
    else:
        offsets = start + tl.arange(0, ROWS)[:, None] * WIDTH + tl.arange(0, WIDTH)[None, :]
        mask = offsets < hidden_size
    return offsets, mask


@triton.jit
def load_chunk(base, start, hidden_size, mask_with, ROWS: tl.constexpr, WIDTH: tl.constexpr, EVEN: tl.constexpr,
                PAIR: tl.constexpr, EVICT: tl.constexpr):
    """x[start, start + ROWS * WIDTH) of the group at `base` as `tile` lays it out (PAIR: 32-bit words, so
    that the compiler holds 16-bit values packed, not one to a register; nothing read where `mask_with`
    is False), with the tile's offsets and mask; EVICT: L2's eviction policy for the lines read."""
    offsets, mask = tile(start, hidden_size, ROWS, WIDTH, PAIR)
    if PAIR and EVEN:
        x = tl.load(base.to(tl.pointer_type(tl.uint32)) + offsets, mask=mask_with, eviction_policy=EVICT)
    elif PAIR:
        x = tl.load(base.to(tl.pointer_type(tl.uint32)) + offsets, mask=mask & mask_with, other=0,
                    eviction_policy=EVICT)
    elif EVEN:
        x = tl.load(base + offsets, mask=mask_with, eviction_policy=EVICT)
    else:
        x = tl.load(base + offsets, mask=mask & mask_with, other=0.0, eviction_policy=EVICT)
    return x, offsets, mask


@triton.jit
def load_affine(W_ptr, B_ptr, start, hidden_size, first_channel, offsets, mask, HPC: tl.constexpr,
                 ROWS: tl.constexpr, WIDTH: tl.constexpr, EVEN: tl.constexpr):
    """W and B for the tile `load_chunk` gave (offsets and mask from it). With ROWS > 1 each tile row
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
