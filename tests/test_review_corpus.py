"""`review BASE HEAD` on the seven Liger-Kernel pull requests of ../shared/corpus (or $KERNEL_AB_CORPUS), typed
as a reviewer types it (`python3 main.py review <pr>_base <pr>_head --repo LIGER --json FILE`) on the CPU, and
what each review must say: the op users call compared, what changed in it, no traceback, nothing kernel-ab's
own call caused reported as the library's problem. Minutes on 2 cores: marked slow (run by .ci/run)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("KERNEL_AB_CORPUS") or ROOT.parent / "shared" / "corpus")
BUNDLE = CORPUS / "liger-kernel-prs.bundle"
PRS = ("gn999", "gn1112", "rms1000", "ln1006", "ln945", "ce1329", "sw1271")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not BUNDLE.is_file(), reason=f"the Liger-Kernel corpus is absent ({BUNDLE})")]


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    """{pr: (exit code, the --json review, stderr)} of every pull request, each reviewed once."""
    tmp = tmp_path_factory.mktemp("corpus")
    liger = tmp / "liger"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(liger)], check=True, capture_output=True)
    found = {}
    for pr in PRS:
        out = tmp / f"{pr}.json"
        r = subprocess.run([sys.executable, "main.py", "review", f"{pr}_base", f"{pr}_head", "--repo", str(liger),
                            "--json", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600)
        found[pr] = (r.returncode, json.loads(out.read_text()) if out.exists() else {}, r.stderr + r.stdout)
    return found


def _compared(review: dict) -> dict:
    return {c["label"]: c for c in review["compared"]}


def _headline(compared: dict) -> dict:
    """{topic: text} of the one pair's headline lines."""
    [pair] = compared["report"]["headline"]["pairs"]
    return {line["topic"]: line["text"] for line in pair["lines"]}


@pytest.mark.parametrize("pr", PRS)
def test_no_review_of_the_corpus_prints_a_traceback_or_blames_the_library_for_kernel_abs_call(reviews, pr):
    code, review, output = reviews[pr]
    assert code == 0, output[-3000:]
    assert "Traceback" not in output
    for c in review["compared"]:
        assert c["report"] is not None, c["error"]
        shared = " ".join(c["report"]["headline"]["shared"])
        assert "crashed" not in shared and "got 5 tensors" not in shared, shared
    lines = [line["text"] for line in review["lines"]]
    left = tuple(f"{', '.join(d['dtypes'])} not compared" for d in review.get("dtypes_left_out", []))
    unmapped = [t for t in lines if "not compared" in t and not t.startswith(left or ("\0",))]   # ops, not dtypes
    assert all("would map it: \"" in t for t in unmapped), unmapped   # each with the line that maps it


@pytest.mark.parametrize("pr", ["gn999", "gn1112"])
def test_group_norm_prs_are_compared_through_the_function_users_call(reviews, pr):
    compared = _compared(reviews[pr][1])
    assert list(compared) == ["LigerGroupNormFunction"]
    target = compared["LigerGroupNormFunction"]["target"]
    assert (target["callable"], target["family"]) == ("LigerGroupNormFunction.apply", "group_norm")
    said = _headline(compared["LigerGroupNormFunction"])
    assert said["numerics"].startswith("numerics: forward: identical bits in all"), said["numerics"]
    assert "did not compile" not in said["compiled code"]


def test_gn999_names_the_channel_loops_carried_pointers_at_both_sides(reviews):
    """The pull request's claim is about the compiled code: BASE advances X_ptr and Y_ptr through the channel
    loop, HEAD computes each channel's offset."""
    said = _headline(_compared(reviews["gn999"][1])["LigerGroupNormFunction"])["compiled code"]
    assert ("carries 2 pointers (X_ptr, Y_ptr) from one iteration to the next in LigerGroupNormFunction.base, none "
            "in LigerGroupNormFunction.head"
            in said), said


def test_rms1000_is_bit_identical_and_its_in_place_write_is_named(reviews):
    compared = _compared(reviews["rms1000"][1])
    said = _headline(compared["LigerRMSNormFunction"])
    assert "forward: identical bits" in said["numerics"] and "backward: identical bits" in said["numerics"]
    assert "writes into its input" in json.dumps(compared["LigerRMSNormFunction"]["report"]["headline"])


@pytest.mark.parametrize("pr", ["ln1006", "ln945"])
def test_layer_norm_prs_compare_the_layer_norm_function(reviews, pr):
    compared = _compared(reviews[pr][1])
    assert list(compared) == ["LigerLayerNormFunction"]
    assert "_layer_norm_backward_kernel changed" in _headline(compared["LigerLayerNormFunction"])["compiled code"]


def test_ce1329_compares_the_cross_entropy_function_with_neutral_constants(reviews):
    review = reviews["ce1329"][1]
    compared = _compared(review)
    assert list(compared) == ["LigerCrossEntropyFunction"]
    target = compared["LigerCrossEntropyFunction"]["target"]
    assert target["family"] == "cross_entropy" and "constants weight=None, lse_square_scale=0.0" in target["how"]
    # the fused op launching the same kernel takes no family's arguments: it is replayed from its tests
    [fused] = [r for r in review["replayed"] if r["label"] == "LigerFusedLinearCrossEntropyFunction"]
    if importlib.util.find_spec("transformers") is None:   # Liger's test/utils.py imports it
        assert any("needs package 'transformers'" in n for n in fused["notes"]), fused["notes"]
    else:
        assert fused["calls"] and fused["tests"] == ["test/transformers/test_fused_linear_cross_entropy.py"]


def test_sw1271_is_compared_through_its_op_and_the_launcher_change_named(reviews):
    review = reviews["sw1271"][1]
    compared = _compared(review)
    assert list(compared) == ["LigerSiLUMulFunction"]
    lines = [line["text"] for line in review["lines"]]
    assert any(t.startswith("LigerSiLUMulFunction: launcher only, no launched kernel's code changed; kernel "
                            "_swiglu_backward_kernel_tiled added") for t in lines), lines
    assert "identical" in _headline(compared["LigerSiLUMulFunction"])["compiled code"]
