"""A reviewed repository's revisions, read through git without checking anything out."""
from __future__ import annotations

import subprocess
from pathlib import Path

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
