"""The cross-entropy family (shared/specs/cross_entropy.md) on the operand protocol (variants/operands.py).

Logits X (rows, V), int64 targets; the forward kernel writes each row's loss and, over the row's logits, its
gradient (`x_grad` overwrites X: the launcher hands the kernel a copy of X in x_grad's buffer, timed with it);
the backward scales that by dloss (`common.scale_gradient`). Variants: `two_pass.py` (three reads of a row),
`online.py` (two), torch, inductor; `inplace_op.py`: the op as libraries ship it (no copy), for --variant.
"""
from __future__ import annotations

from typing import Callable

import torch

from variants.baselines import torch_variants
from variants.cross_entropy import shapes
from variants.cross_entropy.reference import cross_entropy_op, loss_and_gradient, reference
from variants.cross_entropy.shapes import SHAPE_FORM, CEShape
from variants.family import Family
from variants.operands import Operand, Operands, Output
from variants.variant import Variant

FORWARD_PARAMS = ("X_ptr", "X_row_stride", "T_ptr", "Loss_ptr", "n_cols", "n_valid", "ignore_index",
                  "label_smoothing", "reduction", "BLOCK_SIZE")
BACKWARD_PARAMS = ("dX_ptr", "dX_row_stride", "Grad_ptr", "Grad_row_stride", "G_ptr", "G_stride", "n_cols",
                   "BLOCK_SIZE")
TRITON_VARIANTS = (
    ("two_pass", "the row read three times: its max, then sum exp(x - max), then the gradient"),
    ("online", "the row read twice: a running max with a rescaled running sum (online softmax), then the gradient"),
)
BACKWARD_BLOCK = 4096   # the backward is elementwise: a fixed chunk per program, a second grid axis over V


def _loss_size(shape: CEShape) -> tuple[int, ...]:
    return (shape.rows,) if shape.reduction == "none" else ()


def _native_args(inputs: Operands, shape: CEShape) -> tuple:
    return inputs.X, inputs.target, shape.ignore_index, shape.label_smoothing, shape.reduction


def _store(result, outputs: dict, shape: CEShape) -> None:
    outputs["loss"].copy_(result[0])
    outputs["x_grad"].copy_(result[1])


class CrossEntropy(Family):
    """Cross entropy of (rows, V) logits against integer targets; the forward writes the gradient over the logits.

    Targets may be ignore_index; the loss is a scalar (mean, sum) or per row (none)."""

    name = "cross_entropy"
    presets = shapes.PRESETS
    gpu_preset = "review"   # what `review` takes on a GPU: the sizes the op is used at
    default_pair = ("two_pass", "online")
    shape_help = SHAPE_FORM
    input_kinds = shapes.LOGITS
    operands = (Operand("X", differentiable=True), Operand("target", "rows", torch.int64, draw=shapes.TARGETS))
    # the loss in float32, as the kernels store it; x_grad is written over (a copy of) the logits
    outputs = (Output("loss", _loss_size, torch.float32, upstream="dloss"), Output("x_grad", overwrites="X"))
    forward_legend = (
        "loss: float32 (a scalar for mean and sum, per row for none; torch's, in the dtype, is copied in); x_grad: "
        "the gradient for an upstream gradient of 1, in the logits' dtype, written by the Triton kernels over the "
        "logits (the launcher's copy of them); reference: torch in float64, autograd for x_grad",)
    grads = (Output("dx", of="X"),)
    backward_legend = (
        "backward: each Triton variant's own forward writes x_grad, then the shared kernel scales it by the upstream "
        "gradient dloss (float32, standard normal); torch: autograd in the dtype; reference: float64 autograd",)
    forward_params = FORWARD_PARAMS
    backward_params = BACKWARD_PARAMS
    op_params = ("X", "target", "ignore_index", "label_smoothing", "reduction")
    op_aliases = {"X": ("input", "_input", "logits", "x"), "target": ("labels", "targets")}
    # F.cross_entropy's (and libraries') parameters the family leaves at torch's defaults
    op_neutral = {"weight": None, "size_average": None, "reduce": None}
    torch_op = staticmethod(cross_entropy_op)

    def parse_shape(self, text: str, eps: float = 1e-6):
        return shapes.parse_shape(text, eps)

    def shape_from_dict(self, d: dict) -> CEShape:
        return CEShape(**d)

    def op_arguments(self, inputs: Operands, shape: CEShape) -> dict:
        return dict(zip(self.op_params, _native_args(inputs, shape)))

    def reference(self, inputs: Operands, shape: CEShape) -> dict[str, torch.Tensor]:
        loss, grad = reference(*_native_args(inputs, shape))
        return {"loss": loss, "x_grad": grad}

    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape: CEShape) -> None:
        """Grid (rows,); the kernel overwrites `x_grad`, which holds the logits when it starts."""
        from variants.cross_entropy.common import launch
        logits = outputs["x_grad"]
        logits.copy_(inputs.X)
        loss = launch(kernel, logits, inputs.target, shape.ignore_index, shape.label_smoothing, shape.reduction,
                      shape.max_block)
        outputs["loss"].copy_(loss)

    def shared_backward(self):
        from variants.cross_entropy.common import scale_gradient
        return scale_gradient

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: CEShape) -> Callable[[], None]:
        """Grid (rows, chunks of BACKWARD_BLOCK); dloss broadcast over the row (stride 0 for a scalar loss)."""
        grad, dx, dy = saved["x_grad"], grads["dx"], inputs.dloss
        block = min(BACKWARD_BLOCK, shape.block_size)
        grid = (shape.rows, -(-shape.vocab // block))
        g_stride = 1 if shape.reduction == "none" else 0

        def backward():
            kernel[grid](dx, dx.stride(0), grad, grad.stride(0), dy, g_stride, shape.vocab, BLOCK_SIZE=block)
        return backward

    def variants(self) -> list[Variant]:
        return self.module_variants(TRITON_VARIANTS, "cross_entropy_forward") + torch_variants(self.name, cross_entropy_op, loss_and_gradient, _native_args, _store,
                                      "F.cross_entropy and its autograd gradient for an upstream gradient of 1")


FAMILY = CrossEntropy()
