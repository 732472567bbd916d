"""The elementwise arithmetic every swiglu kernel shares (shared/specs/swiglu.md), in float32, given
s = sigmoid(a) however the kernel computes it: the variants differ in how they address elements and in
how they get s, not in what they do with it."""
import triton
import triton.language as tl  # noqa: F401 (Triton asks for it in the module of every jit function)


@triton.jit
def gated(a, b, s):
    """c = silu(a) * b = a * s * b."""
    return a * s * b


@triton.jit
def gated_grads(dc, a, b, s):
    """(da, db): da = dc * b * s * (1 + a * (1 - s)), db = dc * silu(a)."""
    return dc * b * s * (1.0 + a * (1.0 - s)), dc * a * s
