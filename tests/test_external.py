"""Bring your own kernel: --variant loads kernels from a file or a git revision (variants/external.py).

A temporary git repository holds a small package, `mypkg`, whose kernel file `mypkg/ops/gn.py`
imports its helper from its own package (`mypkg.ops.utils`). Between the two commits the kernel file
changes (its inner loop) and so does the helper: at HEAD it adds OFFSET = 1.0 to every y, at HEAD~1
it adds 0.0. So if each revision loads its own helper, HEAD~1 passes numerics and HEAD fails on y
alone (by exactly 1.0), and HEAD and the working tree (unchanged) are bitwise equal.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import main
from variants import registry
from variants.external import BadSpec, ExternalKernels, FailedLoad, add_to, parse

ROOT = Path(__file__).resolve().parent.parent
FAMILY = "group_norm"

UTILS = '''\
import triton
import triton.language as tl

OFFSET = {offset}


@triton.jit
def group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    total = 0.0
    total_sq = 0.0
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X_ptr + offsets, mask=offsets < hidden_size, other=0.0).to(tl.float32)
        total += tl.sum(x)
        total_sq += tl.sum(x * x)
    mean = total / hidden_size
    var = total_sq / hidden_size - mean * mean
    return mean, tl.rsqrt(var + eps)


@triton.jit
def scale_shift(x, mean, rstd, w, b):
    return (x - mean) * rstd * w + b + {offset}


def not_a_kernel(Y_ptr):
    return Y_ptr
'''

KERNEL = '''\
import triton
import triton.language as tl

from mypkg.ops.utils import group_statistics, scale_shift


@triton.jit
def group_norm_forward(
    Y_ptr, Y_row_stride, Y_col_stride,
    X_ptr, X_row_stride, X_col_stride,
    Mean_ptr, Mean_row_stride, Mean_col_stride,
    RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
    W_ptr, B_ptr,
    hidden_size, channels_per_group, eps,
    BLOCK_SIZE: tl.constexpr,
):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    X_ptr += batch_idx * X_row_stride + group_idx * X_col_stride
    Y_ptr += batch_idx * Y_row_stride + group_idx * Y_col_stride
    mean, rstd = group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE)
    hidden_per_channel = hidden_size // channels_per_group
    first_channel = group_idx * channels_per_group
    for channel in tl.range(first_channel, first_channel + channels_per_group):
        w = tl.load(W_ptr + channel).to(tl.float32)
        b = tl.load(B_ptr + channel).to(tl.float32)
        channel_offset = (channel - first_channel) * hidden_per_channel
        for start in {inner}(0, hidden_per_channel, BLOCK_SIZE):
            offsets = start + tl.arange(0, BLOCK_SIZE)
            mask = offsets < hidden_per_channel
            x = tl.load(X_ptr + channel_offset + offsets, mask=mask, other=mean).to(tl.float32)
            tl.store(Y_ptr + channel_offset + offsets, scale_shift(x, mean, rstd, w, b), mask=mask)
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, mean)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


@triton.jit
def wrong_params(Y_ptr, X_ptr, hidden_size, eps, BLOCK_SIZE: tl.constexpr):
    pass


@triton.jit
def swapped(X_ptr, X_row_stride, X_col_stride, Y_ptr, Y_row_stride, Y_col_stride,
            Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
            W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr):
    pass


@triton.jit
def extra_required(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride,
                   Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                   W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr, SCALE):
    pass


@triton.jit
def extra_with_default(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride,
                       Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride,
                       W_ptr, B_ptr, hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr,
                       SCALE: tl.constexpr = 1):
    pass
'''

BROKEN = "from mypkg.ops.utils import no_such_helper\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=kernel-ab test", "-c", "user.email=test@kernel-ab",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def write(repo: Path, offset: str, inner: str) -> None:
    ops = repo / "mypkg" / "ops"
    ops.mkdir(parents=True, exist_ok=True)
    (repo / "mypkg" / "__init__.py").write_text("")
    (ops / "__init__.py").write_text("")
    (ops / "utils.py").write_text(UTILS.format(offset=offset))
    (ops / "gn.py").write_text(KERNEL.format(inner=inner))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """HEAD~1: correct helper, inner loop `range`; HEAD: helper adds 1.0, inner loop `tl.range`, plus a
    kernel file that does not import. The working tree is HEAD."""
    repo = tmp_path_factory.mktemp("byok") / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "0.0", "range")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    write(repo, "1.0", "tl.range")
    (repo / "mypkg" / "ops" / "broken.py").write_text(BROKEN)
    (repo / "mypkg" / "ops" / "syntax.py").write_text("import triton\n\ndef f(:\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    return repo


def cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


TINY = ("--shape", "2,8,2,16", "--trials", "1", "--check", "numerics", "--quiet")


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
    # in process, for speed (an uncaught exception would fail the test); the subprocess test below
    # checks the real command line the same way
    path_before = list(sys.path)
    assert main.main(["compare", "--repo", str(repo), "--variant", spec, *TINY]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0]
    assert out == ""
    assert sys.path == path_before
    assert not any(m == "mypkg" or m.startswith("mypkg.") for m in sys.modules)


def test_bad_variant_on_the_command_line(repo):
    r = cli("compare", "--repo", str(repo), "--variant", "x=git:HEAD:mypkg/ops/gn.py::wrong_params", *TINY)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "kernel-ab: error: --variant x: parameters do not match group_norm's forward launcher (nor the backward one): missing Y_row_stride, "
        "Y_col_stride, X_row_stride, X_col_stride, Mean_ptr, Mean_row_stride, Mean_col_stride, RSTD_ptr, "
        "RSTD_row_stride, RSTD_col_stride, W_ptr, B_ptr, channels_per_group"]
    assert r.stdout == ""


def test_repo_and_family_errors_are_one_line_and_exit_2(repo, tmp_path, capsys):
    for args, expected in [
        (("--repo", str(tmp_path), "--variant", "x=git:HEAD:a.py::f"), "not a git repository"),
        (("--repo", str(tmp_path / "nope"), "--variant", "x=git:HEAD:a.py::f"), "no such folder"),
        (("--family", "conv", "--variant", "x=a.py::f"), "unknown family 'conv'; known families: group_norm"),
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


def test_family_launcher_params_match_every_registered_kernel():
    """The family's forward_params, which loaded kernels are checked against, are what its own kernels take."""
    import inspect
    reg = registry()
    family = reg.family(FAMILY)
    for v in reg.variants(FAMILY):
        if v.kind == "triton":
            assert tuple(inspect.signature(v.kernel.fn).parameters) == family.forward_params, v.name


