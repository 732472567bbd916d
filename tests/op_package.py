"""A small library exposing a group-norm op, for the op-level tests (shared/specs/group_norm.md):
`GroupNormFunction.apply(X, W, B, num_channels, num_groups, eps)` launches a forward and a backward Triton
kernel; `group_norm(x, num_groups, weight, bias, eps)` calls it in torch's order. `make_repo(folder)`
commits it at two revisions whose backward forms order dx's terms differently (a pull request's kind of
rewrite), so the forward compiles identically between them and the backward does not."""
from __future__ import annotations

import subprocess
from pathlib import Path

BACKWARD_FORMS = {
    "grouped": "dx = (wdy - (xhat * c1 + c2)) * rstd",
    "expanded": "dx = wdy * rstd - xhat * (c1 * rstd) - c2 * rstd",
}

NORM = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def this_group(channels_per_group, spatial, num_groups, BLOCK_SIZE: tl.constexpr):
    n = tl.program_id(0)
    g = tl.program_id(1)
    hidden = channels_per_group * spatial
    base = (n * num_groups + g) * hidden
    offsets = tl.arange(0, BLOCK_SIZE)
    return n, g, hidden, base, offsets, offsets < hidden


@triton.jit
def gn_forward_kernel(X_ptr, Y_ptr, W_ptr, B_ptr, Mean_ptr, RSTD_ptr, channels_per_group, spatial, num_groups,
                      eps, BLOCK_SIZE: tl.constexpr):
    n, g, hidden, base, offsets, mask = this_group(channels_per_group, spatial, num_groups, BLOCK_SIZE)
    x = tl.load(X_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / hidden
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / hidden + eps)
    channel = g * channels_per_group + offsets // spatial
    w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y_ptr + base + offsets, (centred * rstd * w + b).to(Y_ptr.dtype.element_ty), mask=mask)
    tl.store(Mean_ptr + n * num_groups + g, mean)
    tl.store(RSTD_ptr + n * num_groups + g, rstd)


@triton.jit
def gn_backward_kernel(X_ptr, DY_ptr, DX_ptr, W_ptr, Mean_ptr, RSTD_ptr, channels_per_group, spatial, num_groups,
                       BLOCK_SIZE: tl.constexpr):
    n, g, hidden, base, offsets, mask = this_group(channels_per_group, spatial, num_groups, BLOCK_SIZE)
    x = tl.load(X_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W_ptr + g * channels_per_group + offsets // spatial, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(Mean_ptr + n * num_groups + g)
    rstd = tl.load(RSTD_ptr + n * num_groups + g)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / hidden
    c2 = tl.sum(wdy, axis=0) / hidden
    {backward_form}
    tl.store(DX_ptr + base + offsets, dx.to(DX_ptr.dtype.element_ty), mask=mask)


@triton.heuristics({"BLOCK_SIZE": lambda args: 64})
@triton.jit
def tuned_kernel(X_ptr, BLOCK_SIZE: tl.constexpr):
    pass


class GroupNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, B, num_channels, num_groups, eps):
        X = X.contiguous()
        n = X.shape[0]
        spatial = X.numel() // (n * num_channels)
        cpg = num_channels // num_groups
        Y = torch.empty_like(X)
        mean = torch.empty(n, num_groups, dtype=torch.float32, device=X.device)
        rstd = torch.empty_like(mean)
        block = triton.next_power_of_2(cpg * spatial)
        gn_forward_kernel[(n, num_groups)](X, Y, W, B, mean, rstd, cpg, spatial, num_groups, eps, BLOCK_SIZE=block)
        ctx.save_for_backward(X, W, mean, rstd)
        ctx.sizes = (num_channels, num_groups, cpg, spatial, block)
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, mean, rstd = ctx.saved_tensors
        num_channels, num_groups, cpg, spatial, block = ctx.sizes
        n = X.shape[0]
        dY = dY.contiguous()
        dX = torch.empty_like(X)
        gn_backward_kernel[(n, num_groups)](X, dY, dX, W, mean, rstd, cpg, spatial, num_groups, BLOCK_SIZE=block)
        xhat = (X.float().view(n, num_groups, -1) - mean[..., None]) * rstd[..., None]
        per_channel = (dY.float().view(n, num_channels, -1), xhat.view(n, num_channels, -1))
        dW = (per_channel[0] * per_channel[1]).sum(dim=(0, 2)).to(W.dtype)
        dB = per_channel[0].sum(dim=(0, 2)).to(W.dtype)
        return dX, dW, dB, None, None, None


class GroupNormDyInPlace(GroupNormFunction):
    """GroupNormFunction whose backward writes dX over the upstream gradient's buffer, as training libraries
    do to save memory (each group's dy is loaded before its dx is stored)."""

    @staticmethod
    def backward(ctx, dY):
        X, W, mean, rstd = ctx.saved_tensors
        num_channels, num_groups, cpg, spatial, block = ctx.sizes
        n = X.shape[0]
        xhat = (X.float().view(n, num_groups, -1) - mean[..., None]) * rstd[..., None]
        per_channel = (dY.float().view(n, num_channels, -1), xhat.view(n, num_channels, -1))
        dW = (per_channel[0] * per_channel[1]).sum(dim=(0, 2)).to(W.dtype)
        dB = per_channel[0].sum(dim=(0, 2)).to(W.dtype)
        gn_backward_kernel[(n, num_groups)](X, dY, dY, W, mean, rstd, cpg, spatial, num_groups, BLOCK_SIZE=block)
        return dY, dW, dB, None, None, None


def group_norm(x, num_groups, weight, bias, eps=1e-5):
    return GroupNormFunction.apply(x, weight, bias, x.shape[1], num_groups, eps)


def synchronizing(X, W, B, num_channels, num_groups, eps):
    """Waits for the device before it runs: a host synchronization, which a CUDA graph cannot capture."""
    if X.is_cuda:
        torch.cuda.synchronize()
    return GroupNormFunction.apply(X, W, B, num_channels, num_groups, eps)


def forward_only(x, num_groups, weight, bias, eps=1e-5):
    with torch.no_grad():
        return GroupNormFunction.apply(x, weight, bias, x.shape[1], num_groups, eps)
'''


def write(repo: Path, backward_form: str) -> None:
    pkg = repo / "normlib"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "norm.py").write_text(NORM.replace("{backward_form}", BACKWARD_FORMS[backward_form]))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=kernel-ab test", "-c", "user.email=test@kernel-ab",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def make_repo(folder: Path) -> Path:
    """A git repository in `folder` holding normlib at two revisions: HEAD~1 with dx's terms grouped,
    HEAD with them expanded (only the backward kernel differs)."""
    repo = folder / "normlib-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "grouped")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the op")
    write(repo, "expanded")
    git(repo, "commit", "-q", "-am", "backward: dx's terms regrouped")
    return repo
