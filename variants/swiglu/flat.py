"""flat: the tensors as one flat array, a 1-D grid of fixed-size blocks, no row structure (only the last
block is masked). It asks whether the spec's one-block-per-row geometry (a power-of-two block masked at every
row's end: 28672 columns run in blocks of 32768) costs anything. Launched by `Swiglu.flat_forward_call` and
`Swiglu.flat_backward_call`; the backward writes da over a and db over b like rowwise's.
"""
import triton
import triton.language as tl

from variants.swiglu.common import gated, gated_grads

BLOCK_SIZE = 1024


@triton.jit
def swiglu_forward(a_ptr, b_ptr, c_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offsets, gated(a, b, tl.sigmoid(a)).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_backward(dc_ptr, a_ptr, b_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    dc = tl.load(dc_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    da, db = gated_grads(dc, a, b, tl.sigmoid(a))
    tl.store(a_ptr + offsets, da.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + offsets, db.to(b_ptr.dtype.element_ty), mask=mask)
