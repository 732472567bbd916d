"""A small library repository, `mylib`, at two commits, for the review tests.

HEAD~1 to HEAD: `mylib/rms.py`'s forward kernel computes rstd another way (its op `RMSNormFunction.apply(X, W,
eps, offset, casting_mode)` takes the rms_norm family's op arguments); `mylib/scale.py`'s kernel changes
only in comments and layout; `mylib/act.py`'s kernel is renamed (and its op follows the new name).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

RSTD = {"before": "rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)",
        "after": "rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)"}

# one row's x, w and rstd, `{rstd}` standing for RSTD's line: the start of every rms-norm kernel of the test libraries
RMS_ROW = '''\
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    {rstd}
'''

RMS = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_fwd(X_ptr, Y_ptr, W_ptr, RSTD_ptr, n_cols, eps, offset, BLOCK_SIZE: tl.constexpr):
    """One row per program."""
''' + RMS_ROW + '''\
    tl.store(RSTD_ptr + row, rstd)
    tl.store(Y_ptr + row * n_cols + cols, (x * rstd * (offset + w)).to(Y_ptr.dtype.element_ty), mask=mask)


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, eps, offset, casting_mode):
        X = X.contiguous()
        rows, cols = X.shape
        Y = torch.empty_like(X)
        rstd = torch.empty(rows, dtype=torch.float32, device=X.device)
        _rms_norm_fwd[(rows,)](X, Y, W, rstd, cols, eps, offset, BLOCK_SIZE=triton.next_power_of_2(cols))
        ctx.save_for_backward(X, W, rstd)
        ctx.offset = offset
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, rstd = ctx.saved_tensors
        xhat = X.float() * rstd[:, None]
        m = dY.float() * (ctx.offset + W.float())
        dX = rstd[:, None] * (m - xhat * (m * xhat).mean(-1, keepdim=True))
        return dX.to(X.dtype), (dY.float() * xhat).sum(0).to(W.dtype), None, None, None


def rms_norm(x, weight, eps=1e-6):
    return RMSNormFunction.apply(x, weight, eps, 0.0, "llama")
'''

SCALE = '''\
import triton
import triton.language as tl
{comment}

@triton.jit
def _scale_kernel(X_ptr, Y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK){inline}
    mask = offs < n
    tl.store(Y_ptr + offs, tl.load(X_ptr + offs, mask=mask) * factor, mask=mask)
'''

ACT = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def {name}(X_ptr, Y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y_ptr + offs, tl.maximum(tl.load(X_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x):
    y = torch.empty_like(x)
    {name}[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y
'''

TABLE = '''\
[project]
name = "mylib"

[tool.kernel-ab.kernels]
"mylib.rms:_rms_norm_fwd" = "rms_norm"
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=kernel-ab test", "-c", "user.email=test@kernel-ab",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def _write(repo: Path, state: str, init: str = "") -> None:
    pkg = repo / "mylib"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(init)
    (pkg / "rms.py").write_text(RMS.replace("{rstd}", RSTD[state]))
    after = state == "after"
    (pkg / "scale.py").write_text(SCALE.replace("{comment}", "# scales a vector\n" if after else "")
                                  .replace("{inline}", "   # this program's block" if after else ""))
    (pkg / "act.py").write_text(ACT.replace("{name}", "_relu_fwd_kernel" if after else "_relu_kernel"))


def make_repo(folder: Path, table: bool, init: str = "") -> Path:
    """The repository at tags v1 and v2 (see the module docstring), with pyproject.toml's kernel table if
    `table`; then v3: `_scale_kernel`'s body changed, which no family's parameters fit. `init`: the package's
    `__init__.py` at every commit (a library's import habits)."""
    repo = folder / ("mylib-table" if table else "mylib-plain")
    repo.mkdir()
    git(repo, "init", "-q")
    _write(repo, "before", init)
    (repo / "pyproject.toml").write_text(TABLE if table else '[project]\nname = "mylib"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mylib")
    git(repo, "tag", "v1")
    _write(repo, "after", init)
    git(repo, "commit", "-q", "-am", "rstd by rsqrt; a comment; relu's kernel renamed")
    git(repo, "tag", "v2")
    scale = repo / "mylib" / "scale.py"
    scale.write_text(scale.read_text().replace("* factor", "* factor * 2.0"))
    git(repo, "commit", "-q", "-am", "scale twice")
    git(repo, "tag", "v3")
    return repo


def two_revisions(repo: Path, before: dict[str, str], after: dict[str, str]) -> Path:
    """A repository at tags v1 (the files `before`, by path) and v2 (`after`'s written over them)."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    for tag, files in (("v1", before), ("v2", after)):
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", tag)
        git(repo, "tag", tag)
    return repo
