"""single_read_coop_reread: single_read_coop with each split slice read twice, the second time from L2, so
kernel-ab times read-again slices against held ones on every split shape (single_read_coop's launcher
picks one). A program streams its slice in REREAD_BLOCK blocks, publishes, waits, then reads it again
(evict-first) to write y; one block held, so every program of the launch runs at once. Groups within
ON_CHIP are "not run" (`NotForThisShape`): that would be single_read_coop's resident path renamed."""
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
