"""A `git:REV:PATH` variant materializes only what its file needs (variants/git_tree.py): its package and
the top-level pyproject.toml, or the modules and packages beside a file in no package; a link out of the
tree is left out and named; a revision whose objects are missing is one line naming it, never a traceback."""
import os
import sys
import subprocess
from pathlib import Path

import pytest

from tests.byok_repo import ROOT, TINY
from tests.op_package import git
from variants import registry
from variants.external import ExternalKernels, FailedLoad

FAMILY = "group_norm"
OP = ("import torch.nn.functional as F\n{imports}\n\n"
      "def op(X, W, B, num_channels, num_groups, eps):\n    return F.group_norm(X, num_groups, W, B, eps)\n")
CALL = "::op(X, W, B, num_channels, num_groups, eps)"


def commit(repo: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    """A repository at `repo` with `files` (path -> text) and symbolic `links` (path -> target) committed,
    stored as loose objects without compression (so one object's file can be deleted)."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    for path, target in (links or {}).items():
        os.symlink(target, repo / path)
    git(repo, "init", "-q")
    git(repo, "-c", "core.compression=0", "add", "-A")
    git(repo, "-c", "core.compression=0", "commit", "-q", "-m", "the tree")
    return repo


def library(repo: Path, **links: str) -> Path:
    """src/lib, a package whose ops.py imports its sibling helper, beside a big unrelated data folder."""
    return commit(repo, {"pyproject.toml": "[project]\nname = 'lib'\n", "src/lib/__init__.py": "",
                         "src/lib/helper.py": "VALUE = 1\n", "src/lib/ops.py": OP.format(imports="from lib import helper"),
                         "data/huge.txt": "x" * (4 << 20), "docs/index.md": "# lib\n"}, links)


def load(repo: Path, path: str):
    """(the loaded variant or FailedLoad, the files of its materialized tree, relative, while it exists)."""
    with ExternalKernels(repo) as kernels:
        v = kernels.load(f"x=git:HEAD:{path}{CALL}", registry().family(FAMILY))
        if isinstance(v, FailedLoad):
            return v, set()
        tree = Path(v.import_roots[-1])
        return v, {p.relative_to(tree).as_posix() for p in tree.rglob("*") if "__pycache__" not in p.parts}


def test_only_the_package_and_pyproject_are_materialized(tmp_path):
    v, files = load(library(tmp_path / "repo"), "src/lib/ops.py")
    assert not isinstance(v, FailedLoad), v
    assert {"src/lib/ops.py", "src/lib/helper.py", "pyproject.toml"} <= files
    assert not any(f.startswith(("data", "docs")) for f in files), files


def test_a_file_in_no_package_gets_the_modules_and_packages_beside_it(tmp_path):
    repo = commit(tmp_path / "repo", {"kernels/gn.py": OP.format(imports="import util\nimport pkg.more"),
                                      "kernels/util.py": "", "kernels/pkg/more.py": "",
                                      "kernels/blobs/weights.bin": "0" * 1000, "other/x.py": ""})
    v, files = load(repo, "kernels/gn.py")
    assert not isinstance(v, FailedLoad), v
    assert files == {"kernels", "kernels/gn.py", "kernels/util.py", "kernels/pkg", "kernels/pkg/more.py"}


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../outside"])
def test_a_link_out_of_the_tree_is_left_out_and_named(tmp_path, target):
    v, files = load(library(tmp_path / "repo", **{"src/lib/leak": target}), "src/lib/ops.py")
    assert not isinstance(v, FailedLoad), v
    assert "src/lib/leak" not in files and "src/lib/ops.py" in files
    assert f"; unsafe members left out: src/lib/leak -> {target} (" in v.origin, v.origin


def drop_blob(repo: Path, path: str) -> str:
    """Delete the loose object file of `path`'s blob at HEAD (a partial clone's missing object); its id."""
    blob = git(repo, "rev-parse", f"HEAD:{path}").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    return blob


def test_a_missing_object_is_one_line_naming_the_revision(tmp_path):
    repo = library(tmp_path / "repo")
    blob = drop_blob(repo, "src/lib/helper.py")
    v, _ = load(repo, "src/lib/ops.py")
    assert isinstance(v, FailedLoad)
    short = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert v.error.startswith(f"git archive of HEAD ({short}) failed: ") and "\n" not in v.error, v.error
    assert blob in v.error or "helper.py" in v.error, v.error


def test_a_missing_object_ends_compare_without_a_traceback(tmp_path):
    repo = library(tmp_path / "repo")
    drop_blob(repo, "src/lib/helper.py")
    r = subprocess.run([sys.executable, "main.py", "compare", "--repo", str(repo), "explicit_offset",
                        "--variant", f"x=git:HEAD:src/lib/ops.py{CALL}", *TINY], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    assert "variant x could not be loaded" in r.stdout and "git archive of HEAD (" in r.stdout, r.stdout


def test_a_missing_object_outside_the_package_is_not_needed(tmp_path):
    """A clone lacking a large unrelated blob (a partial clone) still loads the variant."""
    repo = library(tmp_path / "repo")
    drop_blob(repo, "data/huge.txt")
    v, files = load(repo, "src/lib/ops.py")
    assert not isinstance(v, FailedLoad), v
    assert "src/lib/ops.py" in files


def fake_git(tmp_path: Path, monkeypatch, script: str) -> None:
    """`git` on PATH is `script` (python, argv as git's): materialize runs it in place of git."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!{sys.executable}\n{script}")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


# a one-file tar, then padding written after tar has stopped reading: git's own archive pads its record so
LATE_PADDING = """import io, sys, tarfile, time
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as tar:
    data = b"x = 1\\n"
    info = tarfile.TarInfo("pkg/mod.py"); info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
sys.stdout.buffer.write(buf.getvalue()); sys.stdout.flush()
time.sleep(0.5)
sys.stdout.buffer.write(bytes(1 << 20)); sys.stdout.flush()
"""


def test_padding_git_writes_after_the_last_member_does_not_fail_the_archive(tmp_path, monkeypatch):
    from variants.git_tree import materialize
    fake_git(tmp_path, monkeypatch, LATE_PADDING)
    dest = tmp_path / "tree"
    dest.mkdir()
    tree = materialize(tmp_path, "0" * 40, ("pkg",), dest)
    assert (tree.folder / "pkg" / "mod.py").read_text() == "x = 1\n"


@pytest.mark.parametrize("script, said", [("import sys; sys.exit(3)", "git exited with code 3 and said nothing"),
                                          ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
                                           "git was ended by SIGTERM")])
def test_a_silent_git_failure_says_how_git_ended(tmp_path, monkeypatch, script, said):
    from variants.git_tree import TreeError, materialize
    fake_git(tmp_path, monkeypatch, script)
    dest = tmp_path / "tree"
    dest.mkdir()
    with pytest.raises(TreeError) as caught:
        materialize(tmp_path, "0" * 40, ("pkg",), dest, label="HEAD (abc1234)")
    assert str(caught.value) == f"git archive of HEAD (abc1234) failed: {said}"
