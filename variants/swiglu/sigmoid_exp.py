"""sigmoid_exp: rowwise with sigmoid written out as 1 / (1 + exp(-a)) instead of `tl.sigmoid`.

A real review question: is the hand-written form what `tl.sigmoid` compiles to, and is it as accurate
where exp(-a) overflows (a below about -88 in float32: 1 / inf = 0, which is still the right limit)?
Everything else (addressing, float32 arithmetic, the in-place backward) is rowwise's, line for line.
"""
import triton
import triton.language as tl

from variants.swiglu.common import gated, gated_grads


@triton.jit
def exp_sigmoid(a):
    return 1.0 / (1.0 + tl.exp(-a))


@triton.jit
def swiglu_forward(a_ptr, b_ptr, c_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * row_stride
    a_ptr += row_start
    b_ptr += row_start
    c_ptr += row_start
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a = tl.load(a_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + cols, gated(a, b, exp_sigmoid(a)).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_backward(dc_ptr, a_ptr, b_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * row_stride
    dc_ptr += row_start
    a_ptr += row_start
    b_ptr += row_start
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    dc = tl.load(dc_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    da, db = gated_grads(dc, a, b, exp_sigmoid(a))
    tl.store(a_ptr + cols, da.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + cols, db.to(b_ptr.dtype.element_ty), mask=mask)
