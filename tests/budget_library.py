"""A library, `normlib`, whose pull request changes three rms-norm ops by different amounts, for the review's time
budget and order (tests/test_review_budget.py): `norm_three` launches three changed kernels, `norm_two` two,
`norm_one` one and reads a changed constant. Each kernel computes the same norm; HEAD computes rstd by rsqrt."""
from __future__ import annotations

from pathlib import Path

from tests.review_repo import RMS_ROW, RSTD, two_revisions

KERNEL = '''
@triton.jit
def _k{i}(X_ptr, Y_ptr, W_ptr, n_cols, eps, offset, BLOCK_SIZE: tl.constexpr):
''' + RMS_ROW + '''\
    tl.store(Y_ptr + row * n_cols + cols, (x * rstd * (offset + w)).to(Y_ptr.dtype.element_ty), mask=mask)
'''

OP = '''

def {name}(X, W, eps, offset, casting_mode):
    Y = torch.empty_like(X)
    rows, cols = X.shape
{launches}    return Y
'''

LAUNCH = "    _k{i}[(rows,)](X, Y, W, cols, eps, {offset}, BLOCK_SIZE=triton.next_power_of_2(cols))\n"
OPS = {"norm_one": (1,), "norm_two": (2, 3), "norm_three": (4, 5, 6)}   # listed least changed first


def _module(state: str) -> str:
    text = "import torch\nimport triton\nimport triton.language as tl\n\n"
    text += f"SCALE = {'1.0' if state == 'before' else '1.0 * 1'}\n"   # read by norm_one alone
    text += "".join(KERNEL.format(i=i, rstd=RSTD[state]) for i in range(1, 7))
    for name, kernels in OPS.items():
        offset = "offset * SCALE" if name == "norm_one" else "offset"
        text += OP.format(name=name, launches="".join(LAUNCH.format(i=i, offset=offset) for i in kernels))
    return text


def make(folder: Path) -> Path:
    """The repository at tags v1 and v2."""
    files = {"pyproject.toml": '[project]\nname = "normlib"\n', "normlib/__init__.py": ""}
    return two_revisions(folder / "normlib", {**files, "normlib/norms.py": _module("before")},
                         {"normlib/norms.py": _module("after")})


def make_many(folder: Path, count: int) -> Path:
    """`normlib` whose pull request changes `count` ops (`op_01`...), each launching a kernel of its own whose rstd
    HEAD computes by rsqrt: a pull request of many ops for the review's budget (benchmarks/many_ops_review.sh)."""
    def module(state: str) -> str:
        text = "import torch\nimport triton\nimport triton.language as tl\n\n"
        text += "".join(KERNEL.format(i=i, rstd=RSTD[state]) for i in range(1, count + 1))
        for i in range(1, count + 1):
            text += OP.format(name=f"op_{i:02d}", launches=LAUNCH.format(i=i, offset="offset"))
        return text
    files = {"pyproject.toml": '[project]\nname = "normlib"\n', "normlib/__init__.py": ""}
    return two_revisions(folder / "normlib", {**files, "normlib/norms.py": module("before")},
                         {"normlib/norms.py": module("after")})
