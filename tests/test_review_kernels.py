"""What review finds changed between two commits of a small package built here: kernels defined anywhere (under
guards, as methods, nested, by `triton.jit(f)`), and for each public op what changed (a kernel, a jit helper it
calls, a launch's arguments, an added kernel it now picks, a constant, a helper), formatting alone being none."""
from __future__ import annotations

import textwrap

import pytest

from compare.review.kernels import changes, kernels_in
from compare.review.ops_changed import Change, What
from compare.review.revisions import Repository
from tests.review_repo import git

NORM = '''\
import torch
import triton
import triton.language as tl

EPS_FLOOR = 1e-6


@triton.jit
def _mean_sq(x, n):
    return tl.sum(x * x, axis=0) / n


@triton.jit
def _norm_fwd(X, Y, n, eps, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + cols, mask=cols < n, other=0.0)
    var = _mean_sq(x, n)
    tl.store(Y + cols, x / tl.sqrt(var + eps), mask=cols < n)


def norm_forward(X, eps):
    Y = torch.empty_like(X)
    n = X.shape[-1]
    _norm_fwd[(1,)](X, Y, n, max(eps, EPS_FLOOR), BLOCK=triton.next_power_of_2(n), num_warps=4)
    return Y, n


class NormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, eps=1e-6):
        Y, _ = norm_forward(X, eps)
        return Y


def norm(X, eps=1e-6):
    return NormFunction.apply(X, eps)
'''


def _changes(tmp_path, before: dict[str, str], after: dict[str, str]):
    """changes() between two commits of package `lib` holding the files `before`, then `after`."""
    git(tmp_path, "init", "-q")
    for files in (before, after):
        (tmp_path / "lib").mkdir(exist_ok=True)
        (tmp_path / "lib" / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / "lib" / name).write_text(text)
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-qm", "a commit")
    repo = Repository(str(tmp_path))
    return changes(repo, repo.commit("HEAD~1", "BASE"), repo.commit("HEAD", "HEAD"))


def _one_op(found):
    [op] = found.ops
    return op


def _guarded(source: str, guard: str) -> str:
    """`source` with its kernels and ops indented under `guard` (an `if`, `try` or `with` line)."""
    head, _, body = source.partition("EPS_FLOOR")
    tail = "\nexcept ImportError:\n    pass\n" if guard.startswith("try") else "\n"
    return head + "HAS_TRITON = True\n" + guard + "\n" + textwrap.indent("EPS_FLOOR" + body, "    ") + tail


@pytest.mark.parametrize("guard", ["if HAS_TRITON:", "try:", "with open(__file__):"])
def test_a_kernel_under_a_module_level_guard_is_found_and_its_change_counts(tmp_path, guard):
    source = _guarded(NORM, guard)
    found = _changes(tmp_path, {"norm.py": source}, {"norm.py": source.replace("var + eps", "var + eps + 1e-3")})
    assert [k.key for _, k in found.changed] == ["lib.norm:_norm_fwd"]
    op = _one_op(found)
    assert op.op.name == "NormFunction.apply" and op.what == (What(Change.KERNEL, "_norm_fwd"),)
    assert not op.launcher_only and op.kernels == ("lib.norm:_norm_fwd",)


def test_a_kernel_that_is_a_method_is_found_with_its_class_as_op():
    source = ("import torch, triton\nclass F(torch.autograd.Function):\n    @staticmethod\n    @triton.jit\n"
              "    def _k(X, n):\n        pass\n\n    @staticmethod\n    def forward(ctx, X):\n"
              "        F._k[(1,)](X, 1)\n        return X\n")
    [kernel] = kernels_in(source, "m.py", "m")
    assert kernel.key == "m:F._k" and kernel.params == ("X", "n") and [o.name for o in kernel.ops] == ["F.apply"]


