"""A git repository holding `mypkg`, whose kernel file `mypkg/ops/gn.py` imports its helper from its own
package (`mypkg.ops.utils`). HEAD~1: the helper adds 0.0 to y, inner loop `range`; HEAD: it adds 1.0,
inner loop `tl.range`, plus `broken.py` (an import that fails) and `syntax.py`. So a revision that loads
its own helper passes (HEAD~1) or fails on y alone by 1.0 (HEAD); the working tree is HEAD.
"""
import subprocess
import sys
from pathlib import Path

from tests.op_package import git

ROOT = Path(__file__).resolve().parent.parent
TINY = ("--shape", "2,8,2,16", "--trials", "1", "--check", "numerics", "--quiet")

UTILS = '''\
import triton
import triton.language as tl

OFFSET = {offset}


@triton.jit
def group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    total = 0.0
    total_sq = 0.0
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X_ptr + offsets, mask=offsets < hidden_size, other=0.0).to(tl.float32)
        total += tl.sum(x)
        total_sq += tl.sum(x * x)
    mean = total / hidden_size
    var = total_sq / hidden_size - mean * mean
    return mean, tl.rsqrt(var + eps)


@triton.jit
def scale_shift(x, mean, rstd, w, b):
    return (x - mean) * rstd * w + b + {offset}


def not_a_kernel(Y_ptr):
    return Y_ptr
'''

KERNEL = '''\
import triton
import triton.language as tl

from mypkg.ops.utils import group_statistics, scale_shift


@triton.jit
def group_norm_forward(
    Y_ptr, Y_row_stride, Y_col_stride,
    X_ptr, X_row_stride, X_col_stride,
    Mean_ptr, Mean_row_stride, Mean_col_stride,
    RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
    W_ptr, B_ptr,
    hidden_size, channels_per_group, eps,
    BLOCK_SIZE: tl.constexpr,
):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    X_ptr += batch_idx * X_row_stride + group_idx * X_col_stride
    Y_ptr += batch_idx * Y_row_stride + group_idx * Y_col_stride
    mean, rstd = group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE)
    hidden_per_channel = hidden_size // channels_per_group
    first_channel = group_idx * channels_per_group
    for channel in tl.range(first_channel, first_channel + channels_per_group):
        w = tl.load(W_ptr + channel).to(tl.float32)
        b = tl.load(B_ptr + channel).to(tl.float32)
        channel_offset = (channel - first_channel) * hidden_per_channel
        for start in {inner}(0, hidden_per_channel, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            mask = offsets < hidden_per_channel
            x = tl.load(X_ptr + channel_offset + offsets, mask=mask, other=mean).to(tl.float32)
            tl.store(Y_ptr + channel_offset + offsets, scale_shift(x, mean, rstd, w, b), mask=mask)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


@triton.jit
def wrong_params(Y_ptr, X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    pass


@triton.jit
def swapped(X_ptr, X_row_stride, X_col_stride, Y_ptr, Y_row_stride, Y_col_stride,
            Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
            W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr):
    pass


@triton.jit
def extra_required(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride,
                   Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                   W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr, SCALE):
    pass


@triton.jit
def extra_with_default(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride,
                       Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                       W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr,
                       SCALE: tl.constexpr = 1):
    pass
'''

BROKEN = "from mypkg.ops.utils import no_such_helper\n"


def write(repo: Path, offset: str, inner: str) -> None:
    ops = repo / "mypkg" / "ops"
    ops.mkdir(parents=True, exist_ok=True)
    (repo / "mypkg" / "__init__.py").write_text("")
    (ops / "__init__.py").write_text("")
    (ops / "utils.py").write_text(UTILS.format(offset=offset))
    (ops / "gn.py").write_text(KERNEL.format(inner=inner))


def make_repo(repo: Path) -> Path:
    """The repository described above, made in the (new) folder `repo`."""
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "0.0", "range")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    write(repo, "1.0", "tl.range")
    (repo / "mypkg" / "ops" / "broken.py").write_text(BROKEN)
    (repo / "mypkg" / "ops" / "syntax.py").write_text("import triton\n\ndef f(:\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    return repo


def cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)
