"""Group-norm Triton source text for the tests that write their own kernel files: the family launcher's
forward parameters, the row a program owns and the two-pass statistics, so that each test's kernel spells
only what it is about. Text, not code: a loaded kernel file imports no kernel-ab."""

IMPORTS = "import triton\nimport triton.language as tl\n"

_FORWARD_PARAMETERS = """(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride,
        Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
        W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr):
"""

# the (sample n, group g) a program owns, with X and Y moved to its row
GROUP_ROW = """    n = tl.program_id(0)
    g = tl.program_id(1)
    X_ptr += n * X_row_stride + g * X_col_stride
    Y_ptr += n * Y_row_stride + g * Y_col_stride
"""

# the variance in two passes (mean first, then the squared deviations): finite where the one-pass
# E[x^2] - E[x]^2 of variants/group_norm/common.py cancels catastrophically
TWO_PASS_STATISTICS = '''@triton.jit
def group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    total = 0.0
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        total += tl.sum(tl.load(X_ptr + offsets, mask=offsets < hidden_size, other=0.0).to(tl.float32))
    mean = total / hidden_size
    total_sq = 0.0
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < hidden_size
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        total_sq += tl.sum(d * d)
    rstd = tl.rsqrt(total_sq / hidden_size + eps)
    return mean, rstd
'''


def forward_def(name: str) -> str:
    """`@triton.jit` and `def name(...):` with the parameters the group-norm launcher passes."""
    return f"@triton.jit\ndef {name}{_FORWARD_PARAMETERS}"
