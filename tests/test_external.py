"""variants/external.py in process: --variant loads kernels from a file or a git revision, each with its own
helpers, leaving sys.path, sys.modules and the repository as they were; a bad spec is one line, exit 2
(on tests/byok_repo.py's repository)."""
import subprocess
import sys
from pathlib import Path

import pytest

import main
from tests.byok_repo import ROOT, TINY, make_repo
from tests.op_package import git
from variants import registry
from variants.external import BadSpec, ExternalKernels, FailedLoad, add_to

FAMILY = "group_norm"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("byok") / "repo")


@pytest.mark.parametrize("spec, expected", [
    ("x=nosuch/kernel.py::group_norm_forward", "no such file nosuch/kernel.py"),
    ("x=git:nosuchrev:mypkg/ops/gn.py::group_norm_forward", "revision 'nosuchrev' not found"),
    ("x=git:HEAD~1:mypkg/ops/broken.py::group_norm_forward", "mypkg/ops/broken.py does not exist at HEAD~1"),
    ("x=git:HEAD:mypkg/ops/gn.py::no_such_fn", "has no function no_such_fn; Triton kernels it defines: extra_required, extra_with_default, "
                                                 "group_norm_forward, swapped, wrong_params"),
    ("x=git:HEAD:mypkg/__init__.py::f", "mypkg/__init__.py has no function f; it defines no Triton kernel"),

    # not a kernel but callable: an op, whose one parameter cannot take group norm's six op arguments
    ("x=git:HEAD:mypkg/ops/utils.py::not_a_kernel", "the call (X, W, B, num_channels, num_groups, eps) does not fit "
                                                      "the callable's parameters (Y_ptr): too many positional arguments"),
    ("x=git:HEAD:mypkg/ops/utils.py::OFFSET", "OFFSET is neither a @triton.jit kernel nor a callable op (it is float)"),
    ("x=git:HEAD:mypkg/ops/gn.py::wrong_params", "parameters do not match group_norm's forward launcher (nor the backward one): missing Y_row_stride"),
    ("x=git:HEAD:mypkg/ops/utils.py::scale_shift", "missing Y_ptr"),
    ("x=git:HEAD:mypkg/ops/gn.py::swapped", "parameter 1 is X_ptr, the launcher passes Y_ptr there"),
    ("x=git:HEAD:mypkg/ops/gn.py::extra_required", "unexpected SCALE"),
    ("flat=git:HEAD:mypkg/ops/gn.py::group_norm_forward", "--variant flat: the name is already taken"),
    ("x", "expected NAME=PATH::CALLABLE or NAME=git:REV:PATH::CALLABLE"),
    ("x=mypkg/ops/gn.py", "expected NAME=PATH::CALLABLE"),
    ("x=git:HEAD::group_norm_forward", "a git spec is git:REV:PATH::CALLABLE"),
    ("bad name=mypkg/ops/gn.py::f", "must be an identifier"),
])
def test_bad_variant_is_one_line_and_exit_2(repo, spec, expected, capsys):
    # in process, for speed (an uncaught exception would fail the test); test_external_git.py's
    # test_bad_variant_on_the_command_line checks the real command line the same way
    path_before = list(sys.path)
    assert main.main(["compare", "--repo", str(repo), "--variant", spec, *TINY]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0]
    assert out == ""
    assert sys.path == path_before
    assert not any(m == "mypkg" or m.startswith("mypkg.") for m in sys.modules)


def test_repo_and_family_errors_are_one_line_and_exit_2(repo, tmp_path, capsys):
    for args, expected in [
        (("--repo", str(tmp_path), "--variant", "x=git:HEAD:a.py::f"), "not a git repository"),
        (("--repo", str(tmp_path / "nope"), "--variant", "x=git:HEAD:a.py::f"), "no such folder"),
        (("--family", "conv", "--variant", "x=a.py::f"), "unknown family 'conv'; known families: "),
        (("--repo", str(repo), "--variant", "x=git:HEAD:mypkg/ops/gn.py::group_norm_forward",
          "--variant", "x=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward"), "--variant x: the name is already taken"),
    ]:
        assert main.main(["compare", *args, *TINY]) == 2
        out, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1 and expected in err and out == "", err


