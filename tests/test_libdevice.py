"""Kernels calling libdevice math run on Triton's CPU interpreter (compare/runtime/libdevice_bridge.py), with
the same bits as the same kernel written with tl.* math; on a GPU they compile as they always did."""
import json

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda.libdevice import rsqrt as cuda_rsqrt
from triton.language.extra.libdevice import exp, log1p, pow, rsqrt, tanh

import main
from compare.model.errors import summarize
from conftest import BACKEND
from tests.group_norm_text import GROUP_ROW, IMPORTS, forward_def

INTERPRETED = BACKEND.interpreted


@triton.jit
def with_libdevice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.store(y_ptr + offsets, rsqrt(x) + exp(x) * libdevice.sqrt(x) + cuda_rsqrt(x + 1.0), mask=mask)


@triton.jit
def with_tl(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.store(y_ptr + offsets, tl.rsqrt(x) + tl.exp(x) * tl.sqrt_rn(x) + tl.rsqrt(x + 1.0), mask=mask)


@triton.jit
def with_numpy_bridged(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    tl.store(y_ptr + offsets, tanh(x) + log1p(x) + pow(x, 2.0) + libdevice.atan2(x, x + 1.0), mask=mask)


@triton.jit
def with_unbridged(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, libdevice.j0(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


def _run(kernel, x):
    y = torch.empty_like(x)
    kernel[(1,)](x, y, x.numel(), BLOCK=256)
    return y


def _reference(x):
    x = x.double()
    return 1 / x.sqrt() + x.exp() * x.sqrt() + 1 / (x + 1).sqrt()


def test_libdevice_gives_the_bits_of_tl_math():
    x = torch.rand(200, device=BACKEND.device) * 10 + 1e-3
    a, b = _run(with_libdevice, x), _run(with_tl, x)
    if INTERPRETED:
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
    else:  # compiled: libdevice's __nv_rsqrtf need not round as tl.rsqrt's approximation does
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(a.double(), _reference(x), rtol=1e-5, atol=0)


def test_libdevice_takes_float64_where_tl_math_takes_only_float32():
    x = torch.rand(200, dtype=torch.float64, device=BACKEND.device) * 10 + 1e-3
    torch.testing.assert_close(_run(with_libdevice, x), _reference(x), rtol=1e-12, atol=0)


def test_other_common_libdevice_math_runs():
    x = torch.rand(200, device=BACKEND.device) * 3 + 0.1
    y = _run(with_numpy_bridged, x)
    xd = x.double()
    torch.testing.assert_close(y.double(), xd.tanh() + xd.log1p() + xd ** 2 + torch.atan2(xd, xd + 1), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not INTERPRETED, reason="compiled Triton runs every libdevice function itself")
def test_a_libdevice_function_without_a_bridge_is_named_in_one_line():
    with pytest.raises(Exception) as info:
        _run(with_unbridged, torch.rand(8))
    line = summarize(info.value)
    assert line.startswith("NoBridge: libdevice.j0 has no bridge to Triton's CPU interpreter")
    assert "\n" not in line


def test_a_real_world_kernel_with_libdevice_rsqrt_compares_bitwise_equal_to_tl_rsqrt(tmp_path, capsys):
    """A group-norm forward as libraries write it (libdevice rsqrt), loaded with --variant, against the
    same kernel written with tl.rsqrt: both run, with the same verdicts, and every output is bitwise
    equal on the interpreter."""
    source = (GROUP_NORM.replace("RSQRT_IMPORT", "from triton.language.extra.libdevice import rsqrt")
              .replace("RSQRT", "rsqrt"))
    (tmp_path / "gn_libdevice.py").write_text(source)
    (tmp_path / "gn_tl.py").write_text(GROUP_NORM.replace("RSQRT_IMPORT", "").replace("RSQRT", "tl.rsqrt"))
    out = tmp_path / "r.json"
    rc = main.main(["compare", "--variant", f"libdevice={tmp_path / 'gn_libdevice.py'}::fwd",
                    "--variant", f"tl={tmp_path / 'gn_tl.py'}::fwd", "--shape", "2,8,2,4x4", "--check", "numerics",
                    "--inputs", "normal,large_mean", "--trials", "2", "--quiet", "--json", str(out)], prog="main.py")
    assert rc == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    cases = report["numerics"]["cases"]
    status = {(c["input_kind"], v["variant"]): v["status"] for c in cases for v in c["variants"]}
    assert status[("normal", "libdevice")] == status[("normal", "tl")] == "pass"
    assert status[("large_mean", "libdevice")] == status[("large_mean", "tl")]   # whatever the float32 sums give
    pairs = [p for c in cases for p in c["pairs"] if {p["a"], p["b"]} == {"libdevice", "tl"}]
    assert len(pairs) == 3 * len(cases)
    if INTERPRETED:
        assert all(p["n_diff"] == 0 for p in pairs), pairs


GROUP_NORM = "RSQRT_IMPORT\n" + IMPORTS + "\n\n" + forward_def("fwd") + GROUP_ROW + '''\
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < hidden_size
    x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x) / hidden_size
    centered = tl.where(mask, x - mean, 0.0)
    rstd = RSQRT(tl.sum(centered * centered) / hidden_size + eps)
    channel = g * channels_per_group + offsets // (hidden_size // channels_per_group)
    w = tl.load(W_ptr + channel, mask=mask).to(tl.float32)
    b = tl.load(B_ptr + channel, mask=mask).to(tl.float32)
    tl.store(Y_ptr + offsets, centered * rstd * w + b, mask=mask)
    tl.store(Mean_ptr + n * Mean_row_stride + g * Mean_col_stride, mean)
    tl.store(RSTD_ptr + n * RSTD_row_stride + g * RSTD_col_stride, rstd)
'''
