"""A reviewed repository's revisions, read through git without checking anything out, and what each of its files
is to a review (`role`): the library's code, its tests or its benchmarks. A file is a test or a benchmark by
where it lies (a folder named so, anywhere in its path) or by its name (pytest's `test_*.py`, `*_test.py`,
`conftest.py`; `benchmark_*.py`, `bench_*.py`)."""
from __future__ import annotations

import enum
import subprocess
from pathlib import Path, PurePosixPath

from compare.model.errors import UsageError


def _git(top: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(top), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UsageError("review needs the `git` program, which is not on PATH") from None


class Repository:
    """A git repository (`--repo`); bad folders and revisions are a UsageError (one line)."""

    def __init__(self, folder: str):
        path = Path(folder)
        if not path.is_dir():
            raise UsageError(f"--repo {folder}: no such folder; give the reviewed git repository's folder")
        r = _git(path, "rev-parse", "--show-toplevel")
        if r.returncode:
            raise UsageError(f"--repo {folder}: not a git repository; give the reviewed git repository's folder")
        self.top = Path(r.stdout.strip())

    def commit(self, rev: str, role: str) -> str:
        """The full commit `rev` names (UsageError naming the role, BASE or HEAD, if none)."""
        r = _git(self.top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if rev.startswith("-") or not rev.strip() or r.returncode:
            raise UsageError(f"{role} {rev!r}: no such revision in {self.top} (a commit, branch or tag; "
                             "a CI checkout needs fetch-depth: 0 to hold both)")
        return r.stdout.strip()

    def files(self, commit: str) -> dict[str, str]:
        """{path from the top level: blob id} of every file at `commit`."""
        r = _git(self.top, "ls-tree", "-r", "-z", commit)
        if r.returncode:
            raise UsageError(f"git ls-tree {commit[:12]} failed: {r.stderr.strip()[:200]}")
        found = {}
        for entry in r.stdout.split("\0"):
            meta, tab, path = entry.partition("\t")
            fields = meta.split()
            if tab and len(fields) == 3 and fields[1] == "blob":
                found[path] = fields[2]
        return found

    def read(self, blobs: list[str]) -> dict[str, str]:
        """{blob id: its text} for many blobs in one git process (one not UTF-8 text is left out)."""
        if not blobs:
            return {}
        r = subprocess.run(["git", "-C", str(self.top), "cat-file", "--batch"], input="\n".join(blobs).encode() + b"\n",
                           capture_output=True, check=False)
        out, at, texts = r.stdout, 0, {}
        for blob in blobs:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) != 3:   # "<id> missing"
                at = end + 1
                continue
            size = int(header[2])
            data = out[end + 1:end + 1 + size]
            at = end + 1 + size + 1
            try:
                texts[blob] = data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return texts


class Role(str, enum.Enum):
    """Tests and benchmark scripts are where calls of an op come from, never ops themselves: a pull request that
    adds a test function reaching a kernel has not added an op."""

    LIBRARY = "library"
    TEST = "test"
    BENCHMARK = "benchmark"


_TEST_FOLDERS = frozenset({"test", "tests"})
_BENCHMARK_FOLDERS = frozenset({"benchmark", "benchmarks", "bench", "benches"})


def role(path: str) -> Role:
    """`path` (from the repository's top level) as the review sees it."""
    p = PurePosixPath(path)
    folders = {part.lower() for part in p.parts[:-1]}
    name = p.name.lower()
    if folders & _TEST_FOLDERS or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return Role.TEST
    if folders & _BENCHMARK_FOLDERS or name.startswith(("benchmark_", "bench_")):
        return Role.BENCHMARK
    return Role.LIBRARY


def library(paths: list[str]) -> list[str]:
    """The paths among `paths` that are the library's own code."""
    return [p for p in paths if role(p) == Role.LIBRARY]