def test_loading_in_process_leaves_nothing_behind(repo):
    reg = registry()
    path_before, modules_before = list(sys.path), set(sys.modules)
    with ExternalKernels(repo) as kernels:
        reg2, names, failed = add_to(reg, kernels, [
            "old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward",
            "new=git:HEAD:mypkg/ops/gn.py::group_norm_forward",
            "broken=git:HEAD:mypkg/ops/broken.py::group_norm_forward",
            "syntax=git:HEAD:mypkg/ops/syntax.py::f",
            "extra=git:HEAD:mypkg/ops/gn.py::extra_with_default",   # a trailing parameter with a default is fine
        ], FAMILY)
        assert names == ("old", "new", "extra")
        assert [f.name for f in failed] == ["broken", "syntax"] and isinstance(failed[0], FailedLoad)
        assert failed[1].error.splitlines()[0].startswith("import of mypkg/ops/syntax.py failed: SyntaxError: ")
        assert "git:HEAD:mypkg/ops/syntax.py:3: def f(:" in failed[1].error
        old, new = reg2.get("old").kernel, reg2.get("new").kernel
        # each kernel sees its own revision's helper module
        assert old.fn.__globals__["scale_shift"] is not new.fn.__globals__["scale_shift"]
        assert "+ 0.0" in Path(old.fn.__globals__["scale_shift"].fn.__code__.co_filename).read_text()
        assert "+ 1.0" in Path(new.fn.__globals__["scale_shift"].fn.__code__.co_filename).read_text()
        roots = reg2.get("old").import_roots
        assert roots and all(Path(r).is_dir() for r in roots)
        assert Path(old.fn.__code__.co_filename).is_relative_to(roots[0])
        assert sys.path == path_before                      # restored right after each import
        assert not any(m == "mypkg" or m.startswith("mypkg.") for m in sys.modules)
        assert reg2.has("flat") and not reg.has("old")   # the original registry is unchanged
    assert not any(Path(r).exists() for r in roots)         # trees removed at exit
    assert sys.path == path_before
    assert set(sys.modules) - modules_before <= {m for m in sys.modules if m.startswith(("triton", "numpy"))}


def test_cleanup_happens_on_error_too(repo):
    with pytest.raises(BadSpec):
        with ExternalKernels(repo) as kernels:
            kernels.load("old=git:HEAD~1:mypkg/ops/gn.py::group_norm_forward", registry().family(FAMILY))
            tree = kernels._tmp
            assert tree is not None and tree.is_dir()
            kernels.load("x=git:HEAD:mypkg/ops/gn.py::nope", registry().family(FAMILY))
    assert not tree.exists()


@pytest.mark.skipif(not (ROOT / ".git").exists(),
                    reason="this copy of kernel-ab is not a git checkout (as on the GPU machine), so it has no revisions")
def test_the_projects_own_variants_load_from_a_revision_without_clobbering_them():
    """Loading kernel-ab's own `variants` package from a revision must not replace the live one."""
    import variants
    import variants.group_norm.common as live_common
    reg = registry()
    with ExternalKernels(ROOT) as kernels:
        v = kernels.load("old=git:HEAD:variants/group_norm/explicit_offset.py::group_norm_forward", reg.family(FAMILY))
        assert sys.modules["variants"] is variants and sys.modules["variants.group_norm.common"] is live_common
        assert v.kernel.fn.__globals__["group_statistics"] is not live_common.group_statistics
        assert v.kernel is not reg.get("explicit_offset").kernel


def test_working_tree_origin_says_commit_and_whether_modified(tmp_path):
    from variants.external import _working_tree_note
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "k.py").write_text("x = 1\n")
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "k.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    short = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert _working_tree_note(repo / "k.py") == f" (working tree of {short})"
    (repo / "k.py").write_text("x = 2\n")
    assert _working_tree_note(repo / "k.py") == f" (working tree of {short}, modified)"
    if subprocess.run(["git", "-C", str(loose), "rev-parse"], capture_output=True).returncode:
        assert _working_tree_note(loose / "k.py") == ""
