"""The mapping lines a review suggests map: each one printed, pasted into a --mapping file, is read by kernel-ab's
own parser and checks (compare/review/mapping.py) without a refusal; a line those would refuse (a call naming
what no family's op takes) is not printed, and the line says what the family's op lacks instead."""
from __future__ import annotations

import re

import pytest

from compare.model.errors import UsageError
from compare.review import mapping, render
from compare.review.kernels import changes
from compare.review.revisions import Repository
from tests.review_repo import two_revisions

OPS = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _k(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * {factor}, mask=offs < n)


@triton.jit
def _lone(a):
    pass


def _launch(X):
    Y = torch.empty_like(X)
    _k[(1,)](X, Y, X.numel(), BLOCK=triton.next_power_of_2(X.numel()))
    return Y


def fused_add_rms_norm(X, R, W, eps, offset, casting_mode):
    return _launch(X + R), R


def scale(x, factor):
    return _launch(x) * factor


def norm_eps(X, eps):
    return _launch(X)
'''
WOULD_MAP = re.compile(r"would map it: (.*)$")


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    """(the changes, the review's lines for what no family maps): rendered from the mapping's plan, as the review
    renders what it leaves unmapped (the command replays ops that exist at BASE; their lines are the replay's)."""
    from variants import registry
    tmp = tmp_path_factory.mktemp("suggested")
    files = {"mylib/__init__.py": "", "pyproject.toml": '[project]\nname = "mylib"\n'}
    repo = two_revisions(tmp / "lib", {**files, "mylib/ops.py": OPS.format(factor="2.0")},
                         {"mylib/ops.py": OPS.format(factor="3.0").replace("    pass\n", "    a = a\n", 1)})
    r = Repository(str(repo))
    base, head = r.commit("v1", "BASE"), r.commit("v2", "HEAD")
    found = changes(r, base, head)
    targets, unmapped, _ = mapping.plan(found, {}, registry().families)
    assert targets == []
    said = [text for _, text in render.lines(render.Review("v1", "v2", base, head, found, (), tuple(unmapped)))]
    return found, said, tmp


def test_every_suggested_line_passes_the_mapping_files_own_parser_and_checks(review):
    from variants import registry
    found, said, tmp = review
    offered = [m.group(1) for text in said if (m := WOULD_MAP.search(text))]
    assert sorted(line.split(" = ")[0] for line in offered) == ['"mylib.ops:_lone"', '"mylib.ops:norm_eps"'], said
    for line in offered:
        path = tmp / f"{len(line)}.toml"
        path.write_text(f"{mapping.TABLE}\n{line}\n")
        mapping.plan(found, mapping.read_file(str(path)), registry().families)   # a refusal raises UsageError


@pytest.mark.parametrize("op, lacks", [
    ("fused_add_rms_norm", "rms_norm's op has no argument R (its arguments: X, W, eps, offset, casting_mode"),
    ("scale", "no registered family's op takes factor"),
])
def test_a_line_the_checks_would_refuse_is_not_printed_and_what_is_lacking_is_said(review, op, lacks):
    _, said, _ = review
    [line] = [text for text in said if text.startswith(f"mylib.ops:{op}: changed, not compared")]
    assert f"no line of {mapping.TABLE} maps it ({lacks}" in line and "would map it" not in line, line
    assert " = {" not in line


def test_the_line_refused_would_indeed_be_refused_by_a_mapping_file(review, tmp_path):
    from variants import registry
    found, _, _ = review
    [fused] = [u for u in mapping.plan(found, {}, registry().families)[1] if u.kernel.endswith(":fused_add_rms_norm")]
    (tmp_path / "m.toml").write_text(f"{mapping.TABLE}\n{fused.fix}\n")
    with pytest.raises(UsageError, match="names 'R', no argument of rms_norm's op"):
        mapping.plan(found, mapping.read_file(str(tmp_path / "m.toml")), registry().families)
