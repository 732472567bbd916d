"""bwd_pointer_mutation: the persistent layer-norm backward with loop-carried row pointers.

Each program walks its `rows_per_program` rows; the five row pointers (X, DX, DY, Mean, RSTD) are set
to the program's first row and advanced by their strides at the end of every row iteration, so the
loop carries five pointers. dW and dB are summed in float32 registers and stored once into the
program's row of the (P, n_cols) partial buffers, which the launcher sums.
"""
import triton
import triton.language as tl

from variants.layer_norm.common import row_gradients


@triton.jit
def layer_norm_backward(
    X_ptr, stride_x, W_ptr, Mean_ptr, stride_mean, RSTD_ptr, stride_rstd, DX_ptr, stride_dx,
    DW_ptr, stride_dw, DB_ptr, stride_db, DY_ptr, stride_dy, n_rows, n_cols,
    rows_per_program: tl.constexpr, BLOCK_SIZE: tl.constexpr,
):
    program = tl.program_id(0).to(tl.int64)
    row_start = program * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    X_ptr += row_start * stride_x
    DX_ptr += row_start * stride_dx
    DY_ptr += row_start * stride_dy
    Mean_ptr += row_start * stride_mean
    RSTD_ptr += row_start * stride_rstd
    for _ in range(row_start, row_end):
        x = tl.load(X_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean_ptr).to(tl.float32)
        rstd = tl.load(RSTD_ptr).to(tl.float32)
        dx, dw_row, db_row = row_gradients(x, dy, w, mean, rstd, mask, n_cols)
        tl.store(DX_ptr + cols, dx.to(DX_ptr.dtype.element_ty), mask=mask)
        dw += dw_row
        db += db_row
        X_ptr += stride_x
        DX_ptr += stride_dx
        DY_ptr += stride_dy
        Mean_ptr += stride_mean
        RSTD_ptr += stride_rstd
    tl.store(DW_ptr + program * stride_dw + cols, dw, mask=mask)
    tl.store(DB_ptr + program * stride_db + cols, db, mask=mask)
