"""The rms-norm family (shared/specs/rms_norm.md) on the family protocol: X viewed as (rows, cols),
y = x * rstd * (offset + W). Each variant brings a forward and a persistent backward kernel, in the
pointer-mutating or explicit-offset form (explicit_offset's are the shared ones). The casting mode and
offset are part of the shape (`RmsShape`): --shape takes ROWS,COLS[,OFFSET[,MODE]]; `*_gemma` presets: gemma, 1."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

from variants.baselines import torch_variants
from variants.family import Family, Preset, check_float32
from variants.inputs import affine_operands
from variants.operands import Operands, Output
from variants.rows import RowShape, presets, programs
from variants.variant import Variant

CASTING_MODES = {"llama": 0, "gemma": 1, "none": -1}
SHAPE_FORM = "ROWS,COLS[,OFFSET[,MODE]] with MODE llama, gemma or none (for example 4096,1024,1.0,gemma)"
FORWARD_PARAMS = ("Y_ptr", "Y_row_stride", "X_ptr", "X_row_stride", "W_ptr", "W_row_stride", "RSTD_ptr",
                  "RSTD_row_stride", "n_cols", "eps", "offset", "casting_mode", "elementwise_affine", "BLOCK_SIZE")
BACKWARD_PARAMS = ("dY_ptr", "dY_row_stride", "dX_ptr", "dX_row_stride", "X_ptr", "X_row_stride", "X_dtype",
                   "W_ptr", "W_row_stride", "RSTD_ptr", "RSTD_row_stride", "dW_ptr", "dW_row_stride", "n_rows",
                   "n_cols", "offset", "rows_per_program", "casting_mode", "elementwise_affine", "BLOCK_SIZE")
TRITON_VARIANTS = (
    ("pointer_mutation", "forward and backward advance their base pointers (backward: loop-carried, per row)"),
    ("explicit_offset", "forward and backward compute each row's pointers from the row index"),
)


@dataclasses.dataclass(frozen=True)
class RmsShape(RowShape):
    """(rows, cols), with the weight's offset and the casting mode."""

    offset: float = 0.0
    casting: str = "llama"

    def __post_init__(self):
        super().__post_init__()
        check_float32("offset", self.offset)
        if self.casting not in CASTING_MODES:
            raise ValueError(f"casting mode {self.casting!r} is not one of {', '.join(CASTING_MODES)}")

    @property
    def casting_mode(self) -> int:
        return CASTING_MODES[self.casting]

    @property
    def label(self) -> str:
        default = (self.offset, self.casting) == (0.0, "llama")
        return super().label + ("" if default else f" {self.casting} offset {self.offset:g}")

    def as_dict(self) -> dict:
        return {**super().as_dict(), "offset": self.offset, "casting": self.casting}


def _gemma(rows: int, cols: int) -> RmsShape:
    return RmsShape(rows, cols, offset=1.0, casting="gemma")


PRESETS = {**presets("rms_norm", RmsShape, why="; llama casting, offset 0"),
           **presets("rms_norm", _gemma, "_gemma", "; gemma casting, offset 1")}


def parse_shape(text: str, eps: float = 1e-6) -> Preset:
    """A one-shape preset from 'ROWS,COLS[,OFFSET[,MODE]]' (ValueError if bad)."""
    parts = text.split(",")
    try:
        if not 2 <= len(parts) <= 4:
            raise ValueError
        rows, cols = int(parts[0]), int(parts[1])
        offset = float(parts[2]) if len(parts) > 2 else 0.0
    except ValueError:
        raise ValueError(f"--shape {text!r} is not {SHAPE_FORM}") from None
    shape = RmsShape(rows, cols, eps, offset, parts[3].strip() if len(parts) > 3 else "llama")
    return Preset("custom", f"the one shape {shape.label}", (shape,), x_name="cols")


def rms_norm_torch(X, W, eps, offset, casting_mode):
    """(y, rstd) in torch with the spec's casting modes (rstd per row: float32, or the dtype for none).
    "float32" means at least float32: on float64 inputs (the reference backward) nothing is narrowed."""
    if casting_mode == "none":
        rstd = torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + eps)
        return X * rstd * (offset + W), rstd.squeeze(-1)
    wide = torch.promote_types(X.dtype, torch.float32)
    xf = X.to(wide)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if casting_mode == "llama":
        return (xf * rstd).to(X.dtype) * (offset + W), rstd.squeeze(-1)
    return (xf * rstd * (offset + W.to(wide))).to(X.dtype), rstd.squeeze(-1)


def rms_norm_op(X, W, eps, offset, casting_mode):
    """The op with the family's canonical arguments, as torch computes it."""
    return rms_norm_torch(X, W, eps, offset, casting_mode)[0]


def _native_args(inputs: Operands, shape: RmsShape) -> tuple:
    return inputs.x, inputs.weight, shape.eps, shape.offset, shape.casting


def _store(result, outputs: dict, shape: RmsShape) -> None:
    outputs["y"].copy_(result[0])
    outputs["rstd"].copy_(result[1])


