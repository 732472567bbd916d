"""Which side a review's lines name: a kernel that does not compile at HEAD (a global read inside it, which
Triton refuses to compile) is HEAD's in the glance, the headline and every printed line saying so, at BASE
BASE's (read from the IR rows' status, compare/model/glance.py); and the FAIL line of an op that could not be
loaded names the kernels whose code changed, not every kernel it runs (compare/review/render.py)."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
from unittest import mock

import pytest

import main
from compare.model import glance
from compare.model.headline import headline
from compare.model.results import IRVariant, from_dict
from compare.model.results_ir import NOT_RUN
from tests.review_repo import two_revisions

RMS = '''\
import torch
import triton
import triton.language as tl
{imports}
SCALE = {scale}


@triton.jit
def _rms_norm_fwd(X_ptr, Y_ptr, W_ptr, n_cols, eps, offset, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = SCALE / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(Y_ptr + row * n_cols + cols, (x * rstd * (offset + w)).to(Y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _copy(X_ptr, Y_ptr, n, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(Y_ptr + cols, tl.load(X_ptr + cols, mask=cols < n), mask=cols < n)


def rms_norm(X, W, eps, offset, casting_mode):
    rows, cols = X.shape
    Y, scratch = torch.empty_like(X), torch.empty_like(X)
    _copy[(1,)](X, scratch, cols, BLOCK_SIZE=triton.next_power_of_2(cols))
    _rms_norm_fwd[(rows,)](X, Y, W, cols, eps, offset, BLOCK_SIZE=triton.next_power_of_2(cols))
    return Y
'''
COMPILES, REFUSED = "tl.constexpr(1.0)", "1.0"   # a plain float global read in a kernel does not compile
QUICK = ["--shape", "4,64", "--check", "numerics", "--check", "ir", "--trials", "1", "--inputs", "normal", "--quiet"]


def _review(repo, base: str, head: str, tmp, *more: str, printed: io.StringIO | None = None) -> dict:
    out = tmp / f"{base}-{head}.json"
    with contextlib.redirect_stdout(printed or io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main.main(["review", base, head, "--repo", str(repo), "--json", str(out), *QUICK, *more])
    return json.loads(out.read_text())


def _printed(repo, base: str, head: str, tmp) -> tuple[dict, list[str]]:
    """The review's JSON and the lines it prints with --verbose, wide enough that no line wraps."""
    printed = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": "400"}):
        data = _review(repo, base, head, tmp, "--verbose", printed=printed)
    return data, [line.strip() for line in printed.getvalue().splitlines()]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The library, and its review each way round (v1..v2: HEAD does not compile; v2..v1: BASE does not)."""
    tmp = tmp_path_factory.mktemp("sides")
    files = {"mylib/__init__.py": "", "pyproject.toml": '[project]\nname = "mylib"\n'}
    repo = two_revisions(tmp / "lib", {**files, "mylib/rms.py": RMS.format(imports="", scale=COMPILES)},
                         {"mylib/rms.py": RMS.format(imports="", scale=REFUSED)})
    return repo, {(base, head): _printed(repo, base, head, tmp) for base, head in (("v1", "v2"), ("v2", "v1"))}


def _compiled(data: dict):
    [compared] = data["compared"]
    report = from_dict(compared["report"])
    [row] = [r for r in glance.rows(report) if r.check == "compiled code"]
    [line] = [l for p in headline(report).pairs for l in p.lines if l.topic == "compiled code"]
    return row, line


@pytest.mark.parametrize("base, head, broken, level", [("v1", "v2", "head", "fail"), ("v2", "v1", "base", "warn")],
                         ids=["head-does-not-compile", "base-does-not-compile"])
def test_the_glance_and_headline_name_the_side_whose_kernel_did_not_compile(library, base, head, broken, level):
    row, line = _compiled(library[1][base, head][0])
    other = "base" if broken == "head" else "head"
    assert (row.verdict, row.where, row.level) == ("did not compile", f"rms_norm.{broken}: _rms_norm_fwd", level)
    assert f"_rms_norm_fwd failed (did not compile in rms_norm.{broken})" in line.text and line.level == level
    assert f"rms_norm.{other}" not in row.where and f"did not compile in rms_norm.{other}" not in line.text
    assert "_copy identical" in line.text   # the kernel the global does not reach compiled at both


@pytest.mark.parametrize("base, head, broken", [("v1", "v2", "head"), ("v2", "v1", "base")],
                         ids=["head-does-not-compile", "base-does-not-compile"])
def test_every_printed_line_of_the_failure_names_the_side_that_failed(library, base, head, broken):
    """What the terminal shows (--verbose): the glance's row, the FAIL lines and the lines and table that say
    _rms_norm_fwd failed each name the side whose kernel did not compile, and none the other side."""
    _, lines = library[1][base, head]
    other = "base" if broken == "head" else "head"
    [row] = [line for line in lines if line.split()[1:3] == ["compiled", "code"] and "did not compile" in line]
    assert row.split()[0] == ("FAIL" if broken == "head" else "WARN") and row.endswith(f"rms_norm.{broken}: _rms_norm_fwd")
    failed = [line for line in lines if "_rms_norm_fwd" in line and ("failed" in line or "did not compile" in line)]
    assert len(failed) >= 4, failed   # the glance, the headline, the ir section's line, the kernels table
    assert all(f"rms_norm.{broken}" in line for line in failed), failed
    said_failed = [line for line in failed if "_rms_norm_fwd failed" in line]
    assert said_failed and all(f"_rms_norm_fwd failed (did not compile in rms_norm.{broken})" in line
                               for line in said_failed), said_failed
    assert any(f"ir: rms_norm.{broken}:_rms_norm_fwd did not compile" in line for line in failed), failed
    wrong = (f"did not compile in rms_norm.{other}", f"rms_norm.{other}:_rms_norm_fwd did not compile",
             f"rms_norm.{other}: _rms_norm_fwd")
    assert not [line for line in lines if any(w in line for w in wrong)]
    fails = [line for line in lines if line.startswith("FAIL")]
    assert fails and all(f"rms_norm.{broken}" in line for line in fails), fails


def test_an_op_whose_run_failed_is_named_in_the_glance_not_the_other_side():
    from tests.fixed_report import fixed_report
    from tests.test_ir_ops import _section
    rows = (IRVariant("A:_k", "ok"), IRVariant("B", NOT_RUN, "the op failed when run to find its kernels: E: x"))
    report = dataclasses.replace(fixed_report(), ir=dataclasses.replace(_section(), pairs=(), variants=rows))
    [row] = [r for r in glance.rows(report) if r.check == "compiled code" and r.variant == "B"]
    assert (row.verdict, row.where) == ("not found", "B: the op failed when run to find its kernels")


def test_the_fail_line_of_an_op_that_could_not_be_loaded_names_only_its_changed_kernels(tmp_path):
    files = {"mylib/__init__.py": "", "pyproject.toml": '[project]\nname = "mylib"\n'}
    broken = "import mylib_missing_dependency"   # neither revision imports: the op cannot be loaded
    repo = two_revisions(tmp_path / "lib", {**files, "mylib/rms.py": RMS.format(imports=broken, scale=COMPILES)},
                         {"mylib/rms.py": RMS.format(imports=broken, scale="tl.constexpr(2.0)")})
    data = _review(repo, "v1", "v2", tmp_path)
    [fail] = [line["text"] for line in data["lines"] if line["level"] == "fail" and line["text"].startswith("mylib.rms:")]
    assert fail.startswith("mylib.rms:_rms_norm_fwd: changed; mylib.rms:rms_norm could not be compared"), fail
    assert "_copy" not in fail
