"""pointer_mutation: rms norm with mutated base pointers, forward and backward.

Forward: Y, X and RSTD argument pointers are advanced to the program's row before use. Backward
(persistent): dY, dX, X and RSTD are set to the program's first row and advanced by their strides after
every row, so the row loop carries four pointers. dW is summed in float32 registers and stored once
into the program's row of the (P, n_cols) partial buffer that the launcher sums.
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
    Y_ptr += row * Y_row_stride
    X_ptr += row * X_row_stride
    RSTD_ptr += row * RSTD_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + cols, mask=mask, other=0.0)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0) if elementwise_affine else 0.0
    y, rstd = forward_row(x, w, n_cols, eps, offset, casting_mode, elementwise_affine)
    tl.store(RSTD_ptr, rstd.to(RSTD_ptr.dtype.element_ty))
    tl.store(Y_ptr + cols, y.to(Y_ptr.dtype.element_ty), mask=mask)


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
    dY_ptr += row_start * dY_row_stride
    dX_ptr += row_start * dX_row_stride
    X_ptr += row_start * X_row_stride
    RSTD_ptr += row_start * RSTD_row_stride
    for _ in range(row_start, row_end):
        dy = tl.load(dY_ptr + cols, mask=mask, other=0.0)
        x = tl.load(X_ptr + cols, mask=mask, other=0.0)
        rstd = tl.load(RSTD_ptr)
        dx, dw_row = backward_row(dy, x, w, rstd, n_cols, offset, X_dtype, casting_mode, elementwise_affine)
        tl.store(dX_ptr + cols, dx, mask=mask)
        dw += dw_row
        dY_ptr += dY_row_stride
        dX_ptr += dX_row_stride
        X_ptr += X_row_stride
        RSTD_ptr += RSTD_row_stride
    if elementwise_affine:
        tl.store(dW_ptr + program * dW_row_stride + cols, dw, mask=mask)
