"""Imports stay in the reviewed tree (variants/isolation.py): a --variant file finds kernel-ab's own
top-level names (`variants`, `compare`, `main`) only in its own tree. Two synthetic repositories: `alien`
lacks `variants` and imports kernel-ab's `variants.group_norm.common`; `own` has its own `variants`,
`compare` (a namespace package) and `main`, each with a WHERE only it has."""
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import compare
import variants
import variants.group_norm.common  # noqa: F401 (kernel-ab's module the alien kernel asks for)
from tests.op_package import git
from tests.byok_repo import KERNEL, TINY, UTILS, cli
from variants import registry
from variants.external import ExternalKernels, FailedLoad

FAMILY = "group_norm"
WHERE = "WHERE = 'the reviewed tree'\n"
OWN_KERNEL = KERNEL.format(inner="tl.range").replace("from mypkg.ops.utils import", """\
import main
import variants.external
from compare.where import WHERE as COMPARE_WHERE
from variants import WHERE
from variants.ops.utils import""")
ALIEN_KERNEL = "import triton\n\nfrom variants.group_norm.common import group_statistics\n"


def commit(repo: Path, files: dict[str, str]) -> Path:
    """A git repository at `repo` with `files` (path -> text) committed; the working tree is that commit."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the tree")
    return repo


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    top = tmp_path_factory.mktemp("isolation")
    alien = commit(top / "alien", {"gn.py": ALIEN_KERNEL})
    own = commit(top / "own", {
        "variants/__init__.py": WHERE, "variants/ops/__init__.py": "",
        "variants/ops/utils.py": UTILS.format(offset="0.0"),
        "variants/external.py": WHERE,   # a module of the name kernel-ab is loading it with
        "compare/where.py": WHERE,       # a namespace package: kernel-ab's regular `compare` must not win
        "main.py": WHERE, "gn.py": OWN_KERNEL,
        "leaky.py": ALIEN_KERNEL,   # its tree has `variants`, but not `variants.group_norm`
    })
    return SimpleNamespace(alien=alien, own=own)


def spec(repo: Path, at: str, path: str) -> str:
    where = f"git:HEAD:{path}" if at == "git" else str(repo / path)
    return f"x={where}::group_norm_forward"


def state():
    """What a load must leave as it found: the module table, sys.path and the meta-path finders."""
    return {k: id(v) for k, v in sys.modules.items()}, list(sys.path), list(sys.meta_path)


@pytest.mark.parametrize("at", ["git", "working tree"])
@pytest.mark.parametrize("repo, path, missing", [("alien", "gn.py", "variants"),
                                                 ("own", "leaky.py", "variants.group_norm")])
def test_a_name_of_kernel_ab_that_the_tree_lacks_fails_the_load(repos, at, repo, path, missing):
    family = registry().family(FAMILY)
    before = state()
    with ExternalKernels(getattr(repos, repo)) as kernels:
        result = kernels.load(spec(getattr(repos, repo), at, path), family)
    assert isinstance(result, FailedLoad)
    assert f"No module named '{missing}' in the reviewed tree" in result.error
    assert f"{path}:3)" in result.error   # where: the kernel file's import line
    assert state() == before            # kernel-ab's modules were not imported again, nor replaced
    assert sys.modules["variants"] is variants and sys.modules["compare"] is compare


@pytest.mark.parametrize("at", ["git", "working tree"])
def test_a_tree_with_its_own_variants_compare_and_main_imports_its_own(repos, at):
    family = registry().family(FAMILY)
    before = state()
    with ExternalKernels(repos.own) as kernels:
        v = kernels.load(spec(repos.own, at, "gn.py"), family)
        assert not isinstance(v, FailedLoad), v
        scope = v.kernel.fn.__globals__
        assert scope["WHERE"] == "the reviewed tree"
        assert scope["COMPARE_WHERE"] == "the reviewed tree" and scope["main"].WHERE == "the reviewed tree"
        assert scope["variants"].external.WHERE == "the reviewed tree"
        root = Path(v.import_roots[0])
        assert all(Path(m.__file__).is_relative_to(root) for m in (scope["main"], scope["variants"].external))
        assert Path(scope["scale_shift"].fn.__code__.co_filename).is_relative_to(root)
        assert sys.modules["variants"] is variants and sys.modules["compare"] is compare
    assert state() == before


def test_the_report_runs_the_trees_own_kernel_and_names_the_one_that_lacks_its_import(repos, tmp_path):
    out = tmp_path / "r.json"
    r = cli("compare", "--repo", str(repos.own), "--variant", "own=git:HEAD:gn.py::group_norm_forward",
            "--variant", f"alien={repos.alien / 'gn.py'}::group_norm_forward", *TINY, "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    info = {v["name"]: v for v in data["variants"]}
    assert info["own"]["status"] == "ok" and info["alien"]["status"] == "failed"
    assert "No module named 'variants' in the reviewed tree" in info["alien"]["error"]
    assert "variant alien could not be loaded" in r.stdout
    status = {v["variant"]: v["status"] for v in data["numerics"]["cases"][0]["variants"]}
    assert status["own"] == "pass"      # the tree's helpers (offset 0.0) computed group norm


CALL_TIME = '''\
import torch.nn.functional as F


def op(X, W, B, num_channels, num_groups, eps):
    from variants.inputs import WHERE   # imported when called (kernel-ab has a variants.inputs too)
    assert WHERE == "the reviewed tree", WHERE
    return F.group_norm(X, num_groups, W, B, eps)
'''


@pytest.mark.parametrize("has_variants", [True, False])
def test_an_import_made_when_called_resolves_in_the_reviewed_tree(tmp_path, has_variants):
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "__init__.py").write_text("")
    (tree / "lib" / "ops.py").write_text(CALL_TIME)
    if has_variants:
        (tree / "variants").mkdir()
        (tree / "variants" / "__init__.py").write_text("")
        (tree / "variants" / "inputs.py").write_text('WHERE = "the reviewed tree"\n')
        (tree / "lib" / "__init__.py").write_text("import variants.inputs  # noqa: F401 (loaded with the tree)\n")
    import torch
    family = registry().family(FAMILY)
    shape = family.parse_shape("2,8,2,16").shapes[0]
    inputs = family.make_inputs(shape, torch.float32, "cpu", 0)
    with ExternalKernels(tree) as kernels:
        v = kernels.load(f"x={tree / 'lib' / 'ops.py'}::op", family)
        outputs = family.alloc_outputs(shape, torch.float32, "cpu")
        if has_variants:
            v.run(inputs, outputs, shape)   # the tree's variants.inputs, not kernel-ab's
        else:
            with pytest.raises(ModuleNotFoundError, match="in the reviewed tree"):
                v.run(inputs, outputs, shape)
    assert sys.modules["variants"] is variants
