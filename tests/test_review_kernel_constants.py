"""A module-level constant a @triton.jit kernel (or a jit helper it calls) reads is part of that kernel's code
(compare/review/kernels.py, ops_changed.py): a change to it changes the kernel, never "launcher only"; a
constant only the launcher reads stays a launcher's change."""
from __future__ import annotations

from compare.review import render
from compare.review.kernels import Change, changes
from compare.review.revisions import Repository
from tests.review_repo import two_revisions

LIB = '''\
import torch
import triton
import triton.language as tl

LOG2_E = {log2e}
SCALE = LOG2_E
BLOCK = {block}


@triton.jit
def _times(x):
    return x * SCALE


@triton.jit
def _exp2_kernel(X, Y, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, tl.exp2(x * LOG2_E), mask=offs < n)


@triton.jit
def _scaled_kernel(X, Y, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(Y + offs, _times(tl.load(X + offs, mask=offs < n)), mask=offs < n)


def exp(x):
    y = torch.empty_like(x)
    _exp2_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK_SIZE=BLOCK)
    return y


def scaled(x):
    y = torch.empty_like(x)
    _scaled_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK_SIZE=BLOCK)
    return y
'''


def _found(tmp_path, before: dict, after: dict):
    text = {"mylib/__init__.py": "", "pyproject.toml": '[project]\nname = "mylib"\n'}
    repo = two_revisions(tmp_path / "lib", {**text, "mylib/ops.py": LIB.format(**before)},
                         {"mylib/ops.py": LIB.format(**after)})
    r = Repository(str(repo))
    base, head = r.commit("v1", "BASE"), r.commit("v2", "HEAD")
    found = changes(r, base, head)
    said = [text for _, text in render.lines(render.Review("v1", "v2", base, head, found, (), ()))]
    return found, {o.op.name: o for o in found.ops}, said


def test_a_constant_a_kernel_reads_changes_that_kernel_and_the_one_whose_helper_reads_it(tmp_path):
    found, ops, said = _found(tmp_path, {"log2e": "1.4426950408889634", "block": "128"},
                              {"log2e": "tl.constexpr(1.4426950408889634)", "block": "128"})
    assert sorted(a.key for a, _ in found.changed) == ["mylib.ops:_exp2_kernel", "mylib.ops:_scaled_kernel",
                                                       "mylib.ops:_times"]   # a jit helper is listed as kernels are
    exp, scaled = ops["exp"], ops["scaled"]
    assert not exp.launcher_only and not scaled.launcher_only
    assert [(w.kind, w.name) for w in exp.what if w.kind == Change.KERNEL] == [(Change.KERNEL, "_exp2_kernel")]
    assert (Change.JIT_HELPER, "_times") in [(w.kind, w.name) for w in scaled.what]   # through SCALE = LOG2_E
    assert (Change.CONSTANT, "LOG2_E") in [(w.kind, w.name) for w in exp.what]
    assert not [line for line in said if "launcher only" in line], said
    assert said[0].startswith("2 ops changed") and "(3 changed kernels among what they run)" in said[0], said
    assert render.changed_text(exp.what) == "kernel _exp2_kernel changed; constant LOG2_E changed"


def test_a_constant_only_the_launcher_reads_is_a_launchers_change(tmp_path):
    found, ops, _ = _found(tmp_path, {"log2e": "1.4426950408889634", "block": "128"},
                           {"log2e": "1.4426950408889634", "block": "64"})
    assert found.changed == []
    assert ops["exp"].launcher_only and ops["scaled"].launcher_only
    assert (Change.CONSTANT, "BLOCK") in [(w.kind, w.name) for w in ops["exp"].what]
