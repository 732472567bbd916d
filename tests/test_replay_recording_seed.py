"""A recording seeds Python's, torch's and numpy's generators before the library's tests run: a test that draws
its inputs unseeded gives the same values in every review of a change."""
from __future__ import annotations

import subprocess

from tests import replay_library


def test_two_recordings_of_a_test_that_draws_unseeded_inputs_keep_the_same_values(tmp_path):
    """Two reviews of one change replay the same values, so their numbers agree (a library's tests rarely seed)."""
    import sys

    import torch
    top = replay_library.commit(tmp_path / "lib", {"BASE": {
        "ul/__init__.py": "", "ul/ops.py": "def double(x):\n    return x * 2\n",
        "tests/test_ul.py": "import torch\nfrom ul.ops import double\n\n\ndef test_double():\n"
                            "    assert double(torch.randn(50)).shape == (50,)\n"}})
    kept = []
    for n in range(2):
        out = tmp_path / f"rec{n}"
        r = subprocess.run([sys.executable, str(replay_library.Path(__file__).resolve().parents[1] / "main.py"),
                            "record", "ul.ops:double", "--out", str(out), "--", "pytest", "-q", "tests/test_ul.py"],
                           cwd=top, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        kept.append(torch.load(out / "call_0.pt", weights_only=False)["tensors"][0])
    assert torch.equal(kept[0], kept[1]) and kept[0].std() > 0.5   # the same draw, and a real one
