"""rowwise: the spec's kernels as written, one program per row.

Each program advances the row's pointers from its row index and covers the row in one block of the next
power of two of n_cols; sigmoid is `tl.sigmoid`. The backward writes da over a and db over b (the launcher
hands it the gradient buffers holding copies of a and b). It is the baseline the other forms are read against.
"""
import triton
import triton.language as tl

from variants.swiglu.common import gated, gated_grads


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
    tl.store(c_ptr + cols, gated(a, b, tl.sigmoid(a)).to(c_ptr.dtype.element_ty), mask=mask)


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
    da, db = gated_grads(dc, a, b, tl.sigmoid(a))
    tl.store(a_ptr + cols, da.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + cols, db.to(b_ptr.dtype.element_ty), mask=mask)
