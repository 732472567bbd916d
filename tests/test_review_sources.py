"""Tests and benchmark scripts are where an op's calls come from, never ops: review lists none of their
functions as changed ops, and a pull request changing only them says so."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from compare.review import render
from compare.review.kernels import changes
from compare.review.revisions import Repository, Role, role

LIB = '''\
import triton
import triton.language as tl


@triton.jit
def _double(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * {factor}, mask=offs < n)


def double(x):
    y = x.new_empty(x.shape)
    _double[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y
'''

TEST = '''\
import triton
import triton.language as tl
from mylib.ops import double, _double


@triton.jit
def _reference_kernel(X, Y):
    tl.store(Y, tl.load(X) * {factor})


def test_double():
    _double[(1,)](None, None, 0, BLOCK=1)
    assert double is not None
'''


@pytest.mark.parametrize("path, expected", [
    ("mylib/ops/norm.py", Role.LIBRARY), ("src/lib/testing.py", Role.LIBRARY), ("fla/ops/utils/cumsum.py", Role.LIBRARY),
    ("test/transformers/test_cross_entropy.py", Role.TEST), ("tests/modules/test_activation.py", Role.TEST),
    ("mylib/conftest.py", Role.TEST), ("mylib/ops/norm_test.py", Role.TEST), ("test/utils.py", Role.TEST),
    ("mylib/ops/test_norm.py", Role.TEST), ("benchmark/scripts/benchmark_dyt.py", Role.BENCHMARK),
    ("benchmarks/ops/run.py", Role.BENCHMARK), ("mylib/bench_norm.py", Role.BENCHMARK),
])
def test_a_files_role_is_read_from_its_folders_and_name(path, expected):
    assert role(path) == expected


def _commit(top: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)
    subprocess.run(["git", "-C", str(top), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(top), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
                   check=True)


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, {"mylib/__init__.py": "", "mylib/ops.py": LIB.format(factor=2),
                       "tests/test_ops.py": TEST.format(factor=2), "benchmarks/bench_ops.py": "from mylib.ops import double\n"},
            "one")
    return tmp_path


def _review_lines(top: Path) -> tuple:
    r = Repository(str(top))
    base, head = r.commit("HEAD~1", "BASE"), r.commit("HEAD", "HEAD")
    found = changes(r, base, head)
    review = render.Review("HEAD~1", "HEAD", base, head, found, (), ())
    return found, [text for _, text in render.lines(review)]


def test_a_change_to_tests_and_benchmarks_only_changes_no_op_and_says_so(repo):
    _commit(repo, {"tests/test_ops.py": TEST.format(factor=3) + "\n\ndef test_more():\n    _double[(1,)](None)\n",
                   "benchmarks/bench_ops.py": "from mylib.ops import double\nprint(double)\n"}, "tests only")
    found, said = _review_lines(repo)
    assert found.ops == [] and found.changed == [] and found.added == []
    assert found.tests == [("benchmarks/bench_ops.py", Role.BENCHMARK), ("tests/test_ops.py", Role.TEST)]
    assert said[0].startswith("no op or Triton kernel changed") and "only tests or benchmark scripts did" in said[0]


def test_a_change_to_a_kernel_and_its_test_lists_the_op_alone(repo):
    _commit(repo, {"mylib/ops.py": LIB.format(factor=4), "tests/test_ops.py": TEST.format(factor=4)}, "kernel and test")
    found, said = _review_lines(repo)
    assert [o.op.name for o in found.ops] == ["double"]
    assert [a.key for a, _ in found.changed] == ["mylib.ops:_double"]   # not the test's own kernel
    assert any("tests/test_ops.py" in line and "not ops" in line for line in said)


CORPUS = Path(os.environ.get("KERNEL_AB_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")


@pytest.mark.slow
@pytest.mark.parametrize("bundle", ["liger-kernel-prs.bundle", "fla-prs.bundle"])
def test_no_corpus_pull_request_lists_a_test_or_benchmark_function_as_an_op(bundle, tmp_path):
    if not (CORPUS / bundle).is_file():
        pytest.skip(f"no corpus bundle at {CORPUS / bundle} (set KERNEL_AB_CORPUS)")
    subprocess.run(["git", "clone", "-q", str(CORPUS / bundle), str(tmp_path / "lib")], check=True)
    r = Repository(str(tmp_path / "lib"))
    tags = subprocess.run(["git", "-C", str(tmp_path / "lib"), "tag"], capture_output=True, text=True, check=True)
    prs = [t.removesuffix("_base") for t in tags.stdout.split() if t.endswith("_base")]
    seen_tests = 0
    for pr in prs:
        found = changes(r, r.commit(f"{pr}_base", "BASE"), r.commit(f"{pr}_head", "HEAD"))
        assert [o.path for o in found.ops if role(o.path) != Role.LIBRARY] == [], pr
        assert [a.path for a, _ in found.changed if role(a.path) != Role.LIBRARY] == [], pr
        seen_tests += len(found.tests)
    assert seen_tests >= 3   # each bundle has pull requests that change their tests
