"""The op-level evidence, on a GPU: a small library's group-norm op at two revisions, compared as its
users call it.

The library is tests/op_package.py's `normlib` (an autograd Function launching a forward and a
backward Triton kernel), committed into a temporary git repository at two revisions where only the
backward kernel changed. Two comparisons:

1. `--out OUT/op_level`: base (HEAD~1, `GroupNormFunction.apply`, the family's argument order), head
   (HEAD, `group_norm` in torch's order, mapped in its spec) and same (HEAD~1 again): numerics forward
   and backward, timing of forward, backward and full replayed from CUDA graphs, and the IR of the
   kernels each op launched on this GPU, paired by name (expected: the forward kernel identical
   everywhere, the backward kernel changed in head only).
2. `--out OUT/op_level_uncapturable`: base against an op that synchronizes with the host, so it cannot
   be captured: the timing note says so and what eager timing costs.

    python3 benchmarks/op_level.py --out OUT [--preset image] [extra compare options...]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.op_package import make_repo  # noqa: E402 - after the project root is on the path

FILE = "normlib/norm.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for the two reports")
    parser.add_argument("--preset", default="image", help="group-norm preset unless --shape is given (default image: 16 x 320 x 64x64)")
    args, extra = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        shapes = [] if "--shape" in extra else ["--preset", args.preset]
        common = [sys.executable, "main.py", "compare", "--repo", str(repo), *shapes,
                  "--inputs", "normal", "--modes", "forward,backward,full", "--quiet", *extra]
        runs = [
            common + ["--out", str(args.out / "op_level"),
                      "--variant", f"base=git:HEAD~1:{FILE}::GroupNormFunction.apply",
                      "--variant", f"head=git:HEAD:{FILE}::group_norm(X, num_groups, W, B, eps)",
                      "--variant", f"same=git:HEAD~1:{FILE}::GroupNormFunction.apply"],
            common + ["--check", "timing", "--out", str(args.out / "op_level_uncapturable"),
                      "--variant", f"base=git:HEAD~1:{FILE}::GroupNormFunction.apply",
                      "--variant", f"sync=git:HEAD~1:{FILE}::synchronizing"],
        ]
        codes = []
        for cmd in runs:
            print("$", " ".join(cmd), flush=True)
            codes.append(subprocess.run(cmd, cwd=ROOT).returncode)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
