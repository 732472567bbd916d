"""single_read_coop_reread: single_read_coop with each split slice read twice, the second time from L2.

It exists so that kernel-ab times slices read again against slices held in registers on every split
shape and dtype, where single_read_coop's launcher picks one of the two. It settled a question the
configuration probe could not: on bfloat16 N16 C320 (42 MB, less than the H200's 60 MiB of L2) the probe
timed read-again slices at 28.3-29.3 us against 33.5-33.9 us held, but kernel-ab's report at `d11bd41`
gave 35.7 us. Timed in the same rounds as single_read_coop, in a process that had not first timed
torch's and inductor's float32 cases, kernel-ab agrees with the probe (29.4 us against 33.8 held;
reports/timing_order_effect), and single_read_coop reads such launches again.

Read again (`Config.chunks`): a program streams its slice through in blocks of REREAD_BLOCK elements,
publishes the slice's partial statistics, waits for its group's other slices, then reads the slice again
(evict-first, from L2 while L2 still holds it) to write y. A program holds one block, not a slice, so 16
programs fit an SM: the slice count is chosen so that every program of the launch runs at once (one
turn), and the launch moves as many bytes at a time as L2 keeps rather than as registers hold
(`coop_launch.read_again`). The arithmetic, the wait and the backward are single_read_coop's. Only groups
split over programs (more than ON_CHIP elements) are read again; on a smaller group the variant is
reported "not run" (`NotForThisShape`), not run as single_read_coop's resident path under another name.
"""
from __future__ import annotations

import torch

from variants.group_norm.coop_launch import read_again
from variants.group_norm.single_read_coop import backward_kernel, backward_launcher, launch_with  # noqa: F401
from variants.group_norm.single_read_coop import group_norm_forward  # noqa: F401 (the spec entry: IR, CPU)


def launch(inputs, outputs: dict, shape) -> None:
    """The variant's launcher: `coop_launch.read_again` for the shape on this GPU, whatever its dtype."""
    x = inputs.x
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 1
    launch_with(read_again(shape.hidden_size, shape.batch * shape.num_groups / sms), inputs, outputs, shape)
