"""bwd_atomic: the layer-norm backward before the per-program partial reduction: one program per row,
dW and dB added atomically into float32 (n_cols,) buffers.

Same parameters as the persistent kernels; launched with grid (n_rows,) and rows_per_program 1 by the
family's per-row launcher (`LayerNorm.atomic_backward_call`), which zeroes the accumulators. The order in which programs add is the
order they finish, so on a GPU the last bits of dW and dB vary from run to run.
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
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(X_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY_ptr + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(Mean_ptr + row * stride_mean).to(tl.float32)
    rstd = tl.load(RSTD_ptr + row * stride_rstd).to(tl.float32)
    dx, dw_row, db_row = row_gradients(x, dy, w, mean, rstd, mask, n_cols)
    tl.store(DX_ptr + row * stride_dx + cols, dx.to(DX_ptr.dtype.element_ty), mask=mask)
    tl.atomic_add(DW_ptr + cols, dw_row, mask=mask)
    tl.atomic_add(DB_ptr + cols, db_row, mask=mask)
