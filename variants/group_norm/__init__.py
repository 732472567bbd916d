"""The group-norm family (shared/specs/group_norm.md) on the family protocol (variants/family.py).

Every Triton variant brings its own forward kernel with the spec's signature (FORWARD_PARAMS); one
shared backward kernel (variants/group_norm/backward.py, BACKWARD_PARAMS) serves them all unless a
variant brings its own: a variant module may define `launch` (its forward launcher) and
`backward_kernel` with `backward_launcher` (Family.backward_call's signature), as single_read_coop does. Shapes and presets are in `shapes.py`, input kinds in variants/inputs.py.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Callable

import torch

from variants.baselines import torch_variants
from variants.family import Family
from variants.inputs import DTYPES, INPUT_KINDS, affine_operands, norm_operands
from variants.operands import Operands, Output
from variants.group_norm.shapes import PRESETS, SHAPE_FORM, Shape, parse_shape, triton_next_power_of_2
from variants.variant import Variant

__all__ = ["FAMILY", "GroupNorm", "Shape", "PRESETS", "DTYPES", "INPUT_KINDS", "norm_operands", "parse_shape",
           "triton_next_power_of_2", "make_inputs", "alloc_outputs"]

# The spec's forward signature: what `launch_forward` passes, in this order (BLOCK_SIZE by name).
FORWARD_PARAMS = (
    "Y_ptr", "Y_row_stride", "Y_col_stride",
    "X_ptr", "X_row_stride", "X_col_stride",
    "Mean_ptr", "Mean_row_stride", "Mean_col_stride",
    "RSTD_ptr", "RSTD_row_stride", "RSTD_col_stride",
    "W_ptr", "B_ptr",
    "hidden_size", "channels_per_group", "eps",
    "BLOCK_SIZE",
)
BACKWARD_PARAMS = (
    "DX_ptr", "DY_ptr", "X_ptr", "row_stride", "col_stride",
    "Mean_ptr", "RSTD_ptr", "stats_row_stride", "stats_col_stride",
    "W_ptr", "DW_ptr", "DB_ptr",
    "hidden_size", "channels_per_group",
    "BLOCK_SIZE",
)

TRITON_VARIANTS = (
    ("pointer_mutation", "the kernel before Liger-Kernel #999: base pointers advanced per channel (A)"),
    ("explicit_offset", "Liger-Kernel #999: explicit channel offsets and a tl.range inner loop (B)"),
    ("explicit_offset_range", "explicit channel offsets only, inner loop still range (edit 1 of B alone)"),
    ("pointer_mutation_tlrange", "pointer mutation kept, inner loop tl.range (edit 2 of B alone)"),
    ("flat", "no channel loop: one tl.range loop over the group, W and B gathered per element"),
    ("single_read", "x read once: group held in registers, shifted two-pass variance, own launcher (warps by size)"),
    ("single_read_tiled", "single_read with [rows, 8] tiles: W/B per row, two fused reductions"),
    ("single_read_coop", "x read once on every shape: a lean program per group, large groups split over "
                         "programs that wait for each other; its own backward reads x and dy once"),
    ("single_read_coop_reread", "single_read_coop with split slices streamed and read again from L2 after "
                                "the wait (split groups only)"),
)
# The largest group one program keeps in registers without spilling: 16 float32 values per thread of a
# 1,024-thread program (a multiprocessor's 65,536 registers also hold addresses, masks and temporaries).
# A larger group is read twice (statistics, then normalize) by a kernel that gives each group one program,
# which caps the forward at 2/3 of copy bandwidth unless the second read hits L2 (single_read_coop splits
# such a group over programs that wait for each other instead, and reads it once).
ON_CHIP_GROUP = 16384


def group_norm_op(X, W, B, num_channels, num_groups, eps):
    """The op with the family's canonical arguments, as torch computes it: torch.group_norm's own kernel,
    called without F.group_norm's check, which refuses a batch of one value per channel (a shape such as
    1,1,1,1 the family accepts: group statistics are per sample and need no batch)."""
    return torch.native_group_norm(X, W, B, X.shape[0], num_channels, math.prod(X.shape[2:]), num_groups, eps)[0]


def _native_args(inputs: Operands, shape: Shape) -> tuple:
    return (inputs.x, inputs.weight, inputs.bias, shape.batch, shape.channels, shape.spatial_size,
            shape.num_groups, shape.eps)


def _store(result, outputs: dict, shape: Shape) -> None:
    y, mean, rstd = result
    outputs["y"].copy_(y)
    outputs["mean"].copy_(mean.view(shape.batch, shape.num_groups))
    outputs["rstd"].copy_(rstd.view(shape.batch, shape.num_groups))


def _per_group(shape: Shape) -> tuple[int, int]:
    return (shape.batch, shape.num_groups)


class GroupNorm(Family):
    """GroupNorm of (batch, channels, *spatial) over `num_groups` groups; saves mean and rstd per (sample, group)."""

    name = "group_norm"
    presets = PRESETS
    gpu_preset = "review"   # what `review` takes on a GPU: the sizes the op is used at
    default_pair = ("pointer_mutation", "explicit_offset")
    shape_help = SHAPE_FORM
    # x, then W = 1 + 0.5 randn and B = 0.5 randn per channel, then dy; mean and rstd per (sample, group) in float32
    operands = affine_operands(lambda s: (s.channels,), 0.5, 0.5)
    outputs = ("y", Output("mean", _per_group, torch.float32), Output("rstd", _per_group, torch.float32))
    forward_legend = ("y: the output, in the input's dtype; mean, rstd: per (sample, group), in float32",)
    grads = ("dx", "dW", "dB")
    backward_legend = (
        "backward: each Triton variant's own forward gives mean and rstd, then the shared backward kernel "
        "(variants/group_norm/backward.py), or the variant's own where it brings one, gives dx, dW, dB; torch: autograd through torch's group_norm in the dtype; "
        "reference: float64 autograd, upstream gradient dy standard normal",
        "dx is poisoned before the launch like the forward's outputs; dW and dB are atomic adds into zeroed float32 "
        "buffers (then cast to the dtype), so a missing or wrong add cannot show as unwritten: it shows as error",
    )
    backward_pairs_legend = ("dW, dB: atomic adds land in whatever order programs finish, so on a GPU their bits "
                             "may differ from run to run, even for one variant against itself",)
    forward_params = FORWARD_PARAMS
    backward_params = BACKWARD_PARAMS
    op_params = ("X", "W", "B", "num_channels", "num_groups", "eps")
    op_grads = {"dx": "X", "dW": "W", "dB": "B"}
    op_aliases = {"X": ("input", "x", "_input"), "W": ("weight", "w", "affine_scaling_weight"),
                  "B": ("bias", "b", "affine_shifting_bias"), "num_channels": ("channels",), "num_groups": ("groups",)}
    torch_op = staticmethod(group_norm_op)

    def parse_shape(self, text: str, eps: float = 1e-6):
        return parse_shape(text, eps)

    def shape_from_dict(self, d: dict) -> Shape:
        return Shape.from_dict(d)

    def op_arguments(self, inputs: Operands, shape: Shape) -> dict:
        return {"X": inputs.x, "W": inputs.weight, "B": inputs.bias, "num_channels": shape.channels,
                "num_groups": shape.num_groups, "eps": shape.eps}

    def reference(self, inputs: Operands, shape: Shape) -> dict[str, torch.Tensor]:
        """y, mean and rstd in float64, on the inputs' device, from the inputs as the kernels see them."""
        x, w, b = (t.detach().to(torch.float64) for t in (inputs.x, inputs.weight, inputs.bias))
        groups = x.reshape(shape.batch, shape.num_groups, -1)
        mean = groups.mean(dim=-1)
        var = groups.var(dim=-1, unbiased=False)
        rstd = 1.0 / torch.sqrt(var + shape.eps)
        y = group_norm_op(x, w, b, shape.channels, shape.num_groups, shape.eps)
        return {"y": y, "mean": mean, "rstd": rstd}

    def bytes_moved(self, shape: Shape, dtype: torch.dtype, mode: str) -> int:
        """forward: x, W, B in; y, mean, rstd out. backward: x, dy, W, mean, rstd in; dx out, and dW, dB as
        the float32 sums the kernel adds into (the declarations would count them in the dtype). full, the
        fewest of both (variants.operands.declared_bytes): x, W, B and dy in, y, dx, dW and dB out, each once."""
        es = torch.empty((), dtype=dtype).element_size()
        stats = 2 * shape.batch * shape.num_groups * 4
        forward = 2 * shape.numel * es + 2 * shape.channels * es + stats
        backward = 3 * shape.numel * es + shape.channels * es + stats + 2 * shape.channels * 4
        full = 4 * shape.numel * es + 2 * shape.channels * es + 2 * shape.channels * 4
        return {"forward": forward, "backward": backward, "full": full}[_mode(mode)]

    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape: Shape) -> None:
        """One program per (batch, group) over the (batch, groups, hidden) view."""
        n, g, h = shape.batch, shape.num_groups, shape.hidden_size
        x = inputs.x.contiguous().view(n, g, h)
        y = outputs["y"].view(n, g, h)
        mean, rstd = outputs["mean"], outputs["rstd"]
        kernel[(n, g)](
            y, y.stride(0), y.stride(1),
            x, x.stride(0), x.stride(1),
            mean, mean.stride(0), mean.stride(1),
            rstd, rstd.stride(0), rstd.stride(1),
            inputs.weight, inputs.bias,
            h, shape.channels_per_group, shape.eps,
            BLOCK_SIZE=shape.block_size,
        )

    def reads_x_twice(self, shape: Shape) -> bool:
        """Whether a group is too large for one program to keep on chip, so a forward that gives each group
        one program reads x twice (recorded per shape in reports; the roofline plot draws the 2/3-of-copy
        cap there, for such kernels)."""
        return shape.hidden_size > ON_CHIP_GROUP

    def shared_backward(self):
        from variants.group_norm.backward import group_norm_backward
        return group_norm_backward

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: Shape) -> Callable[[], None]:
        """dx into grads["dx"]; dW, dB atomically added into zeroed float32 buffers (grads' own when they are
        float32, else accumulators cast into them after the launch)."""
        from variants.group_norm.backward import launch_backward
        wide = grads["dW"].dtype == torch.float32
        dw = grads["dW"] if wide else torch.zeros(shape.channels, dtype=torch.float32, device=inputs.x.device)
        db = grads["dB"] if wide else torch.zeros_like(dw)

        def backward():
            dw.zero_()
            db.zero_()
            launch_backward(kernel, inputs.x, inputs.dy, inputs.weight, saved["mean"], saved["rstd"],
                            grads["dx"], dw, db, shape)
            if not wide:
                grads["dW"].copy_(dw)
                grads["dB"].copy_(db)
        return backward

    def variants(self) -> list[Variant]:
        found = []
        for name, why in TRITON_VARIANTS:
            module = importlib.import_module(f"variants.group_norm.{name}")
            variant = self.triton_variant(name, why, f"variants/group_norm/{name}.py", forward=module.group_norm_forward)
            # a variant module with its own launcher (warps, blocks by shape) runs through it
            if hasattr(module, "launch"):
                variant = dataclasses.replace(variant, run=module.launch)
            # and one with its own backward names its kernel and launcher (Family.backward_call's signature)
            if hasattr(module, "backward_kernel"):
                variant = dataclasses.replace(variant, backward_kernel=module.backward_kernel,
                                              backward_launcher=module.backward_launcher)
            found.append(variant)
        return found + torch_variants(self.name, group_norm_op, torch.native_group_norm, _native_args, _store,
                                      "torch.native_group_norm")


def _mode(mode: str) -> str:
    if mode not in ("forward", "backward", "full"):
        raise ValueError(f"unknown mode {mode!r}; known modes: forward, backward, full")
    return mode


FAMILY = GroupNorm()
make_inputs = FAMILY.make_inputs
alloc_outputs = FAMILY.alloc_outputs
