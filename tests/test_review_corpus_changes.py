"""What review finds changed in seven real pull requests of Liger-Kernel (../shared/corpus, or $KERNEL_AB_CORPUS):
for each, the public op (an autograd Function's apply) and the kinds of change, as the pull request's diff
shows them: a kernel's code, a launch's arguments, or only added kernels the launchers now pick."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from compare.review.kernels import changes
from compare.review.ops_changed import Change, What
from compare.review.revisions import Repository

CORPUS = Path(os.environ.get("KERNEL_AB_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")
BUNDLE = CORPUS / "liger-kernel-prs.bundle"

pytestmark = pytest.mark.skipif(not BUNDLE.is_file(), reason=f"the Liger-Kernel corpus is absent ({BUNDLE})")


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus") / "liger"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(folder)], check=True, capture_output=True)
    return Repository(str(folder))


def _ops(repo: Repository, pr: str) -> dict:
    found = changes(repo, repo.commit(f"{pr}_base", "BASE"), repo.commit(f"{pr}_head", "HEAD"))
    assert found.unreadable == [] and found.unresolved == []
    return {o.op.name: o for o in found.ops}


@pytest.mark.parametrize("pr", ["gn999", "gn1112"])
def test_group_norm_prs_change_the_forward_kernel_of_the_group_norm_function(liger, pr):
    ops = _ops(liger, pr)
    assert list(ops) == ["LigerGroupNormFunction.apply"]   # not group_norm_forward, the helper its forward calls
    op = ops["LigerGroupNormFunction.apply"]
    assert op.what == (What(Change.KERNEL, "_group_norm_forward_kernel"),)
    assert "group_norm_forward" in op.folded and not op.launcher_only
    assert op.base_op == op.op and "X" in op.op.params


def test_rms1000_changes_both_rms_norm_kernels(liger):
    ops = _ops(liger, "rms1000")
    assert list(ops) == ["LigerRMSNormFunction.apply"]
    what = set(ops["LigerRMSNormFunction.apply"].what)
    assert what == {What(Change.KERNEL, "_rms_norm_forward_kernel"), What(Change.KERNEL, "_rms_norm_backward_kernel")}


def test_ln1006_changes_the_layer_norm_backward_kernel(liger):
    ops = _ops(liger, "ln1006")
    assert list(ops) == ["LigerLayerNormFunction.apply"]
    op = ops["LigerLayerNormFunction.apply"]
    assert op.what[0] == What(Change.KERNEL, "_layer_norm_backward_kernel")
    assert What(Change.KERNEL, "_layer_norm_forward_kernel") not in op.what
    assert What(Change.HELPER, "layer_norm_backward") in op.what   # it adds the npu core count


def test_ln945_changes_the_backward_kernel_and_its_launch(liger):
    op = _ops(liger, "ln945")["LigerLayerNormFunction.apply"]
    assert op.what[0] == What(Change.KERNEL, "_layer_norm_backward_kernel")
    [launch] = [w for w in op.what if w.kind == Change.LAUNCH]
    assert launch.name == "_layer_norm_backward_kernel"
    assert {"arguments", "rows_per_program", "dtype", "atomic_dtype"} <= set(launch.detail.split(", "))
    assert What(Change.HELPER, "layer_norm_backward") in op.what


def test_ce1329_changes_the_cross_entropy_kernel_for_both_functions_launching_it(liger):
    ops = _ops(liger, "ce1329")
    op = ops["LigerCrossEntropyFunction.apply"]
    assert op.what == (What(Change.KERNEL, "liger_cross_entropy_kernel"),) and op.path.endswith("cross_entropy.py")
    fused = ops["LigerFusedLinearCrossEntropyFunction.apply"]   # it imports the kernel and launches it
    assert fused.what == (What(Change.KERNEL, "liger_kernel.ops.cross_entropy:liger_cross_entropy_kernel"),)
    assert sorted(ops) == ["LigerCrossEntropyFunction.apply", "LigerFusedLinearCrossEntropyFunction.apply"]


def test_sw1271_only_adds_tiled_kernels_the_launchers_pick(liger):
    ops = _ops(liger, "sw1271")
    assert list(ops) == ["LigerSiLUMulFunction.apply"]
    op = ops["LigerSiLUMulFunction.apply"]
    assert op.launcher_only
    added = {w.name for w in op.what if w.kind == Change.KERNEL_ADDED}
    assert added == {"_swiglu_forward_kernel_tiled", "_swiglu_backward_kernel_tiled"}
    assert {What(Change.HELPER, "swiglu_forward"), What(Change.HELPER, "swiglu_backward"),
            What(Change.HELPER, "_should_tile", "added"), What(Change.CONSTANT, "_SWIGLU_TILE", "added")} \
        <= set(op.what)
    assert {"swiglu_forward", "swiglu_backward"} <= set(op.folded)
