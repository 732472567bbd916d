"""single_read_coop_reread: single_read_coop with each split slice read twice, the second time from L2.

It exists to put a question to kernel-ab that the configuration probe could not settle. On bfloat16
N16 C320 (42 MB, less than the H200's 60 MiB of L2) the probe timed single_read_coop's slices read again
at 28.3-29.3 us against 33.5-33.9 us for slices held in registers, but kernel-ab's report of `d11bd41`,
where `choose` picked them, gave 35.7 us (reports/h200/roofline_coop/probe/README.md, runs 12-17). As a
variant of its own it is timed in the same rounds as single_read_coop, so the report decides.

Read again (`Config.chunks`): a program streams its slice through in blocks of REREAD_BLOCK elements,
publishes the slice's partial statistics, waits for its group's other slices, then reads the slice again
(evict-first, from L2 while L2 still holds it) to write y. A program holds one block, not a slice, so 16
programs fit an SM: the slice count is chosen so that every program of the launch runs at once (one
turn), and the launch moves as many bytes at a time as L2 keeps rather than as registers hold. The
arithmetic, the wait and the backward are single_read_coop's. Only groups split over programs (more than
ON_CHIP elements) are read again; a smaller group is an error, not single_read_coop's resident path
under another name.
"""
from __future__ import annotations

import torch

from variants.group_norm.coop_launch import ON_CHIP, REREAD_BLOCK, REREAD_WARPS, Config
from variants.group_norm.single_read_coop import backward_kernel, backward_launcher, launch_with  # noqa: F401
from variants.group_norm.single_read_coop import group_norm_forward  # noqa: F401 (the spec entry: IR, CPU)

PROGRAMS_PER_SM = 16   # two-warp programs of one 2,048-element block: 64 registers a thread on triton 3.6


def reread_config(hidden_size: int, groups_per_sm: float) -> Config:
    """Slices of whole blocks, as many a group as keep PROGRAMS_PER_SM programs on each multiprocessor
    (at least 2 blocks a slice: one would be the held path with smaller blocks)."""
    if hidden_size <= ON_CHIP:
        raise ValueError(f"single_read_coop_reread reads again only groups split over programs (more than "
                         f"{ON_CHIP} elements), got {hidden_size}; single_read_coop holds such a group")
    slices = max(2, int(PROGRAMS_PER_SM // groups_per_sm)) if groups_per_sm > 0 else 2
    chunks = max(2, -(-(-(-hidden_size // slices)) // REREAD_BLOCK))
    return Config(REREAD_BLOCK, REREAD_WARPS, split=True, chunks=chunks)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `reread_config` for the shape on this GPU."""
    x = inputs.x
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 1
    launch_with(reread_config(shape.hidden_size, shape.batch * shape.num_groups / sms), inputs, outputs, shape)