def test_a_kernel_nested_in_a_function_is_found_and_the_function_launches_it():
    source = ("import triton\ndef op(X):\n    @triton.jit\n    def inner(X, n):\n        pass\n"
              "    inner[(1,)](X, 1)\n")
    [kernel] = kernels_in(source, "m.py", "m")
    assert kernel.key == "m:op.inner" and [o.name for o in kernel.ops] == ["op"]


@pytest.mark.parametrize("binding", [
    "k = triton.jit(f)",
    "k = triton.autotune(configs=[], key=['n'])(triton.jit(f))",
    "from triton import jit as J\nk = J(f)",
])
def test_a_kernel_made_by_calling_triton_jit_is_found_under_its_bound_name(binding):
    source = f"import triton\ndef f(X, n):\n    pass\n{binding}\ndef op(X):\n    k[(1,)](X, 1)\n"
    [kernel] = kernels_in(source, "m.py", "m")
    assert kernel.key == "m:k" and kernel.params == ("X", "n") and [o.name for o in kernel.ops] == ["op"]
    assert kernel.tuned == ("autotune" in binding)
    changed = kernels_in(source.replace("pass", "x = 1"), "m.py", "m")[0]
    assert changed.code != kernel.code


def test_an_alias_of_triton_jit_used_as_decorator_makes_a_kernel():
    [kernel] = kernels_in("import triton\njit = triton.jit\n@jit\ndef k(X):\n    pass\n", "m.py", "m")
    assert kernel.key == "m:k"


def test_a_kernel_whose_definition_cannot_be_read_is_listed(tmp_path):
    source = "import triton\ndef make():\n    return None\nk = triton.jit(make())\ndef op(X):\n    k[(1,)](X)\n"
    found = _changes(tmp_path, {"m.py": source}, {"m.py": source.replace("(X)\n", "(X, 2)\n")})
    assert len(found.unresolved) == 2 and "k = triton.jit(make())" in found.unresolved[0]
    assert _one_op(found).what[0] == What(Change.LAUNCH, "k", "arguments")


def test_a_changed_jit_helper_counts_for_the_kernel_calling_it_and_its_op(tmp_path):
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": NORM.replace("/ n\n", "/ (n + 1)\n")})
    assert [k.key for _, k in found.changed] == ["lib.norm:_mean_sq", "lib.norm:_norm_fwd"]
    op = _one_op(found)
    assert op.op.name == "NormFunction.apply" and op.what == (What(Change.JIT_HELPER, "_mean_sq"),)
    assert op.kernels == ("lib.norm:_norm_fwd",) and not op.launcher_only


def test_a_changed_module_constant_the_launcher_reads_is_a_constant_change(tmp_path):
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": NORM.replace("EPS_FLOOR = 1e-6", "EPS_FLOOR = 1e-5")})
    assert found.changed == []
    op = _one_op(found)
    assert op.what == (What(Change.CONSTANT, "EPS_FLOOR"),) and op.launcher_only


@pytest.mark.parametrize("before, after, detail", [
    ("num_warps=4", "num_warps=8", "num_warps"),
    ("[(1,)]", "[(2,)]", "grid"),
    ("BLOCK=triton.next_power_of_2(n)", "BLOCK=256", "BLOCK"),
    ("num_warps=4)", "num_warps=4, num_stages=2)", "num_stages"),
])
def test_a_changed_launch_argument_is_a_launch_change_naming_it(tmp_path, before, after, detail):
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": NORM.replace(before, after)})
    op = _one_op(found)
    assert op.what == (What(Change.LAUNCH, "_norm_fwd", detail),) and op.launcher_only
    assert op.folded == ("norm_forward", "norm")


