"""What single_read_coop's forward and backward share to split a group over programs that wait for each
other: the per-group counter wait, the persistent workspace, how many programs the GPU holds at once (one
waited on must be running) and 16-bit values held two to a register across a wait. Counters only grow
(one set per pass and slice count), so nothing is zeroed between calls; a wait past MAX_POLLS gives up and
the caller writes NaN, so a fault shows in the numerics instead of hanging the GPU."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_POLLS = tl.constexpr(1 << 22)    # a split program gives up waiting after this many polls (seconds)

_WORKSPACE: dict = {}     # (device, what) -> tensor, grown on demand: the counters must persist across calls
_RESIDENT: dict = {}      # key -> programs the GPU holds at once


@triton.jit
def wait_for(Count_ptr, row, target):
    """Poll the group's counter until it reaches `target`; whether that happened within MAX_POLLS polls.
    The acquire makes what the other programs stored before their arrivals visible."""
    polls = 0
    while (tl.atomic_add(Count_ptr + row, 0, sem="acquire", scope="gpu") < target) & (polls < MAX_POLLS):
        polls += 1
    tl.debug_barrier()
    return polls < MAX_POLLS


@triton.jit
def arrive_and_wait(Count_ptr, row, slices):
    """Arrive at the group's counter and wait until all `slices` programs of this launch have; returns
    whether that happened within MAX_POLLS polls. The release publishes what the program stored before
    (its partials)."""
    tl.debug_barrier()
    arrived = tl.atomic_add(Count_ptr + row, 1, sem="release", scope="gpu")
    return wait_for(Count_ptr, row, (arrived // slices + 1) * slices)


@triton.jit
def launch_epoch(Count_ptr, row, slices):
    """How many launches before this one waited at `row`'s counter, read by a program before its first
    arrival: each launch adds `slices` to every row of a counter set, and before this program arrives at
    most slices - 1 others of its group have, so the floor is exact. Every row of the set has the same
    epoch when the set serves one grid of rows (the caller keys it by the row count too), so one read
    gives a persistent program the target of every row it waits at."""
    return tl.load(Count_ptr + row, volatile=True) // slices


@triton.jit
def arrive(Count_ptr, row):
    """Arrive at the group's counter, publishing what the program stored before (its partials), with the
    wait's target known beforehand (`launch_epoch`): the arrival's result is not needed, so the compiler
    makes it a reduction that does not wait for its round trip to L2."""
    tl.debug_barrier()
    tl.atomic_add(Count_ptr + row, 1, sem="release", scope="gpu")


@triton.jit
def arrive_and_wait_for(Count_ptr, row, target):
    """`arrive`, then `wait_for`: the polling starts without waiting for the arrival's round trip."""
    arrive(Count_ptr, row)
    return wait_for(Count_ptr, row, target)


def workspace(device, what: str, dtype, numel: int) -> torch.Tensor:
    """A zero-initialised buffer named `what` on `device` of at least `numel` elements, kept across calls."""
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


def persistent_grid(kernel, args: tuple, constants: dict, key, n_items: int, slices: int, label: str) -> int:
    """The split launch's grid: every item if the GPU holds them all at once, else the programs it holds,
    rounded down to a multiple of `slices` (a group's slices then run side by side). `key` names `kernel`
    itself and what sets its registers, so that another kernel (a planted fault's) is counted apart."""
    if key not in _RESIDENT:
        compiled = kernel.warmup(*args, grid=(1,), **constants)
        compiled._init_handles()
        _RESIDENT[key] = resident_programs(compiled, constants["num_warps"], args[0].device)
    cap = _RESIDENT[key]
    if cap < slices:
        raise ValueError(f"{label}: the GPU holds {cap} programs at once, fewer than a group's {slices} slices")
    return min(n_items, cap - cap % slices)


@triton.jit
def widen_again(x):
    """x as float32 by other instructions than x.to(float32) (bfloat16: its bits shifted up), so that the
    compiler cannot merge the two conversions and keep a float32 copy of x alive across a wait: x held
    in its own 16-bit type takes half the registers, and twice the bytes stay in flight per SM."""
    if x.dtype.is_bf16():
        return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    return x.to(tl.float32)


@triton.jit
def widen_pair(words, DTYPE: tl.constexpr, AGAIN: tl.constexpr):
    """The 16-bit values held two to a 32-bit word, as float32: (even elements, odd elements). AGAIN
    widens by other instructions (bfloat16: a conversion, not a shift), so that the compiler cannot
    merge the widening after a wait with the one before it and keep 32-bit copies alive across it."""
    u = words.to(tl.uint32, bitcast=True)
    if DTYPE.is_bf16() and not AGAIN:
        return (u << 16).to(tl.float32, bitcast=True), (u & 0xFFFF0000).to(tl.float32, bitcast=True)
    return (u.to(tl.uint16).to(DTYPE, bitcast=True).to(tl.float32),
            (u >> 16).to(tl.uint16).to(DTYPE, bitcast=True).to(tl.float32))


@triton.jit
def narrow_pair(even, odd, DTYPE: tl.constexpr):
    """float32 (even, odd) elements rounded to the 16-bit DTYPE and held two to a 32-bit word."""
    low = even.to(DTYPE).to(tl.uint16, bitcast=True).to(tl.uint32)
    return low | (odd.to(DTYPE).to(tl.uint16, bitcast=True).to(tl.uint32) << 16)
