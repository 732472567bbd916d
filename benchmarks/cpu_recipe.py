"""The reviewer's recipe on the CPU, timed: a repository holding the seed's group-norm kernel at two
revisions (before: pointer mutation; after: explicit offsets) compared as the README's recipe compares
a pull request (numerics on Triton's interpreter, compiled code offline; no timing without a GPU).

    python3 benchmarks/cpu_recipe.py [--runs 3] [--out reports/cpu_recipe/README.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "variants/group_norm/gn.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=recipe", "-c", "user.email=recipe@kernel-ab",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def make_repo(folder: Path) -> Path:
    """A library with its own `variants` package: gn.py is pointer_mutation at HEAD~1, explicit_offset at HEAD."""
    repo = folder / "library"
    shutil.copytree(ROOT / "variants", repo / "variants", ignore=shutil.ignore_patterns("__pycache__"))
    _git(repo, "init", "-q")
    for source, message in (("pointer_mutation.py", "group norm"), ("explicit_offset.py", "explicit channel offsets")):
        shutil.copy(ROOT / "variants" / "group_norm" / source, repo / KERNEL)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
    return repo


def command(repo: Path, out: Path) -> list[str]:
    return [sys.executable, str(ROOT / "main.py"), "compare", "--repo", str(repo),
            "--variant", f"old=git:HEAD~1:{KERNEL}::group_norm_forward",
            "--variant", f"new=git:HEAD:{KERNEL}::group_norm_forward",
            "--out", str(out), "--fail-on-numerics", "--fail-if-slower", "2", "--accept-unjudged", "--quiet"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the figures as Markdown here")
    args = parser.parse_args()
    walls = []
    with tempfile.TemporaryDirectory(prefix="kernel-ab-recipe-") as tmp:
        repo = make_repo(Path(tmp))
        for run in range(args.runs):
            out = Path(tmp) / f"report{run}"
            start = time.perf_counter()
            proc = subprocess.run(command(repo, out), capture_output=True, text=True)
            walls.append(time.perf_counter() - start)
            if proc.returncode:
                print(proc.stderr[-2000:], file=sys.stderr)
                return proc.returncode
            print(f"run {run + 1}: {walls[-1]:.1f} s", flush=True)
        headline = (out / "report.md").read_text().split("<details><summary><b>Variants</b>")[0].strip()
    shown = " ".join(command(Path("REPO"), Path("OUT"))[1:]).replace(str(ROOT / "main.py"), "main.py")
    text = "\n".join([
        "# The reviewer's recipe on the CPU", "",
        f"`python3 benchmarks/cpu_recipe.py --runs {args.runs}` times `python3 {shown}` on a repository holding the",
        "seed's kernel at two revisions (its own copy of the `variants` package; gn.py before and after the change).", "",
        f"Wall time over {args.runs} runs: median {statistics.median(walls):.1f} s (each: "
        f"{', '.join(f'{w:.1f}' for w in walls)} s), on {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}.", "", "The headline it wrote:", "", headline, ""])
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
