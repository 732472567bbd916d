"""An op of another family: a library's `LayerNormFunction.apply(X, W, B, eps)` (written here from
shared/specs/layer_norm.md: a Triton forward kernel per row, the backward in torch) joins the
layer_norm family with `--family layer_norm`, and is compared forward and backward at op level, its
launched kernel found for the IR. Nothing in the op-level code knows the family."""
import pytest
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LIBRARY = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def ln_forward(X_ptr, Y_ptr, W_ptr, B_ptr, Mean_ptr, RSTD_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y_ptr + row * n_cols + cols, (centred * rstd * w + b).to(Y_ptr.dtype.element_ty), mask=mask)
    tl.store(Mean_ptr + row, mean)
    tl.store(RSTD_ptr + row, rstd)


class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, B, eps):
        x = X.reshape(-1, X.shape[-1]).contiguous()
        y = torch.empty_like(x)
        mean = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        rstd = torch.empty_like(mean)
        ln_forward[(x.shape[0],)](x, y, W, B, mean, rstd, x.shape[1], eps,
                                  BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        ctx.save_for_backward(x, W, mean, rstd)
        return y.view_as(X)

    @staticmethod
    def backward(ctx, dY):
        x, W, mean, rstd = ctx.saved_tensors
        dy = dY.reshape(x.shape).float()
        xhat = (x.float() - mean[:, None]) * rstd[:, None]
        wdy = W.float() * dy
        c1 = (xhat * wdy).mean(dim=1, keepdim=True)
        c2 = wdy.mean(dim=1, keepdim=True)
        dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
        return (dx.to(x.dtype).view_as(dY), (dy * xhat).sum(0).to(W.dtype), dy.sum(0).to(W.dtype), None)
'''


@pytest.mark.slow
def test_a_layer_norm_op_is_compared_at_op_level(tmp_path):
    lib = tmp_path / "lnlib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "ln.py").write_text(LIBRARY)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "--family", "layer_norm", "--shape", "4,48",
                        "--trials", "1", "--inputs", "normal", "--stage", "ttir", "--quiet", "--json", str(out),
                        "--variant", f"apply={lib / 'ln.py'}::LayerNormFunction.apply",
                        "--variant", f"mapped={lib / 'ln.py'}::LayerNormFunction.apply(X, W, B, eps)"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["family"] == "layer_norm"
    for case in data["numerics"]["cases"]:
        status = {v["variant"]: v["status"] for v in case["variants"]}
        assert status["apply"] == status["mapped"] == "pass", (case["direction"], case["variants"])
    ir = data["ir"]
    assert [v["variant"] for v in ir["variants"]] == ["apply:ln_forward", "mapped:ln_forward"]
    assert [(k["kernel"], k["status"]) for k in ir["kernels"]] == [("ln_forward", "identical")]