def test_an_added_kernel_the_launcher_picks_is_reported_added_and_launcher_only(tmp_path):
    tiled = ("@triton.jit\ndef _norm_fwd_tiled(X, Y, n, eps, BLOCK: tl.constexpr):\n    pass\n\n\n"
             "def norm_forward(X, eps):\n    if X.shape[-1] > WIDE:\n        Y = torch.empty_like(X)\n"
             "        _norm_fwd_tiled[(2,)](X, Y, X.shape[-1], eps, BLOCK=1024)\n        return Y, X.shape[-1]\n")
    after = NORM.replace("EPS_FLOOR = 1e-6", "EPS_FLOOR = 1e-6\nWIDE = 16384")
    after = after.replace("def norm_forward(X, eps):\n", tiled)
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": after})
    assert [k.key for k in found.added] == ["lib.norm:_norm_fwd_tiled"] and found.changed == []
    op = _one_op(found)
    assert op.what[0] == What(Change.KERNEL_ADDED, "_norm_fwd_tiled")
    assert What(Change.CONSTANT, "WIDE", "added") in op.what and What(Change.HELPER, "norm_forward") in op.what
    assert op.launcher_only and "lib.norm:_norm_fwd_tiled" in op.kernels


def test_a_change_of_comments_docstrings_and_layout_alone_is_none(tmp_path):
    after = NORM.replace("def norm_forward(X, eps):\n", 'def norm_forward(X, eps):\n    """Doc."""  # why\n') \
        .replace("var = _mean_sq(x, n)", "var = _mean_sq(x,\n                  n)  # mean square")
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": after})
    assert found.changed == [] and found.ops == [] and found.unreadable == []


def test_an_autograd_function_is_preferred_over_its_helper_and_its_wrapper(tmp_path):
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": NORM.replace("var + eps", "var + 2 * eps")})
    op = _one_op(found)
    assert op.op.name == "NormFunction.apply" and op.folded == ("norm_forward", "norm")
    assert op.base_op == op.op and op.op.defaults == ("1e-06",) and not op.op.returns_tuple


def test_a_changed_wrapper_alone_is_the_public_entry_and_returns_a_tuple_is_told(tmp_path):
    found = _changes(tmp_path, {"norm.py": NORM}, {"norm.py": NORM.replace("return Y, n", "return Y, n + 0")})
    op = _one_op(found)
    assert op.op.name == "NormFunction.apply" and op.what == (What(Change.HELPER, "norm_forward"),)
    assert kernels_in(NORM, "m.py", "m")[1].ops[0].returns_tuple   # norm_forward, the nearest op of _norm_fwd


def test_a_helper_imported_from_another_changed_module_of_the_package_counts_for_the_importing_op(tmp_path):
    util = "def block(n):\n    return 128\n"
    source = NORM.replace("triton.next_power_of_2(n)", "block(n)")
    source = source.replace("EPS_FLOOR = 1e-6", "from lib.util import block\nEPS_FLOOR = 1e-6")
    found = _changes(tmp_path, {"norm.py": source, "util.py": util},
                     {"norm.py": source, "util.py": util.replace("128", "256")})
    op = _one_op(found)   # util's own op `block` is one NormFunction reaches: folded into it
    assert op.path == "lib/norm.py" and op.op.name == "NormFunction.apply" and "lib.util:block" in op.folded
    assert op.what == (What(Change.HELPER, "lib.util:block"),) and op.launcher_only


def test_a_kernel_defined_in_both_branches_of_a_guard_changes_with_either():
    source = ("import triton\nif HAS:\n    @triton.jit\n    def k(X):\n        x = 1\nelse:\n    @triton.jit\n"
              "    def k(X):\n        x = 2\ndef op(X):\n    k[(1,)](X)\n")
    [kernel] = kernels_in(source, "m.py", "m")
    assert kernel.key == "m:k" and [o.name for o in kernel.ops] == ["op"]
    assert kernels_in(source.replace("x = 2", "x = 3"), "m.py", "m")[0].code != kernel.code


def test_a_comprehension_variable_named_like_a_kernel_does_not_hide_its_launch():
    source = "import triton\n@triton.jit\ndef k(X):\n    pass\ndef op(X):\n    n = [k for k in X]\n    k[(1,)](X)\n"
    assert [o.name for o in kernels_in(source, "m.py", "m")[0].ops] == ["op"]
