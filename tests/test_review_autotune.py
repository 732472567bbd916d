"""An op whose kernel is under @triton.autotune, reviewed on the CPU: on Triton's interpreter the kernel runs
with its first configuration (compare/runtime/interpreted_autotune.py), so its numerics are compared, and the
report says which configuration ran; and no verbose line claims cases a variant did not run."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

import main
from compare.model.problems import lists
from compare.model.results import from_dict
from compare.render.tables import numerics_summary
from tests.review_repo import two_revisions

TUNED = '''\
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=8)],
                 key=["n_cols"])
@triton.jit
def _rms_norm_fwd(X_ptr, Y_ptr, W_ptr, n_cols, eps, offset, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = RSTD
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y_ptr + row * n_cols + cols, (x * rstd * (offset + w)).to(Y_ptr.dtype.element_ty), mask=mask)


def rms_norm(X, W, eps, offset, casting_mode):
    RAISE
    rows, cols = X.shape
    Y = torch.empty_like(X)
    _rms_norm_fwd[(rows,)](X, Y, W, cols, eps, offset)
    return Y
'''
BEFORE = "1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)"
AFTER = "tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)"


def _review(repo, tmp, *checks: str) -> dict:
    out = tmp / "review.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main.main(["review", "v1", "v2", "--repo", str(repo), "--json", str(out), "--shape", "4,64",
                   "--check", "numerics", *checks, "--trials", "1", "--inputs", "normal,large_mean", "--quiet"])
    return json.loads(out.read_text())


def _library(tmp, name: str, raising: bool):
    text = TUNED.replace("RAISE", 'raise RuntimeError("this op is broken")' if raising else "pass")
    # the table maps the op, so an op that raises is compared in the family still (not replayed as a misfit)
    table = '\n[tool.kernel-ab.kernels]\n"mylib.ops:rms_norm" = "rms_norm"\n' if raising else ""
    files = {"mylib/__init__.py": "", "pyproject.toml": '[project]\nname = "mylib"\n' + table}
    return two_revisions(tmp / name, {**files, "mylib/ops.py": text.replace("RSTD", BEFORE)},
                         {"mylib/ops.py": text.replace("RSTD", AFTER)})


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tuned")
    [compared] = _review(_library(tmp, "tuned", raising=False), tmp, "--check", "ir")["compared"]
    return from_dict(compared["report"])


def test_an_autotuned_kernels_op_gets_its_numerics_compared_on_the_interpreter(tuned):
    cases = tuned.numerics.cases
    assert len(cases) == 2
    for case in cases:
        ran = {v.variant: v.status.produced for v in case.variants}
        assert ran["rms_norm.base"] and ran["rms_norm.head"], case
        assert not any(v.reasons for v in case.variants if v.variant.startswith("rms_norm."))


def test_the_report_says_the_autotuned_kernel_ran_with_its_first_configuration(tuned):
    [line] = [p for p in tuned.numerics.plan if "autotun" in p]
    assert "autotuning was not run on Triton's interpreter" in line
    assert "_rms_norm_fwd with BLOCK=16, num_warps=2" in line and "(the first of 2)" in line
    assert "BLOCK=128" not in line


def test_no_verbose_line_claims_cases_a_variant_did_not_run(tmp_path):
    [compared] = _review(_library(tmp_path, "broken", raising=True), tmp_path)["compared"]
    report = from_dict(compared["report"])
    said = [text for _, text in numerics_summary(report.numerics, lists(report))]
    assert not [s for s in said if "rms_norm." in s and "cases run" in s], said
    assert not [s for s in said if "introduced no problem" in s], said
    assert [s for s in said if s.startswith("numerics: rms_norm.head failed (library) in 2 cases: RuntimeError: this op")]


def test_an_autotuned_kernels_compiled_code_is_compared_at_the_configuration_it_ran_with(tuned):
    [match] = tuned.ir.kernels
    assert (match.kernel, match.status) == ("_rms_norm_fwd", "changed")   # 1/sqrt against rsqrt
