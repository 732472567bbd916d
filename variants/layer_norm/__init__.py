"""The layer-norm family (shared/specs/layer_norm.md) on the family protocol (variants/family.py).

X viewed as (rows, cols); one shared forward kernel (`forward.py`); the variants are backward kernels:
persistent with loop-carried row pointers (`bwd_pointer_mutation`), persistent with explicit row offsets
(`bwd_explicit_offset`, also the shared backward for kernels that bring only a forward) and one program
per row with atomic adds (`bwd_atomic`, its own launcher). Shapes, presets: variants/rows.py.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

from variants.baselines import torch_variants
from variants.family import Family
from variants.inputs import affine_operands
from variants.operands import Operands, Output
from variants.rows import SHAPE_FORM, RowShape, parse_shape, presets, programs
from variants.variant import Variant

FORWARD_PARAMS = ("Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "W_row_stride", "B_ptr", "B_row_stride",
                  "Mean_ptr", "Mean_row_stride", "RSTD_ptr", "RSTD_row_stride", "n_cols", "eps", "BLOCK_SIZE")
BACKWARD_PARAMS = ("X_ptr", "stride_x", "W_ptr", "Mean_ptr", "stride_mean", "RSTD_ptr", "stride_rstd", "DX_ptr",
                   "stride_dx", "DW_ptr", "stride_dw", "DB_ptr", "stride_db", "DY_ptr", "stride_dy", "n_rows",
                   "n_cols", "rows_per_program", "BLOCK_SIZE")
BACKWARD_VARIANTS = (
    ("bwd_pointer_mutation", "persistent backward, five row pointers advanced every row (loop-carried)"),
    ("bwd_explicit_offset", "persistent backward, each row's pointers computed from the row index"),
    ("bwd_atomic", "one program per row, dW and dB atomically added (before the partial reduction)"),
)


def layer_norm_op(X, W, B, eps):
    """The op with the family's canonical arguments, as torch computes it."""
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), W, B, eps)


def _native_args(inputs: Operands, shape: RowShape) -> tuple:
    return inputs.x, [shape.cols], inputs.weight, inputs.bias, shape.eps


def _store(result, outputs: dict, shape: RowShape) -> None:
    y, mean, rstd = result
    outputs["y"].copy_(y)
    outputs["mean"].copy_(mean.view(shape.rows))
    outputs["rstd"].copy_(rstd.view(shape.rows))


