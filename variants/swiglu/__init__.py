"""The swiglu family (shared/specs/swiglu.md): c = silu(a) * b, elementwise over two operands of one shape
viewed as (rows, cols). Variants: rowwise, flat, sigmoid_exp (one file each), torch, inductor.

The backward writes da over a and db over b; the launchers hand it gradient buffers holding copies of them
(docs/variants-and-families.md, "Kernels that write into their inputs").
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from variants.baselines import torch_variants
from variants.family import Family, Preset
from variants.inputs import normal, nonfinite, tiny
from variants.operands import Operand, Operands, Output
from variants.rows import SHAPE_FORM, RowShape, parse_shape
from variants.variant import Variant

PARAMS = ("row_stride", "n_cols", "BLOCK_SIZE")
ROW_VARIANTS = (
    ("rowwise", "the spec's kernels: one program per row, pointers advanced from the row index, tl.sigmoid"),
    ("sigmoid_exp", "rowwise with sigmoid written as 1 / (1 + exp(-a)) instead of tl.sigmoid"),
)
LARGE = 90.0   # |a| up to this: sigmoid saturates in every dtype, exp(-a) overflows float16 below -11


def large(shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """a uniform in [-90, 90]: sigmoid saturates to 0 or 1 and a * (1 - s) meets 0 * large."""
    return LARGE * (2.0 * torch.rand(*shape.tensor_shape, generator=gen, dtype=torch.float64) - 1.0)


INPUT_KINDS = {"normal": normal, "large": large, "tiny": tiny, "nonfinite": nonfinite}


def swiglu_op(a, b):
    """The op with the family's canonical arguments, as torch computes it (in the inputs' dtype)."""
    return torch.nn.functional.silu(a) * b


def _presets() -> dict[str, Preset]:
    return {p.name: p for p in (
        Preset("default", "small shapes the CPU interpreter runs in seconds: 4 x 64, 8 x 256, 16 x 1000 "
               "(not a power of two)", (RowShape(4, 64), RowShape(8, 256), RowShape(16, 1000)), x_name="cols"),
        Preset("llm", "an LLM's feed-forward activations: 4096 rows x intermediate sizes 4096, 8192, 11008, "
               "14336, 28672", tuple(RowShape(4096, c) for c in (4096, 8192, 11008, 14336, 28672)), x_name="cols"),
        Preset("review", "what review takes on a GPU: 1024 rows x intermediate 11008 (Llama 2 7B; rows are "
               "independent: each row's work as in llm)", (RowShape(1024, 11008),), x_name="cols"),
    )}


class Swiglu(Family):
    """c = silu(a) * b over (rows, cols); the backward writes da over a and db over b."""

    name = "swiglu"
    presets = _presets()
    gpu_preset = "review"   # what `review` takes on a GPU: the sizes the op is used at
    default_pair = ("rowwise", "sigmoid_exp")
    shape_help = SHAPE_FORM
    input_kinds = INPUT_KINDS
    # b is standard normal whatever the kind: the kinds are about a, the operand sigmoid is taken of
    operands = (Operand("a", differentiable=True), Operand("b", differentiable=True, draw=normal))
    outputs = (Output("c", upstream="dc"),)
    grads = (Output("da", of="a", overwrites="a"), Output("db", of="b", overwrites="b"))
    forward_legend = ("c in the inputs' dtype; every kernel computes in float32 and rounds once, torch rounds "
                      "silu(a) to the dtype before multiplying by b",)
    backward_legend = (
        "backward: each Triton variant's own in-place kernel, handed the gradient buffers holding copies of a and "
        "b, writes da over a and db over b; an element still holding a's or b's bits where the reference differs "
        "is unwritten. torch: autograd through silu(a) * b in the dtype; reference: float64 autograd, dc standard "
        "normal",
    )
    forward_params = ("a_ptr", "b_ptr", "c_ptr") + PARAMS
    backward_params = ("dc_ptr", "a_ptr", "b_ptr") + PARAMS
    # silu-and-mul's other names: gate and up projections
    op_aliases = {"a": ("gate", "x_gate", "gate_proj"), "b": ("up", "x_up", "up_proj")}
    torch_op = staticmethod(swiglu_op)

    def parse_shape(self, text: str, eps: float = 1e-6) -> Preset:
        return parse_shape(text, eps)

    def shape_from_dict(self, d: dict) -> RowShape:
        return RowShape(**d)

    def reference(self, inputs: Operands, shape: RowShape) -> dict[str, torch.Tensor]:
        a, b = (t.detach().to(torch.float64) for t in (inputs.a, inputs.b))
        return {"c": a * torch.sigmoid(a) * b}

    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape: RowShape) -> None:
        """Grid (rows,), the whole row in one block of the next power of two of cols."""
        a, b, c = inputs.a.contiguous(), inputs.b.contiguous(), outputs["c"]
        kernel[(shape.rows,)](a, b, c, a.stride(0), shape.cols, BLOCK_SIZE=shape.block_size, num_warps=shape.num_warps)

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: RowShape) -> Callable[[], None]:
        """Grid (rows,): the kernel writes da over its a and db over its b, which are the gradient buffers,
        filled with copies of a and b first (the copies are part of the pass, timed with it)."""
        dc, da, db = inputs.dc.contiguous(), grads["da"], grads["db"]

        def backward():
            da.copy_(inputs.a)
            db.copy_(inputs.b)
            kernel[(shape.rows,)](dc, da, db, da.stride(0), shape.cols, BLOCK_SIZE=shape.block_size,
                                  num_warps=shape.num_warps)
        return backward

    def flat_forward_call(self, kernel, inputs: Operands, outputs: dict, shape: RowShape) -> None:
        """A 1-D grid of fixed-size blocks over every element (variants/swiglu/flat.py)."""
        from variants.swiglu.flat import BLOCK_SIZE
        a, b = inputs.a.contiguous(), inputs.b.contiguous()
        kernel[(math.ceil(shape.numel / BLOCK_SIZE),)](a, b, outputs["c"], shape.numel, BLOCK_SIZE=BLOCK_SIZE)

    def flat_backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape: RowShape):
        """The flat backward, in place over the gradient buffers as `backward_call`'s."""
        from variants.swiglu.flat import BLOCK_SIZE
        dc, da, db = inputs.dc.contiguous(), grads["da"], grads["db"]

        def backward():
            da.copy_(inputs.a)
            db.copy_(inputs.b)
            kernel[(math.ceil(shape.numel / BLOCK_SIZE),)](dc, da, db, shape.numel, BLOCK_SIZE=BLOCK_SIZE)
        return backward

    def shared_forward(self):
        from variants.swiglu.rowwise import swiglu_forward
        return swiglu_forward

    def shared_backward(self):
        from variants.swiglu.rowwise import swiglu_backward
        return swiglu_backward

    def variants(self) -> list[Variant]:
        found = self.module_variants(ROW_VARIANTS, "swiglu_forward", "swiglu_backward")
        from variants.swiglu import flat
        found.append(self.triton_variant(
            "flat", "one flat array, a 1-D grid of fixed-size blocks with no row structure, forward and backward",
            "variants/swiglu/flat.py", forward=flat.swiglu_forward, backward=flat.swiglu_backward,
            forward_launcher=self.flat_forward_call, backward_launcher=self.flat_backward_call))
        return found + torch_variants(self.name, swiglu_op, swiglu_op, lambda i, s: (i.a, i.b),
                                      lambda c, out, s: out["c"].copy_(c), "F.silu(a) * b")


FAMILY = Swiglu()