def _tl_dtype(dtype: torch.dtype):
    import triton.language as tl
    return {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}[dtype]


def _rstd_dtype(shape: RmsShape, dtype: torch.dtype) -> torch.dtype:
    """rstd is kept in the input's dtype in casting mode "none", in float32 otherwise."""
    return dtype if shape.casting == "none" else torch.float32


class RmsNorm(Family):
    """RMSNorm over the last dimension of (rows, cols), weight plus an offset; saves rstd per row."""

    name = "rms_norm"
    presets = PRESETS
    gpu_preset = "review"   # what `review` takes on a GPU: the sizes the op is used at
    default_pair = ("pointer_mutation", "explicit_offset")
    shape_help = SHAPE_FORM
    # x, then W = 1 + 0.1 randn per column, then dy (no bias); rstd per row in its casting mode's dtype
    operands = affine_operands(lambda s: (s.cols,), 0.1, None)
    outputs = ("y", Output("rstd", "rows", dtype=_rstd_dtype))
    backward_reads = ("x", "weight", "rstd")   # and dy
    forward_legend = ("y: in the input's dtype; rstd per row: float32 (llama, gemma casting) or the input's dtype "
                      "(none); the float64 reference is the exact function whatever the casting mode",)
    grads = ("dx", "dW")
    backward_legend = (
        "backward: each Triton variant's own forward gives rstd, then its own persistent backward kernel gives dx "
        "and float32 dW partials per program, summed by the launcher and cast to the dtype; torch: autograd "
        "through the same casting in the dtype; reference: float64 autograd, dy standard normal",
    )
    forward_params = FORWARD_PARAMS
    backward_params = BACKWARD_PARAMS
    op_params = ("X", "W", "eps", "offset", "casting_mode")
    op_grads = {"dx": "X", "dW": "W"}
    op_aliases = {"X": ("input", "x", "_input", "hidden_states"), "W": ("weight", "w")}
    torch_op = staticmethod(rms_norm_op)

    def parse_shape(self, text: str, eps: float = 1e-6):
        return parse_shape(text, eps)

    def shape_from_dict(self, d: dict) -> RmsShape:
        return RmsShape(**d)

    def op_arguments(self, inputs: Operands, shape: RmsShape) -> dict:
        # normalized_shape: F.rms_norm's, the last dimension
        return {"X": inputs.x, "W": inputs.weight, "eps": shape.eps, "offset": shape.offset,
                "casting_mode": shape.casting, "normalized_shape": (shape.cols,)}

    def reference(self, inputs: Operands, shape: RmsShape) -> dict[str, torch.Tensor]:
        x, w = (t.detach().to(torch.float64) for t in (inputs.x, inputs.weight))
        rstd = torch.rsqrt(x.pow(2).mean(-1) + shape.eps)
        return {"y": x * rstd[:, None] * (shape.offset + w), "rstd": rstd}

    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape: RmsShape) -> None:
        """Grid (rows,), the whole row in one block, num_warps from the row length; always with a weight."""
        x, w = inputs.x.contiguous(), inputs.weight
        y, rstd = outputs["y"], outputs["rstd"]
        kernel[(shape.rows,)](
            y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd, rstd.stride(0), shape.cols, shape.eps, shape.offset,
            casting_mode=shape.casting_mode, elementwise_affine=True, BLOCK_SIZE=shape.block_size,
            num_warps=shape.num_warps,
        )

    def shared_forward(self):
        from variants.rms_norm.explicit_offset import rms_norm_forward
        return rms_norm_forward

    def shared_backward(self):
        from variants.rms_norm.explicit_offset import rms_norm_backward
        return rms_norm_backward

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: RmsShape) -> Callable[[], None]:
        """Persistent: grid (P,) with P the SM count (1 on the CPU), rows_per_program = ceil(rows / P); each
        program stores its float32 dW partial row, summed over P and cast into grads after the launch."""
        p = programs(inputs.x.device)
        x, dy, dx, w, rstd = inputs.x.contiguous(), inputs.dy.contiguous(), grads["dx"], inputs.weight, saved["rstd"]
        dw = torch.empty(p, shape.cols, dtype=torch.float32, device=inputs.x.device)

        def backward():
            kernel[(p,)](
                dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), _tl_dtype(x.dtype), w, w.stride(0),
                rstd, rstd.stride(0), dw, dw.stride(0), shape.rows, shape.cols, shape.offset, math.ceil(shape.rows / p),
                casting_mode=shape.casting_mode, elementwise_affine=True, BLOCK_SIZE=shape.block_size,
                num_warps=shape.num_warps,
            )
            grads["dW"].copy_(dw.sum(0))
        return backward

    def variants(self) -> list[Variant]:
        found = self.module_variants(TRITON_VARIANTS, "rms_norm_forward", "rms_norm_backward")
        return found + torch_variants(self.name, rms_norm_op, rms_norm_torch, _native_args, _store,
                                      "x * rsqrt(mean(x^2) + eps) * (offset + W) in torch with the casting mode")


FAMILY = RmsNorm()
