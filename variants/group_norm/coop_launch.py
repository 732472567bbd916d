"""How single_read_coop's forward is launched: `Config`, the rule `choose` that picks one, and the
kernel's arguments. Host code only: `run` takes the kernels, so a planted fault in the variant's file
(tests/planted.py) runs its own kernels through the same launcher.
"""
from __future__ import annotations

import dataclasses

import torch
import triton

from variants.family import NotForThisShape
from variants.group_norm.coop_sync import persistent_grid, workspace

MAX_HIDDEN = 1 << 24                 # a group this large or larger is refused (int32 offsets, counters)


@dataclasses.dataclass(frozen=True)
class Config:
    """How `launch` runs one shape: `block` elements per program (a power of two) and `num_warps`; `split`: a
    group over ceil(hidden / block) programs that wait for each other (else one program per group);
    `max_registers` caps registers per thread (more programs per SM; None: the compiler's choice); `overlap`
    (split): load the next slice before waiting on the held one's group; `chunks` > 1 (split, not overlap): a
    slice streamed as `chunks` blocks and read again from L2 after the wait instead of held in registers."""

    block: int
    num_warps: int
    split: bool = False
    max_registers: int | None = None
    overlap: bool = False
    chunks: int = 1

    def __post_init__(self):
        for name in ("block", "num_warps"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")
        if self.overlap and not self.split:
            raise ValueError("overlap applies to split configurations only")
        if self.chunks < 1 or (self.chunks > 1 and (not self.split or self.overlap)):
            raise ValueError(f"chunks must be 1, or more for a split configuration without overlap, got {self.chunks}")

    @property
    def slice_size(self) -> int:
        """Elements of a group one split program takes per turn."""
        return self.block * self.chunks

    @property
    def label(self) -> str:
        cap = f" r{self.max_registers}" if self.max_registers else ""
        chunks = f"x{self.chunks}" if self.chunks > 1 else ""
        return f"{'split' if self.split else 'resident'} b{self.block}{chunks} w{self.num_warps}{cap}" + (
            " overlap" if self.overlap else "") + (" reread" if self.chunks > 1 else "")


# Chosen from coop_probe.py on the H200 (reports/coop_probes/README.md), by element
# size in bytes. Resident: elements a thread holds (float32 64: 2,048-element groups in one warp;
# bfloat16 32: two warps, 56 registers). Split: registers a thread may take, the fewest without spills
# (float32 128: 4 programs an SM where 160 would fit 3; bfloat16 96: 5 programs an SM).
RESIDENT_PER_THREAD = {4: 64, 2: 32}
ON_CHIP = 16384              # the largest group one program holds; larger groups are split
SPLIT_BLOCK = 8192
SPLIT_WARPS = 4
SPLIT_REGISTERS = {4: 128, 2: 96}
# Overlapped split programs hold two slices (16-bit at 128 registers: 4 an SM; triton 3.6 spills 14 bytes
# there, and a cap that spills less fits fewer programs). A program's first load and last write overlap
# nothing, so overlap pays only over many turns: from OVERLAP_SLICES_PER_SM slices an SM (8 turns of 4
# programs). Runs 9 and 10: bfloat16 N32 C512 (62 an SM) 4% faster, N16 C320 (19) 4% slower; float32
# slower at every cap (a float32 slice pair spills or halves the programs).
OVERLAP_REGISTERS = {2: 128}
OVERLAP_SLICES_PER_SM = 32
TILE_WIDTH_PER_WARP = 256    # 32 threads of 16-byte bfloat16 vectors: narrower rows put warps across rows


# Slices read again from L2 (`chunks`): blocks of REREAD_BLOCK elements, REREAD_WARPS warps, REREAD_PROGRAMS_PER_SM
# programs an SM (64 registers a thread on triton 3.6), so that every program of the launch runs at once.
# Chosen for 16-bit launches whose x fits L2 (bfloat16 N16 C320 on the H200: 42 MB of 60 MiB): there
# kernel-ab timed them at 29.2-29.5 us against 33.3-34.0 us for slices held in registers; float32 (x of
# 84 MB) and launches larger than L2 are slower read again (reports/timing_order_effect, reports/roofline_group_norm).
REREAD_SIZES = (2,)
REREAD_BLOCK = 2048
REREAD_WARPS = 2
REREAD_PROGRAMS_PER_SM = 16


def read_again(hidden_size: int, groups_per_sm: float) -> Config:
    """Slices read again from L2: whole blocks, as many slices a group as keep REREAD_PROGRAMS_PER_SM
    programs on each multiprocessor (at least 2 blocks a slice: one would be the held path with smaller
    blocks). A group one program holds is refused."""
    if hidden_size <= ON_CHIP:
        raise NotForThisShape(f"slices are read again only for groups split over programs (more than {ON_CHIP} "
                              f"elements), got {hidden_size}; a program holds such a group")
    slices = max(2, int(REREAD_PROGRAMS_PER_SM // groups_per_sm)) if groups_per_sm > 0 else 2
    chunks = max(2, -(-(-(-hidden_size // slices)) // REREAD_BLOCK))
    return Config(REREAD_BLOCK, REREAD_WARPS, split=True, chunks=chunks)


def choose(hidden_size: int, element_size: int = 4, groups_per_sm: float = 0.0, l2_bytes_per_sm: float = 0.0) -> Config:
    """The configuration `launch` uses for groups of `hidden_size` elements of `element_size` bytes,
    `groups_per_sm` of them for each multiprocessor of the GPU, whose L2 holds `l2_bytes_per_sm` bytes
    for each multiprocessor (0: unknown, so nothing is read again from it)."""
    block = triton.next_power_of_2(hidden_size)
    if block <= ON_CHIP:
        per_thread = RESIDENT_PER_THREAD.get(element_size, 64)
        return Config(block, max(1, min(16, block // (32 * per_thread))))
    slices_per_sm = groups_per_sm * -(-hidden_size // SPLIT_BLOCK)
    if element_size in OVERLAP_REGISTERS and slices_per_sm >= OVERLAP_SLICES_PER_SM:
        return Config(SPLIT_BLOCK, SPLIT_WARPS, split=True, max_registers=OVERLAP_REGISTERS[element_size], overlap=True)
    if (element_size in REREAD_SIZES and 0 < groups_per_sm <= REREAD_PROGRAMS_PER_SM / 2
            and groups_per_sm * hidden_size * element_size <= l2_bytes_per_sm):
        return read_again(hidden_size, groups_per_sm)
    return Config(SPLIT_BLOCK, SPLIT_WARPS, split=True, max_registers=SPLIT_REGISTERS.get(element_size, 128))


def tile_rows(block: int, hidden_per_channel: int, num_warps: int) -> int:
    """Rows of the [rows, block // rows] tile: several when a row of TILE_WIDTH_PER_WARP * num_warps
    elements (every warp side by side along the row, so a thread holds the same columns of every row
    and sums them without shuffles) lies in one channel, else 1 (W and B per element)."""
    width = TILE_WIDTH_PER_WARP * num_warps
    if width <= block and hidden_per_channel % width == 0:
        return block // width
    return 1


def chosen(x, shape) -> Config:
    """`choose`'s configuration for `shape` with x on its device (how many groups each multiprocessor gets,
    and how much of L2 there is for each; on the CPU one multiprocessor and no L2)."""
    if not x.is_cuda:
        return choose(shape.hidden_size, x.element_size(), float(shape.batch * shape.num_groups))
    props = torch.cuda.get_device_properties(x.device)
    sms = props.multi_processor_count
    return choose(shape.hidden_size, x.element_size(), shape.batch * shape.num_groups / sms,
                  props.L2_cache_size / sms)


def describe(config: Config, device) -> str:
    """What runs for `config` on `device`."""
    if device.type == "cpu" and config.split:
        return f"{config.label}, interpreted as one program per group streaming blocks of {config.block}"
    return config.label


def streamed(group_norm_forward, config: Config, x, inputs, outputs: dict, shape) -> None:
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
    slices = -(-h // config.slice_size) if config.split else 1
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
                     SLICE_BLOCK=max(2, triton.next_power_of_2(slices)), PAIR=pair, OVERLAP=config.overlap,
                     CHUNKS=config.chunks, num_warps=config.num_warps)
    if config.max_registers:
        constants["maxnreg"] = config.max_registers
    return args, constants


def run(coop_forward, group_norm_forward, config: Config, inputs, outputs: dict, shape) -> None:
    """Run the forward for `shape` with `config` (inputs and outputs as the family's): `coop_forward`
    compiled, `group_norm_forward` (the spec entry) for a split configuration on the CPU."""
    n_rows, h = shape.batch * shape.num_groups, shape.hidden_size
    if h >= MAX_HIDDEN:
        raise NotForThisShape(f"single_read_coop handles groups of fewer than {MAX_HIDDEN} elements, got {h}")
    x = inputs.x.contiguous()
    if x.device.type == "cpu" and config.split:
        streamed(group_norm_forward, config, x, inputs, outputs, shape)
        return
    args, constants = kernel_arguments(config, x, inputs, outputs, shape)
    grid = n_rows
    if config.split:
        key = (coop_forward, str(x.device), config, x.dtype, constants["HPC"], constants["EVEN"], constants["PAIR"])
        slices = -(-h // config.slice_size)
        grid = persistent_grid(coop_forward, args, constants, key, n_rows * slices, slices, config.label)
    coop_forward[(grid,)](*args, **constants)
