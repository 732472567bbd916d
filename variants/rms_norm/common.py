"""The per-row arithmetic of the rms-norm kernels (shared/specs/rms_norm.md), by casting mode; Triton
inlines it, so the variants differ only in how they address rows. casting_mode: 0 llama, 1 gemma, -1 none."""
import triton
import triton.language as tl


@triton.jit
def forward_row(x, w, n_cols, eps, offset, casting_mode: tl.constexpr, elementwise_affine: tl.constexpr):
    """(y, rstd) of one row. llama: statistic and x * rstd in float32, cast back to the input dtype before
    the multiplication by (offset + W) in the input dtype; gemma: float32 throughout; none: the input
    dtype throughout (Triton has no 16-bit rsqrt: it is taken in float32 and rounded to the dtype)."""
    x_dtype = x.dtype
    if casting_mode == -1:
        mean_square = tl.sum(x * x, axis=0) / n_cols + tl.cast(eps, x_dtype)
        rstd = tl.rsqrt(mean_square.to(tl.float32)).to(x_dtype)
        y = x * rstd
        if elementwise_affine:
            y = y * (w + tl.cast(offset, x_dtype))
    else:
        xf = x.to(tl.float32)
        rstd = tl.rsqrt(tl.sum(xf * xf, axis=0) / n_cols + eps)
        if casting_mode == 0:
            y = (xf * rstd).to(x_dtype)
            if elementwise_affine:
                y = y * (w + tl.cast(offset, x_dtype))
        else:
            y = xf * rstd
            if elementwise_affine:
                y = y * (w.to(tl.float32) + offset)
    return y, rstd


@triton.jit
def backward_row(dy, x, w, rstd, n_cols, offset, X_dtype: tl.constexpr, casting_mode: tl.constexpr,
                 elementwise_affine: tl.constexpr):
    """(dx in X_dtype, dW contribution in float32) of one row: with w' = W + offset and x in float32,
    m = dy * w' (llama: in the input dtype, then float32; gemma: float32; none: the input dtype),
    dx = rstd * m - rstd^3 * (sum(m * x) / n_cols) * x, dW += dy * (x * rstd) (llama: x * rstd in X_dtype)."""
    xf = x.to(tl.float32)
    rstd = rstd.to(tl.float32)
    if elementwise_affine:
        if casting_mode == 1:
            m = dy.to(tl.float32) * (w.to(tl.float32) + offset)
        else:
            m = dy * (w + tl.cast(offset, X_dtype))
    else:
        m = dy
    m = m.to(tl.float32)
    dx = rstd * m - rstd * rstd * rstd * (tl.sum(m * xf, axis=0) / n_cols) * xf
    normed = xf * rstd
    if casting_mode == 0:
        normed = normed.to(X_dtype).to(tl.float32)
    return dx.to(X_dtype), dy.to(tl.float32) * normed