class LayerNorm(Family):
    """LayerNorm over the last dimension of (rows, cols), weight and bias; saves mean and rstd per row."""

    name = "layer_norm"
    presets = presets("layer_norm")
    gpu_preset = "review"   # what `review` takes on a GPU: the sizes the op is used at
    default_pair = ("bwd_pointer_mutation", "bwd_explicit_offset")
    shape_help = SHAPE_FORM
    # x, then W = 1 + 0.1 randn and B = 0.1 randn per column, then dy; mean and rstd per row, in the input dtype
    operands = affine_operands(lambda s: (s.cols,), 0.1, 0.1)
    outputs = ("y", Output("mean", "rows"), Output("rstd", "rows"))
    backward_reads = ("x", "weight", "mean", "rstd")   # and dy: the bias has no part in the gradients
    forward_legend = ("y, mean, rstd: all in the input's dtype (mean and rstd per row; the spec keeps them in the "
                      "input dtype, a known weakness in float16/bfloat16)",)
    grads = ("dx", "dW", "dB")
    backward_legend = (
        "backward: every Triton variant runs the shared forward kernel (variants/layer_norm/forward.py) for mean "
        "and rstd, then its own backward kernel; persistent kernels store float32 dW, dB partials per program, "
        "summed by the launcher; bwd_atomic adds into zeroed float32 buffers; all cast to the dtype. torch: "
        "autograd through torch's layer_norm in the dtype; reference: float64 autograd, dy standard normal",
    )
    backward_pairs_legend = ("dW, dB of bwd_atomic: atomic adds land in whatever order programs finish, so on a GPU "
                             "their bits may differ from run to run",)
    forward_params = FORWARD_PARAMS
    backward_params = BACKWARD_PARAMS
    op_params = ("X", "W", "B", "eps")
    op_grads = {"dx": "X", "dW": "W", "dB": "B"}
    op_aliases = {"X": ("input", "x", "_input", "hidden_states"), "W": ("weight", "w"), "B": ("bias", "b")}
    torch_op = staticmethod(layer_norm_op)

    def parse_shape(self, text: str, eps: float = 1e-6):
        return parse_shape(text, eps)

    def shape_from_dict(self, d: dict) -> RowShape:
        return RowShape(**d)

    def op_arguments(self, inputs: Operands, shape: RowShape) -> dict:
        # normalized_shape: F.layer_norm's, the last dimension
        return {"X": inputs.x, "W": inputs.weight, "B": inputs.bias, "eps": shape.eps, "normalized_shape": (shape.cols,)}

    def reference(self, inputs: Operands, shape: RowShape) -> dict[str, torch.Tensor]:
        x, w, b = (t.detach().to(torch.float64) for t in (inputs.x, inputs.weight, inputs.bias))
        mean = x.mean(dim=-1)
        rstd = 1.0 / torch.sqrt(x.var(dim=-1, unbiased=False) + shape.eps)
        return {"y": layer_norm_op(x, w, b, shape.eps), "mean": mean, "rstd": rstd}

    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape: RowShape) -> None:
        """Grid (rows,), the whole row in one block, num_warps from the row length."""
        x = inputs.x.contiguous()
        y, mean, rstd = outputs["y"], outputs["mean"], outputs["rstd"]
        kernel[(shape.rows,)](
            y, y.stride(0), x, x.stride(0), inputs.weight, inputs.weight.stride(0), inputs.bias, inputs.bias.stride(0),
            mean, mean.stride(0), rstd, rstd.stride(0), shape.cols, shape.eps,
            BLOCK_SIZE=shape.block_size, num_warps=shape.num_warps,
        )

    def shared_forward(self):
        from variants.layer_norm.forward import layer_norm_forward
        return layer_norm_forward

    def shared_backward(self):
        from variants.layer_norm.bwd_explicit_offset import layer_norm_backward
        return layer_norm_backward

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: RowShape) -> Callable[[], None]:
        """Persistent: grid (P,) with P the SM count (1 on the CPU), rows_per_program = ceil(rows / P); each
        program stores its float32 dW, dB partial row, summed over P and cast into grads after the launch."""
        p = programs(inputs.x.device)
        dw = torch.empty(p, shape.cols, dtype=torch.float32, device=inputs.x.device)
        db = torch.empty_like(dw)
        return self._backward(kernel, inputs, saved, grads, shape, (p,), math.ceil(shape.rows / p), dw, db,
                              lambda: (grads["dW"].copy_(dw.sum(0)), grads["dB"].copy_(db.sum(0))))

    def atomic_backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: RowShape):
        """Per row: grid (rows,), rows_per_program 1; dW, dB atomically added into zeroed float32 (cols,) buffers."""
        dw = torch.empty(1, shape.cols, dtype=torch.float32, device=inputs.x.device)
        db = torch.empty_like(dw)

        def finish():
            grads["dW"].copy_(dw[0])
            grads["dB"].copy_(db[0])
        return self._backward(kernel, inputs, saved, grads, shape, (shape.rows,), 1, dw, db, finish, zero=True)

    def _backward(self, kernel, inputs, saved, grads, shape, grid, rows_per_program, dw, db, finish, zero=False):
        x, dy, dx = inputs.x.contiguous(), inputs.dy.contiguous(), grads["dx"]
        mean, rstd = saved["mean"], saved["rstd"]

        def backward():
            if zero:
                dw.zero_()
                db.zero_()
            kernel[grid](
                x, x.stride(0), inputs.weight, mean, mean.stride(0), rstd, rstd.stride(0), dx, dx.stride(0),
                dw, dw.stride(0), db, db.stride(0), dy, dy.stride(0), shape.rows, shape.cols,
                rows_per_program=rows_per_program, BLOCK_SIZE=shape.block_size, num_warps=shape.num_warps,
            )
            finish()
        return backward

    def variants(self) -> list[Variant]:
        found = [dataclasses.replace(v, backward_launcher=self.atomic_backward_call) if v.name == "bwd_atomic" else v
                 for v in self.module_variants(BACKWARD_VARIANTS, backward="layer_norm_backward")]
        return found + torch_variants(self.name, layer_norm_op, torch.native_layer_norm, _native_args, _store,
                                      "torch.native_layer_norm")


FAMILY = LayerNorm()
