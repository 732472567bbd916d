"""bwd_explicit_offset: the persistent layer-norm backward with each row's pointers computed from the row index.

The same loop as bwd_pointer_mutation, but every iteration addresses its row as base + row * stride;
nothing but the row index and the dW, dB accumulators is carried from one iteration to the next.
This is the rewrite whose effect on the compiled code and the timing the family is there to show.
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
    for row in range(row_start, row_end):
        x = tl.load(X_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY_ptr + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean_ptr + row * stride_mean).to(tl.float32)
        rstd = tl.load(RSTD_ptr + row * stride_rstd).to(tl.float32)
        dx, dw_row, db_row = row_gradients(x, dy, w, mean, rstd, mask, n_cols)
        tl.store(DX_ptr + row * stride_dx + cols, dx.to(DX_ptr.dtype.element_ty), mask=mask)
        dw += dw_row
        db += db_row
    tl.store(DW_ptr + program * stride_dw + cols, dw, mask=mask)
    tl.store(DB_ptr + program * stride_db + cols, db, mask=mask)
