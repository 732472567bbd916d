"""A minimal family defined outside variants/ (y = x * W per column), to prove compare/ needs nothing
family-specific: it has one forward and one backward Triton kernel, a torch op, and nothing else."""
import torch
import triton
import triton.language as tl

from variants.baselines import torch_variants
from variants.family import Family
from variants.inputs import INPUT_KINDS, affine_operands
from variants.rows import RowShape, parse_shape


@triton.jit
def scale_forward(Y_ptr, X_ptr, W_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    at = tl.program_id(0).to(tl.int64) * n_cols + cols
    x = tl.load(X_ptr + at, mask=cols < n_cols).to(tl.float32)
    w = tl.load(W_ptr + cols, mask=cols < n_cols).to(tl.float32)
    tl.store(Y_ptr + at, x * w, mask=cols < n_cols)


@triton.jit
def scale_backward(DX_ptr, DW_ptr, DY_ptr, X_ptr, W_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    at = tl.program_id(0).to(tl.int64) * n_cols + cols
    dy = tl.load(DY_ptr + at, mask=cols < n_cols).to(tl.float32)
    x = tl.load(X_ptr + at, mask=cols < n_cols).to(tl.float32)
    tl.store(DX_ptr + at, dy * tl.load(W_ptr + cols, mask=cols < n_cols).to(tl.float32), mask=cols < n_cols)
    tl.atomic_add(DW_ptr + cols, dy * x, mask=cols < n_cols)


def scale_op(X, W):
    return X * W


class Scale(Family):
    """y = x * W, W per column."""

    name, outputs, grads, default_pair = "fake_scale", ("y",), ("dx", "dW"), ("mine", "torch")
    presets = {"default": parse_shape("5,24")}
    op_params, op_grads, torch_op = ("X", "W"), {"dx": "X", "dW": "W"}, staticmethod(scale_op)
    forward_params = ("Y_ptr", "X_ptr", "W_ptr", "n_cols", "BLOCK")
    backward_params = ("DX_ptr", "DW_ptr", "DY_ptr", "X_ptr", "W_ptr", "n_cols", "BLOCK")
    input_kinds = {k: INPUT_KINDS[k] for k in ("normal", "all_equal")}   # it refuses the others
    operands = affine_operands(lambda s: (s.cols,), 0.5, None)   # x, W = 1 + 0.5 randn per column; dy drawn after

    def parse_shape(self, text, eps=1e-6):
        return parse_shape(text, eps)

    def shape_from_dict(self, d):
        return RowShape(**d)

    def op_arguments(self, inputs, shape):
        return {"X": inputs.x, "W": inputs.weight}

    def reference(self, inputs, shape):
        return {"y": inputs.x.to(torch.float64) * inputs.weight.to(torch.float64)}

    def alloc_outputs(self, shape, dtype, device):
        return {"y": torch.empty(shape.tensor_shape, dtype=dtype, device=device)}

    def bytes_moved(self, shape, dtype, mode):
        return {"forward": 2, "backward": 3, "full": 5}[mode] * shape.numel * dtype.itemsize

    def launch_forward(self, kernel, inputs, outputs, shape):
        kernel[(shape.rows,)](outputs["y"], inputs.x, inputs.weight, shape.cols, BLOCK=shape.block_size)

    def shared_backward(self):
        return scale_backward

    def backward_call(self, kernel, inputs, saved, grads, shape):
        dw = torch.zeros(shape.cols, dtype=torch.float32, device=inputs.x.device)

        def backward():
            dw.zero_()
            kernel[(shape.rows,)](grads["dx"], dw, inputs.dy, inputs.x, inputs.weight, shape.cols, BLOCK=shape.block_size)
            grads["dW"].copy_(dw)
        return backward

    def variants(self):
        mine = self.triton_variant("mine", "the one Triton kernel", __file__, forward=scale_forward)
        return [mine] + torch_variants(self.name, scale_op, lambda x, w: (x * w,), lambda i, s: (i.x, i.weight),
                                       lambda r, out, s: out["y"].copy_(r[0]), "x * W")


FAKE = Scale()
