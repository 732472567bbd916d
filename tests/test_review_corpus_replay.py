"""Ops no family fits, in Liger-Kernel pull requests of ../shared/corpus (or $KERNEL_AB_CORPUS), reviewed as a
reviewer types them on the CPU: their calls recorded from Liger's own tests and replayed at both revisions.
What each must say was read from its diff first: poly1018 and farms1008 only stop advancing pointers
(identical bits, changed compiled code); kl654 changes the block and warp sizes of another accelerator's
branch (identical bits, the same code compiled for sm_90); the poly norm, whose parameters are a layer norm's,
is never judged as one. Minutes: marked slow."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.extras import need

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("KERNEL_AB_CORPUS") or ROOT.parent / "shared" / "corpus")
BUNDLE = CORPUS / "liger-kernel-prs.bundle"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not BUNDLE.is_file(), reason=f"the Liger-Kernel corpus is absent ({BUNDLE})")]


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus") / "liger"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(folder)], check=True, capture_output=True)
    return folder


def _review(liger: Path, pr: str, tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / f"{pr}.json"
    r = subprocess.run([sys.executable, "main.py", "review", f"{pr}_base", f"{pr}_head", "--repo", str(liger),
                        "--json", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in r.stderr and r.returncode == 0, r.stderr[-2000:]
    return r.returncode, json.loads(out.read_text())


@pytest.mark.parametrize("pr, op, test", [
    ("poly1018", "LigerPolyNormFunction", "test/transformers/test_poly_norm.py"),
    ("farms1008", "LigerFusedAddRMSNormFunction", "test/transformers/test_fused_add_rms_norm.py"),
    ("kl654", "LigerKLDivLossFunction", "test/transformers/test_kl_div.py"),
])
def test_a_refactor_replays_to_identical_bits_in_every_output_and_gradient(liger, tmp_path, pr, op, test):
    need("transformers")   # Liger's test/utils.py imports it (the test extra installs it)
    _, review = _review(liger, pr, tmp_path)
    [replayed] = [r for r in review["replayed"] if r["label"] == op]
    assert replayed["verdict"] == "identical" and replayed["tests"] == [test], replayed
    assert replayed["calls"] and all(c["tensors"] and not c["failures"] for c in replayed["calls"])
    grads = {t["name"] for c in replayed["calls"] for t in c["tensors"] if t["name"].startswith("grad ")}
    assert grads or pr == "kl654", replayed   # the norms' backward is replayed too
    assert review["compared"] == []   # no family judged it
    code = {v["verdict"] for v in replayed["report"]["verdicts"] if v["check"] == "compiled code"}
    if pr == "kl654":   # its change is another accelerator's branch: on sm_90 the kernels compile alike
        assert code == {"same code"}, replayed["report"]["verdicts"]
    else:   # the pointer refactors change what the kernels carry
        assert code == {"changed"}, replayed["report"]["verdicts"]
    if pr == "poly1018":   # a layer norm by its parameter names, which BASE's forward is not
        assert any(n.startswith("family layer_norm does not fit it") for n in replayed["notes"]), replayed["notes"]
