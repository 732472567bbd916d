"""The per-row arithmetic of every layer-norm backward kernel (shared/specs/layer_norm.md), in float32;
Triton inlines it into each kernel, so the variants differ only in how they walk rows and add dW, dB."""
import triton
import triton.language as tl


@triton.jit
def row_gradients(x, dy, w, mean, rstd, mask, n_cols):
    """(dx, dW contribution, dB contribution) of one row: x_hat = (x - mean) * rstd, wdy = W * dy,
    c1 = sum(x_hat * wdy) / n_cols, c2 = sum(wdy) / n_cols, dx = (wdy - (x_hat * c1 + c2)) * rstd."""
    x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(x_hat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    dx = (wdy - (x_hat * c1 + c2)) * rstd
    return dx, dy * x_hat, dy
