"""explicit_offset: rms norm with row bases computed into new names, forward and backward.

Forward: y_base = Y_ptr + row * stride (and x_base, rstd_base); the argument pointers are never
reassigned. Backward (persistent): each row's pointers are computed from the row index inside the
iteration, so the row loop carries only the row index and the dW accumulator. The rewrite the family
is there to measure against pointer_mutation.
"""
import triton
import triton.language as tl

from variants.rms_norm.common import backward_row, forward_row


@triton.jit
def rms_norm_forward(
    Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, RSTD_ptr, RSTD_row_stride,
    n_cols, eps, offset, casting_mode: tl.constexpr, elementwise_affine: tl.constexpr, BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    y_base = Y_ptr + row * Y_row_stride
    x_base = X_ptr + row * X_row_stride
    rstd_base = RSTD_ptr + row * RSTD_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_base + cols, mask=mask, other=0.0)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0) if elementwise_affine else 0.0
    y, rstd = forward_row(x, w, n_cols, eps, offset, casting_mode, elementwise_affine)
    tl.store(rstd_base, rstd.to(RSTD_ptr.dtype.element_ty))
    tl.store(y_base + cols, y.to(Y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_backward(
    dY_ptr, dY_row_stride, dX_ptr, dX_row_stride, X_ptr, X_row_stride, X_dtype: tl.constexpr,
    W_ptr, W_row_stride, RSTD_ptr, RSTD_row_stride, dW_ptr, dW_row_stride, n_rows, n_cols, offset,
    rows_per_program, casting_mode: tl.constexpr, elementwise_affine: tl.constexpr, BLOCK_SIZE: tl.constexpr,
):
    program = tl.program_id(0).to(tl.int64)
    row_start = program * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(W_ptr + cols, mask=mask, other=0.0) if elementwise_affine else 0.0
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for row in range(row_start, row_end):
        dy = tl.load(dY_ptr + row * dY_row_stride + cols, mask=mask, other=0.0)
        x = tl.load(X_ptr + row * X_row_stride + cols, mask=mask, other=0.0)
        rstd = tl.load(RSTD_ptr + row * RSTD_row_stride)
        dx, dw_row = backward_row(dy, x, w, rstd, n_cols, offset, X_dtype, casting_mode, elementwise_affine)
        tl.store(dX_ptr + row * dX_row_stride + cols, dx, mask=mask)
        dw += dw_row
    if elementwise_affine:
        tl.store(dW_ptr + program * dW_row_stride + cols, dw, mask=mask)
