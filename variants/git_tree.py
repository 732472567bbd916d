"""What a `git:REV:PATH` variant needs of its revision, materialized by `git archive REV -- PATHS`: the
package PATH belongs to (or, for a file in no package, the modules and packages beside it, which it can
import) and the top-level pyproject.toml; never the rest of the tree (test data, other projects).
Members that would land outside the folder (absolute or escaping links and paths) are skipped and named;
a git error or a stream that ends early is one `TreeError` line naming the revision."""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import tarfile
import tempfile
from pathlib import PurePosixPath, Path


class TreeError(Exception):
    """The revision's files could not be materialized (the message is one line)."""


@dataclasses.dataclass(frozen=True)
class Tree:
    """A materialized part of a revision: its folder, and the archive's members left out as unsafe."""

    folder: Path
    skipped: tuple[str, ...]   # "MEMBER (why)"


def _literal() -> dict:
    return {**os.environ, "GIT_LITERAL_PATHSPECS": "1"}   # a file name is never read as a glob


def _git(top: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(top), *args], capture_output=True, text=True, check=False, env=_literal())


def _entries(top: Path, commit: str, label: str, *paths: str) -> list[str]:
    """`git ls-tree --name-only` of `paths` at `commit` (a folder path ending in / lists its entries)."""
    r = _git(top, "ls-tree", "--name-only", "-z", commit, "--", *paths)
    if r.returncode:
        raise TreeError(f"git ls-tree at {label} failed: {_one_line(r.stderr)}")
    return [e for e in r.stdout.split("\0") if e]


def needed_paths(top: Path, commit: str, file: str, label: str = "") -> tuple[str, ...]:
    """The paths (relative to the top, posix) to materialize for the variant file `file` at `commit`."""
    label = label or commit[:12]
    rel = PurePosixPath(file)
    folders = [p for p in reversed(rel.parents) if str(p) != "."]
    found = set(_entries(top, commit, label, "pyproject.toml", *(f"{d}/__init__.py" for d in folders)))
    package = None
    for folder in reversed(folders):   # up from the file's folder while folders are packages
        if f"{folder}/__init__.py" not in found:
            break
        package = folder
    paths = [str(package)] if package is not None else _beside(top, commit, label, rel)
    return tuple(paths) + (("pyproject.toml",) if "pyproject.toml" in found else ())


def _beside(top: Path, commit: str, label: str, rel: PurePosixPath) -> list[str]:
    """For a file in no package: the `.py` modules in its folder, and the sub-folders that hold Python
    directly (packages and namespace packages), all of which it can import."""
    prefix = "" if str(rel.parent) == "." else f"{rel.parent}/"
    entries = _entries(top, commit, label, prefix) if prefix else _entries(top, commit, label)
    modules = [e for e in entries if e.endswith(".py")]
    folders = [e for e in entries if not e.endswith(".py")]
    inside = _entries(top, commit, label, *(f"{f}/" for f in folders)) if folders else []
    python = {str(PurePosixPath(e).parent) for e in inside if e.endswith(".py")}
    return sorted(set(modules) | {str(rel)} | (set(folders) & python))


def _one_line(text: str, silent: str = "no message") -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines)[:300] or silent


def _outside(member: tarfile.TarInfo, dest: str) -> str:
    """Why `member` would land outside `dest` ('' when it stays inside); for Pythons without tarfile's filters."""
    target = os.path.realpath(os.path.join(dest, member.name))
    if os.path.isabs(member.name) or not target.startswith(dest + os.sep):
        return "a path outside the tree"
    if member.issym() or member.islnk():
        base = os.path.dirname(target) if member.issym() else dest
        if os.path.isabs(member.linkname) or not os.path.realpath(os.path.join(base, member.linkname)).startswith(dest + os.sep):
            return f"a link to {member.linkname}, outside the tree"
    return ""


def _named(member: tarfile.TarInfo) -> str:
    return f"{member.name} -> {member.linkname}" if member.issym() or member.islnk() else member.name


def _safe_filter(skipped: list[str]):
    """A tarfile extraction filter that skips, and records, every member the 'data' filter refuses."""
    def safe(member: tarfile.TarInfo, dest: str):
        if hasattr(tarfile, "data_filter"):
            try:
                return tarfile.data_filter(member, dest)
            except tarfile.FilterError as exc:
                skipped.append(f"{_named(member)} ({exc})")
                return None
        why = _outside(member, os.path.realpath(dest))   # pragma: no cover - Pythons without filters
        if why:
            skipped.append(f"{_named(member)} ({why})")
            return None
        return member
    return safe


def materialize(top: Path, commit: str, paths: tuple[str, ...], dest: Path, label: str = "") -> Tree:
    """`paths` of `commit` extracted into the (existing, empty) folder `dest`, streamed (a large package is
    never held in memory); TreeError when git fails or the archive ends early."""
    label = label or commit[:12]
    skipped: list[str] = []
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["git", "-C", str(top), "archive", "--format=tar", commit, "--", *paths],
                                stdout=subprocess.PIPE, stderr=err, env=_literal())
        broken = ""
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                safe = _safe_filter(skipped)
                for member in tar:
                    kept = safe(member, str(dest))
                    if kept is not None:
                        tar.extract(kept, dest, **_no_filter())
        except (tarfile.TarError, OSError) as exc:   # the stream ended early, or a member could not be written
            broken = f"{type(exc).__name__}: {exc}"
        finally:
            # tar stops at the end-of-archive block; git may still be writing the record's padding, and a pipe
            # closed under it ends git by SIGPIPE, at random: read it to the end
            _drain(proc.stdout)
            proc.stdout.close()
            code = proc.wait()
        if code or broken:
            err.seek(0)
            said = _one_line(err.read().decode(errors="replace"), _ended(code)) if code else broken
            raise TreeError(f"git archive of {label} failed: {said}")
    return Tree(dest, tuple(skipped))


def _drain(stream) -> None:
    try:
        while stream.read(1 << 16):
            pass
    except OSError:
        pass


def _ended(code: int) -> str:
    """How git ended, for a failure it said nothing of."""
    if code < 0:
        try:
            return f"git was ended by {signal.Signals(-code).name}"
        except ValueError:
            return f"git was ended by signal {-code}"
    return f"git exited with code {code} and said nothing"


def _no_filter() -> dict:
    """The member was filtered already: tell a Python with filters so (else it warns or filters again)."""
    return {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
