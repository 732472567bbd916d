"""The layer-norm forward kernel (shared/specs/layer_norm.md, "Forward kernel"), shared by every Triton variant.

One program per row, the whole row in one block: mean first, then the centred sum of squares from the
row held in registers (masked lanes contribute 0); y = (x - mean) * rstd * W + B, in float32. Mean and
RSTD are stored in the input dtype, as the spec asks (a weakness in float16/bfloat16 kept on purpose).
"""
import triton
import triton.language as tl


@triton.jit
def layer_norm_forward(
    Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, B_ptr, B_row_stride,
    Mean_ptr, Mean_row_stride, RSTD_ptr, RSTD_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * X_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / n_cols
    rstd = tl.rsqrt(var + eps)
    y = centred * rstd * w + b
    tl.store(Y_ptr + row * Y_row_stride + cols, y.to(Y_ptr.dtype.element_ty), mask=mask)
    tl.store(Mean_ptr + row * Mean_row_stride, mean.to(Mean_ptr.dtype.element_ty))
    tl.store(RSTD_ptr + row * RSTD_row_stride, rstd.to(RSTD_ptr.dtype.element_ty))
