"""--variant from git revisions and the working tree, end to end through `main.py compare` and `main.py ir`:
each revision runs and compiles with its own helpers, a kernel that does not import is reported while
the others still run, and nothing is left in the repository (on tests/byok_repo.py's repository)."""
import json
import os
from pathlib import Path

import pytest

from tests.byok_repo import TINY, cli, make_repo
from tests.op_package import git


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("byok") / "repo")


@pytest.mark.slow
def test_two_revisions_and_the_working_tree_side_by_side(repo, tmp_path):
    out = tmp_path / "r.json"
    scratch = tmp_path / "scratch"   # the run's temporary folders go here, so we can see they are gone
    scratch.mkdir()
    worktrees_before = git(repo, "worktree", "list")
    r = cli("compare", "--repo", str(repo),
            "--variant", "old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward",
            "--variant", "new=git:HEAD:mypkg/ops/gn.py::group_norm_forward",
            "--variant", f"wt={repo / 'mypkg/ops/gn.py'}::group_norm_forward",
            *TINY, "--json", str(out), env={**os.environ, "TMPDIR": str(scratch)})
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["baseline"] == "old"
    head, parent = git(repo, "rev-parse", "HEAD").strip(), git(repo, "rev-parse", "HEAD~1").strip()
    origins = {v["name"]: v["origin"] for v in data["variants"]}
    assert origins["old"] == f"git:HEAD~1 ({parent[:7]}) mypkg/ops/gn.py::group_norm_forward"
    assert origins["new"] == f"git:HEAD ({head[:7]}) mypkg/ops/gn.py::group_norm_forward"
    assert origins["wt"] == f"{repo / 'mypkg/ops/gn.py'}::group_norm_forward (working tree of {head[:7]})"
    assert all(v["status"] == "ok" for v in data["variants"])

    case = data["numerics"]["cases"][0]
    status = {v["variant"]: v for v in case["variants"]}
    assert status["old"]["status"] == "pass"          # HEAD~1 ran with HEAD~1's helper (offset 0.0)
    assert status["new"]["status"] == "fail"          # HEAD ran with HEAD's helper (offset 1.0) ...
    assert status["wt"]["status"] == "fail"
    errors = {e["output"]: e for e in status["new"]["outputs"]}
    assert errors["y"]["max_abs"] == pytest.approx(1.0, abs=1e-3)   # ... on y only, by the helper's constant
    assert errors["mean"]["beyond_tol"] == 0 and errors["rstd"]["beyond_tol"] == 0

    bits = {(p["a"], p["b"], p["output"]): p["n_diff"] for p in case["pairs"]}
    numel = 2 * 8 * 16
    assert bits[("old", "new", "y")] == numel           # every y differs between the revisions
    assert bits[("old", "new", "mean")] == 0 and bits[("old", "new", "rstd")] == 0
    assert all(bits[("new", "wt", o)] == 0 for o in ("y", "mean", "rstd"))   # HEAD == the unchanged working tree

    assert list(scratch.iterdir()) == []                  # materialized trees removed
    assert git(repo, "worktree", "list") == worktrees_before
    assert git(repo, "status", "--porcelain") == ""       # the repository is untouched


def test_a_kernel_that_does_not_import_is_reported_and_the_others_still_run(repo, tmp_path):
    out = tmp_path / "r.json"
    r = cli("compare", "explicit_offset", "--repo", str(repo),
            "--variant", "broken=git:HEAD:mypkg/ops/broken.py::group_norm_forward",
            "--variant", "old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward", *TINY, "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    info = {v["name"]: v for v in data["variants"]}
    assert info["broken"]["status"] == "failed"
    assert "cannot import name 'no_such_helper'" in info["broken"]["error"]
    assert "git:HEAD:mypkg/ops/broken.py" in info["broken"]["error"]   # the place, not a vanished temp path
    assert "/tmp" not in info["broken"]["error"] and "kernel-ab-byok" not in info["broken"]["error"]
    # torch joins numerics, unnamed, as the accuracy reference point
    assert [v["variant"] for v in data["numerics"]["cases"][0]["variants"]] == ["explicit_offset", "old", "torch"]
    assert "variant broken could not be loaded" in r.stdout
    # HEAD~1's kernel computes the statistics as the registered kernels do, so they agree bit for bit
    case = data["numerics"]["cases"][0]
    assert {v["variant"]: v["status"] for v in case["variants"]} == {"explicit_offset": "pass", "old": "pass", "torch": "pass"}
    pair = {p["output"]: p["n_diff"] for p in case["pairs"] if (p["a"], p["b"]) == ("explicit_offset", "old")}
    assert pair["mean"] == 0 and pair["rstd"] == 0


@pytest.mark.slow
def test_a_variant_named_among_the_names_takes_that_place(repo, tmp_path):
    out = tmp_path / "r.json"
    r = cli("compare", "new", "flat", "broken", "--repo", str(repo),
            "--variant", "broken=git:HEAD:mypkg/ops/broken.py::group_norm_forward",
            "--variant", "old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward",
            "--variant", "new=git:HEAD:mypkg/ops/gn.py::group_norm_forward", *TINY, "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["baseline"] == "new"
    assert [v["name"] for v in data["variants"]] == ["new", "flat", "old", "broken"]
    assert [v["variant"] for v in data["numerics"]["cases"][0]["variants"]] == ["new", "flat", "old", "torch"]


def test_every_variant_failing_to_load_is_exit_1(repo):
    r = cli("compare", "--repo", str(repo), "--variant", "broken=git:HEAD:mypkg/ops/broken.py::f", *TINY)
    assert r.returncode == 1
    assert "broken could not be loaded" in r.stderr and "Traceback" not in r.stderr


def test_bad_variant_on_the_command_line(repo):
    r = cli("compare", "--repo", str(repo), "--variant", "x=git:HEAD:mypkg/ops/gn.py::wrong_params", *TINY)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "kernel-ab: error: --variant x: parameters do not match group_norm's forward launcher (nor the backward one): missing Y_row_stride, "
        "Y_col_stride, X_row_stride, X_col_stride, Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, "
        "RSTD_row_stride, RSTD_col_stride, W_ptr, B_ptr, channels_per_group"]
    assert r.stdout == ""


@pytest.mark.slow
def test_ir_compiles_each_revision_with_its_own_helper(repo, tmp_path):
    """The IR worker compiles all kernels in one process: two revisions of `mypkg` must not share a helper."""
    out = tmp_path / "ir.json"
    r = cli("ir", "--repo", str(repo), "--shape", "2,8,2,16", "--stage", "ttir", "--quiet",
            "--variant", "old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward",
            "--variant", "new=git:HEAD:mypkg/ops/gn.py::group_norm_forward",
            "--variant", f"wt={repo / 'mypkg/ops/gn.py'}::group_norm_forward", "--json", str(out))
    assert r.returncode == 0, r.stderr
    ir = json.loads(out.read_text())["ir"]
    assert [v["status"] for v in ir["variants"]] == ["ok", "ok", "ok"], ir["variants"]
    pairs = {(p["a"], p["b"]): p for p in ir["pairs"]}
    ttir = lambda p: next(d for d in p["stages"] if d["stage"] == "ttir")  # noqa: E731
    # HEAD's helper adds 1.0 where HEAD~1's adds 0.0; HEAD and the unchanged working tree compile alike
    assert ttir(pairs[("old", "new")])["changed_lines"] > 0
    assert ttir(pairs[("old", "wt")])["changed_lines"] == ttir(pairs[("old", "new")])["changed_lines"]
    assert ("new", "wt") not in pairs or ttir(pairs[("new", "wt")])["changed_lines"] == 0