def test_parse():
    assert parse("a=git:origin/main:pkg/k.py::fwd") == parse("a=git:origin/main:pkg/k.py::fwd")
    s = parse("a=git:origin/main:pkg/k.py::fwd")
    assert (s.name, s.rev, s.path, s.function) == ("a", "origin/main", "pkg/k.py", "fwd")
    s = parse("b=some/dir/k.py::fwd")
    assert (s.name, s.rev, s.path, s.function) == ("b", None, "some/dir/k.py", "fwd")
    with pytest.raises(BadSpec):
        parse("c=k.py::not-a-name")


def test_a_kernel_that_does_not_compile_is_a_failed_variant():
    """compile_failures (used on a GPU, where Triton compiles) compiles each kernel through the family's
    launcher without launching it, lists the one that raises Triton's CompilationError with its
    message and kernel line, and leaves other errors to the numerics."""
    import ast
    import dataclasses as dc

    import torch
    from triton.compiler.errors import CompilationError
    from variants.external import compile_failures

    reg = registry()
    family = reg.family(FAMILY)
    good = reg.get("explicit_offset")
    src = "def k(X_ptr):\n    y = tl.nosuch(X_ptr)\n"
    node = ast.parse(src).body[0].body[0]
    seen = []

    class Fake:
        def __init__(self, exc):
            self.exc = exc

        def warmup(self, *args, grid, **kwargs):
            seen.append((len(args), grid, sorted(kwargs)))
            raise self.exc

        def __getitem__(self, grid):
            raise AssertionError("compile_failures must not launch a kernel")

    no_compile = Fake(CompilationError(src, node, "AttributeError(\"module 'triton.language' has no attribute 'nosuch'\")"))
    variants = [good, dc.replace(good, name="nocompile", kernel=no_compile),
                dc.replace(good, name="crash", kernel=Fake(RuntimeError("out of bounds")))]
    shape = family.parse_shape("2,8,2,16").shapes[0]
    failures = compile_failures(family, variants, shape, torch.float32, "cpu")
    assert list(failures) == ["nocompile"]
    assert failures["nocompile"].splitlines() == [
        "does not compile: CompilationError: AttributeError(\"module 'triton.language' has no attribute 'nosuch'\")",
        "at line 2 of the kernel: y = tl.nosuch(X_ptr)"]
    # the launcher's real arguments reached warmup: 17 positional, BLOCK_SIZE by name, grid (batch, groups)
    assert seen == [(17, (2, 2), ["BLOCK_SIZE"])] * 2

    # the inputs are drawn once for every kernel (on an image shape a draw takes seconds), and the
    # progress hears of each kernel before it compiles
    draws, heard = [], []
    original = family.make_inputs

    def counting(*args, **kwargs):
        draws.append(args)
        return original(*args, **kwargs)
    family.make_inputs = counting
    try:
        compile_failures(family, variants, shape, torch.float32, "cpu", heard.append)
    finally:
        del family.make_inputs
    assert len(draws) == 1
    assert heard == [f"checking that {v.name}'s forward kernel compiles for {shape.label}" for v in variants]


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


@pytest.mark.slow
def test_on_compiled_triton_a_kernel_that_does_not_compile_is_reported_failed_and_the_rest_compared():
    """pipeline.run on a compiled backend (faked here: the interpreter's kernels, whose warmup compiles
    nothing, plus one kernel whose compile raises) lists the broken one as failed and compares the rest."""
    import ast
    import dataclasses as dc

    from triton.compiler.errors import CompilationError

    from compare import pipeline
    from compare.backend import Backend

    src = "def k(X_ptr):\n    y = tl.nosuch(X_ptr)\n"

    class NoCompile:
        def warmup(self, *args, grid, **kwargs):
            raise CompilationError(src, ast.parse(src).body[0].body[0], "AttributeError('nosuch')")

    reg = registry()
    reg = reg.with_variant(dc.replace(reg.get("flat"), name="nocompile", kernel=NoCompile()))
    request = pipeline.Request(("explicit_offset", "nocompile", "flat"), shape="2,8,2,16", trials=1)
    report = pipeline.run(request, reg, Backend("cpu", False, "compiled (faked for the test)"))
    assert [(v.name, v.status) for v in report.variants] == [
        ("explicit_offset", "ok"), ("flat", "ok"), ("nocompile", "failed")]
    assert report.variants[2].error.startswith("does not compile: CompilationError: AttributeError('nosuch')")
    assert [v.variant for v in report.numerics.cases[0].variants] == ["explicit_offset", "flat", "torch"]
    with pytest.raises(pipeline.NothingToCompare):
        pipeline.run(dc.replace(request, variants=("nocompile",)), reg, Backend("cpu", False, "faked"))


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
