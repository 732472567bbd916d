"""`review BASE HEAD` on a library repository built here (tests/review_repo.py): it compares the op of the
one kernel whose code changed, lists the renamed kernel, says nothing of the comment-only change, maps the
kernel by the repository's [tool.kernel-ab.kernels] table or else by parameter names, and a changed kernel
it cannot map is named with the line that would map it."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import main
from compare.review import mapping
from compare.review.kernels import Change, ChangedOp, Changes, What, changes, kernels_in
from compare.review.revisions import Repository
from compare.command_line import output_files as files
from tests.review_repo import RMS, RSTD, git, make_repo, two_revisions

SMALL = ["--shape", "4,64", "--check", "numerics", "--trials", "1", "--inputs", "normal", "--quiet"]


def _review(repo, tmp, *more: str) -> tuple[int, dict, str, str]:
    """(exit code, the --json review, the --markdown text, stderr) of an in-process review."""
    out = tmp / f"review-{time.monotonic_ns()}"
    (tmp / "last").write_text(str(out))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main.main(["review", "--repo", str(repo), *more, "--json", str(out) + ".json",
                          "--markdown", str(out) + ".md", *SMALL])
    read = (lambda p: p.read_text() if p.exists() else "")
    text = read(out.with_suffix(".json"))
    return code, (json.loads(text) if text else {}), read(out.with_suffix(".md")), err.getvalue()


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    """One review of v1..v2 per repository: with the kernel table, and without it."""
    tmp = tmp_path_factory.mktemp("review")
    found = {}
    for table in (True, False):
        repo = make_repo(tmp, table)
        started = time.monotonic()
        found[table] = (*_review(repo, tmp, "v1", "v2", "--fail-on-numerics"), time.monotonic() - started, repo, tmp)
    return found


@pytest.mark.parametrize("table", [True, False], ids=["table", "parameters"])
def test_review_compares_exactly_the_changed_kernels_op_at_both_revisions(reviews, table):
    code, data, _, _, _, repo, _ = reviews[table]
    assert code == 0
    [compared] = data["compared"]
    assert compared["target"]["callable"] == "RMSNormFunction.apply"
    assert compared["target"]["kernels"] == ["mylib.rms:_rms_norm_fwd"]
    assert compared["target"]["family"] == "rms_norm"
    variants = {v["name"]: v["origin"] for v in compared["report"]["variants"] if v["kind"] == "op"}
    assert sorted(variants) == ["RMSNormFunction.base", "RMSNormFunction.head"]
    assert variants["RMSNormFunction.base"].startswith("git:" + data["base"])
    assert variants["RMSNormFunction.head"].startswith("git:" + data["head"])
    assert data["base"] != data["head"]


@pytest.mark.parametrize("table", [True, False], ids=["table", "parameters"])
def test_review_says_how_the_family_was_matched(reviews, table):
    how = reviews[table][1]["compared"][0]["target"]["how"]
    if table:
        assert how.startswith("[tool.kernel-ab.kernels] maps mylib.rms:_rms_norm_fwd to rms_norm")
    else:
        assert how.startswith("matched by parameter names: RMSNormFunction.apply takes rms_norm's op arguments")


def test_review_lists_the_rename_and_ignores_the_comment_only_change(reviews):
    _, data, markdown, _, _, _, _ = reviews[False]
    texts = [line["text"] for line in data["lines"]]
    assert "renamed: mylib.act:_relu_kernel -> mylib.act:_relu_fwd_kernel (the same code; not compared)" in texts
    assert texts[0].startswith("1 op changed between v1") and "(1 changed kernel among what it runs)" in texts[0]
    assert "RMSNormFunction: kernel _rms_norm_fwd changed" in texts
    assert "_scale_kernel" not in json.dumps(data)
    assert "_scale_kernel" not in markdown and "mylib.scale" not in markdown
    assert ("**`RMSNormFunction`**: compared through the rms_norm family (preset `custom`, float32): "
            "`RMSNormFunction.head` against `RMSNormFunction.base`; kernel _rms_norm_fwd changed") in markdown


def test_review_of_one_op_on_the_cpu_takes_under_a_minute(reviews):
    assert reviews[False][4] < 60


def test_the_review_json_is_one_kernel_ab_replaces_without_force(reviews):
    _review(*reviews[False][5:], "v2", "v3", "--accept-unjudged")
    written = Path((reviews[False][6] / "last").read_text() + ".json")
    assert json.loads(written.read_text())["kernel_ab"] == "review" and files.ours(written)


def test_a_changed_kernel_no_family_fits_is_named_with_the_line_that_maps_it(reviews):
    repo, tmp = reviews[False][5:]
    code, data, _, err = _review(repo, tmp, "v2", "v3", "--fail-on-numerics")
    assert data["compared"] == [] and code == 1
    [line] = [x["text"] for x in data["lines"] if x["level"] == "warn"]
    assert line.startswith("mylib.scale:_scale_kernel: changed, not compared: neither it nor an op")
    assert line.endswith('"mylib.scale:_scale_kernel" = "<family>"')
    assert "kernel-ab: gate failed: review could not judge: mylib.scale:_scale_kernel changed" in err
    assert _review(repo, tmp, "v2", "v3", "--fail-on-numerics", "--accept-unjudged")[0] == 0


@pytest.mark.parametrize("args, says", [
    (["v1", "no-such-rev"], "HEAD 'no-such-rev': no such revision"),
    (["-x", "v2"], "BASE"),
])
def test_a_bad_revision_is_one_line_and_exit_2(reviews, capsys, args, says):
    repo = reviews[False][5]
    assert main.main(["review", "--repo", str(repo), *(["--"] if args[0].startswith("-") else []), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kernel-ab: error: ") and says in err[0]


def test_a_repo_that_is_no_git_repository_is_one_line_and_exit_2(tmp_path, capsys):
    assert main.main(["review", "--repo", str(tmp_path), "A", "B"]) == 2
    assert capsys.readouterr().err.strip() == (f"kernel-ab: error: --repo {tmp_path}: not a git repository; give "
                                               "the reviewed git repository's folder")


def test_kernels_are_found_under_autotune_and_compared_without_comments_or_docstrings():
    source = ("import triton\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\ndef k(X, n, B: tl.constexpr=4):\n"
              "    '''doc'''\n    x = 1  # one\n\n\ndef op(X, n):\n    k[(1,)](X, n)\n")
    [kernel] = kernels_in(source, "m.py", "m")
    assert (kernel.name, kernel.tuned, kernel.params, kernel.required) == ("k", True, ("X", "n", "B"), 2)
    assert [o.name for o in kernel.ops] == ["op"]
    other = source.replace("'''doc'''", "'''other doc'''").replace("# one", "# two").replace("x = 1", "x   =   1")
    assert kernels_in(other, "m.py", "m")[0].code == kernel.code
    assert kernels_in(source.replace("x = 1", "x = 2"), "m.py", "m")[0].code != kernel.code


def test_a_kernel_the_table_maps_whose_op_does_not_fit_the_family_says_why():
    from variants import registry
    [kernel] = kernels_in("@triton.jit\ndef k(a):\n    pass\n\ndef f(a):\n    k[(1,)](a)\n", "m.py", "m")
    [], [unmapped], [] = mapping.plan(_changed(kernel), {"m:k": "rms_norm"}, registry().families)
    assert unmapped.kernel == "m:f" and unmapped.why == ("[tool.kernel-ab.kernels] maps m:k to rms_norm, but f(a): no "
                                                         "rms_norm op argument matches a")
    assert unmapped.refused.startswith("rms_norm's op has no argument a (its arguments: X, W, eps")


def test_a_table_naming_an_unknown_family_is_said_with_the_known_ones():
    [kernel] = kernels_in("@triton.jit\ndef k(a):\n    pass\n", "m.py", "m")
    changed = [(kernel, kernel)]
    targets, [unmapped], [] = mapping.plan(Changes(changed), {"m:k": "nope"}, {"rms_norm": object()})
    assert targets == [] and unmapped.why.startswith("pyproject.toml maps m:k to 'nope', which is no registered family")


@pytest.mark.slow
@pytest.mark.parametrize("act, why", [("import os; os._exit(3)", "ended the process (exit code 3, no report)"),
                                      ("import os; os.kill(os.getpid(), 11)", "crashed the process (SIGSEGV)"),
                                      ("import time; time.sleep(600)", "did not return within 5 s")])
def test_an_op_that_ends_the_process_is_reported_failed_and_the_review_still_comes_out(tmp_path, act, why):
    """...and leaves none of the review's temporary trees (the revisions' files, the checks' folders) behind."""
    repo = make_repo(tmp_path, table=False)
    rms = repo / "mylib" / "rms.py"
    rms.write_text(rms.read_text().replace("        X = X.contiguous()\n", f"        {act}\n", 1))
    git(repo, "commit", "-q", "-am", "the op ends the process")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "KERNEL_AB_ISOLATE"}, "TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "main.py", "review", "--repo", str(repo), "v1", "HEAD", *SMALL,
                           "--variant-timeout", "5", "--json", str(tmp_path / "r.json")], capture_output=True,
                          text=True, env=env, cwd=Path(main.__file__).parent, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"variant RMSNormFunction.head {why}" in done.stderr
    [compared] = json.loads((tmp_path / "r.json").read_text())["compared"]
    status = {v["name"]: v["status"] for v in compared["report"]["variants"]}
    assert status["RMSNormFunction.head"] == "failed" and status["RMSNormFunction.base"] == "ok"
    assert list(tmp.iterdir()) == []   # no kernel-ab-run-*, -byok-*, -ir-*, -status-* left


@pytest.mark.parametrize("text, says", [
    ("[tool.kernel-ab.kernels\n", "pyproject.toml is not TOML"),
    ('[tool.kernel-ab.kernels]\n"m:k" = 3\n', 'must map "package.module:name" to a family\'s name'),
    ('[tool.kernel-ab.kernels]\n"k" = "rms_norm"\n', 'must map "package.module:name"'),
])
def test_a_kernel_table_that_is_not_strings_keyed_module_colon_name_is_refused(text, says):
    with pytest.raises(ValueError, match=says.replace("(", "\\(")):
        mapping.read_table(text)


def test_added_removed_and_unparsable_kernels_are_told_apart(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("@triton.jit\ndef gone(x):\n    return x\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "one")
    (tmp_path / "a.py").write_text("@triton.jit\ndef new(x):\n    return x + 1\n")
    (tmp_path / "b.py").write_text("@triton.jit\ndef broken(:\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "two")
    repo = Repository(str(tmp_path))
    found = changes(repo, repo.commit("HEAD~1", "BASE"), repo.commit("HEAD", "HEAD"))
    assert [k.key for k in found.added] == ["a:new"] and [k.key for k in found.removed] == ["a:gone"]
    assert found.changed == [] and found.renamed == []
    assert len(found.unreadable) == 1 and found.unreadable[0].startswith("b.py at ")


def _changed(kernel) -> Changes:
    """`kernel` changed, and each op launching it (nearest first) with it: what changes() finds for an op."""
    ops = [ChangedOp(kernel.path, kernel.module, o, o, (kernel.key,), (What(Change.KERNEL, kernel.name),))
           for o in kernel.ops]
    return Changes([(kernel, kernel)], ops=ops)


def _rms_kernel(source: str = RMS):
    [kernel] = kernels_in(source.replace("{rstd}", RSTD["after"]), "mylib/rms.py", "mylib.rms")
    return _changed(kernel)


def test_a_table_line_naming_an_op_compares_that_op():
    from variants import registry
    changed = _rms_kernel(RMS.replace("def rms_norm(x, weight, eps=1e-6)", "def rms_norm(X, W, eps, offset, casting_mode)"))
    [target], [], [other] = mapping.plan(changed, {"mylib.rms:rms_norm": "rms_norm"}, registry().families)
    assert target.callable == "rms_norm" and target.how.startswith("[tool.kernel-ab.kernels] maps mylib.rms:rms_norm")
    assert (other.op, other.through) == ("mylib.rms:RMSNormFunction", ("mylib.rms:rms_norm",))
    [nearest], [], [wrapper] = mapping.plan(changed, {}, registry().families)
    assert nearest.callable == "RMSNormFunction.apply"   # without the line: the op launching it directly
    assert (wrapper.op, wrapper.through) == ("mylib.rms:rms_norm", ("mylib.rms:RMSNormFunction",))


def test_an_op_taking_the_family_arguments_in_its_own_order_is_called_in_that_order():
    from variants import registry
    changed = _rms_kernel(RMS.replace("def forward(ctx, X, W, eps, offset, casting_mode)",
                                      "def forward(ctx, W, X, eps, offset, casting_mode)"))
    [target], [], [_wrapper] = mapping.plan(changed, {}, registry().families)
    assert target.call.names == ("W", "X", "eps", "offset", "casting_mode")
    assert target.spec("n.head", "abc") == "n.head=git:abc:mylib/rms.py::RMSNormFunction.apply(W, X, eps, offset, casting_mode)"
    assert "in its own order" in target.how


def test_on_a_gpu_review_takes_each_familys_gpu_preset_unless_told():
    """No toy launch-bound shapes timed on a GPU unless asked for; the CPU keeps the small default."""
    import argparse
    from compare.review.command import _preset
    from compare.runtime.backend import Backend
    from variants import registry
    gpu, cpu = Backend("cuda", False, ""), Backend("cpu", True, "")
    for family in registry().families.values():
        assert family.gpu_preset in family.presets and family.gpu_preset != family.default_preset
        asked = argparse.Namespace(preset=None, shape=None)
        assert _preset(asked, family, gpu) == family.gpu_preset
        assert _preset(asked, family, cpu) is None
        assert _preset(argparse.Namespace(preset="edge", shape=None), family, gpu) == "edge"
        assert _preset(argparse.Namespace(preset=None, shape="4,64"), family, gpu) is None


def _refused_review(tmp_path, capsys, monkeypatch, *more: str) -> str:
    """The one error line of a review whose outputs are refused (exit 2), and no comparison started."""
    from compare.review import command

    def no_comparison(*_, **__):
        raise AssertionError("a comparison ran before the outputs were checked")
    monkeypatch.setattr(command, "_compare", no_comparison)
    repo = make_repo(tmp_path, False)
    assert main.main(["review", "--repo", str(repo), "v1", "v2", *SMALL, *more]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("flag, name", [("--json", "notes.json"), ("--markdown", "notes.md"), ("--out", "report.md")])
def test_review_refuses_to_replace_a_file_kernel_ab_did_not_write(tmp_path, capsys, monkeypatch, flag, name):
    (tmp_path / name).write_text('{"mine": 1}\n' if name.endswith(".json") else "my notes\n")
    before = (tmp_path / name).read_text()
    where = tmp_path if flag == "--out" else tmp_path / name
    err = _refused_review(tmp_path, capsys, monkeypatch, flag, str(where))
    label = f"--out {tmp_path}" if flag == "--out" else flag
    assert err == (f"kernel-ab: error: {label}: {tmp_path / name} holds a file kernel-ab did not write; give another "
                   f"{'folder' if flag == '--out' else 'path'}, or --force to replace it\n")
    assert (tmp_path / name).read_text() == before


def test_review_refuses_two_outputs_writing_one_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "o").mkdir()
    err = _refused_review(tmp_path, capsys, monkeypatch, "--out", str(tmp_path / "o"),
                          "--markdown", str(tmp_path / "o" / "report.md"))
    assert "--markdown and --out" in err and "both write" in err


def test_review_with_force_may_replace_a_foreign_file_and_op_folders_are_checked_too(tmp_path):
    import argparse
    from compare.review import render
    from compare.model.errors import UsageError
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "report.json").write_text("[1]\n")
    args = argparse.Namespace(json=None, markdown=None, out=str(tmp_path), force=False)
    render.check_outputs(args)   # the review's own report.md is not there yet: nothing to refuse
    with pytest.raises(UsageError, match=r"--out .*/op: .*/op/report.json holds a file kernel-ab did not write"):
        render.check_outputs(args, ["other", "op"])
    (tmp_path / "report.md").write_text("my notes\n")
    with pytest.raises(UsageError, match=r"report.md holds a file kernel-ab did not write"):
        render.check_outputs(args)
    render.check_outputs(argparse.Namespace(**{**vars(args), "force": True}), ["other", "op"])


def test_a_launcher_only_change_is_said_as_one():
    from compare.review.render import changed_text
    launch = (What(Change.KERNEL_ADDED, "_k_tiled"), What(Change.LAUNCH, "_k_tiled", "launched"),
              What(Change.CONSTANT, "_TILE", "added"))
    assert changed_text(launch) == ("launcher only, no launched kernel's code changed; kernel _k_tiled added; "
                                    "launch of _k_tiled: launched; constant _TILE added")
    assert changed_text((What(Change.KERNEL, "_k"), What(Change.LAUNCH, "_k", "num_warps"))) == \
        "kernel _k changed; launch of _k: num_warps"


def test_the_terminal_gives_the_reviews_summary_before_each_ops_report(reviews, capsys):
    repo, tmp = reviews[False][5:]
    out = tmp / "terminal"
    code = main.main(["review", "--repo", str(repo), "v1", "v2", "--json", str(out) + ".json", *SMALL])
    text = capsys.readouterr().out
    assert code == 0
    summary, op_report = text.index("kernel-ab review of v1..v2"), text.index("review: RMSNormFunction")
    assert summary < op_report and text.index("1 op changed between v1") < op_report
    assert "matched by parameter names: RMSNormFunction.apply" in " ".join(text.split())   # the title whole


ROWS = '''

def rms_rows(rows, gain, fudge):
    out = torch.empty_like(rows)
    rstd = torch.empty(rows.shape[0], dtype=torch.float32, device=rows.device)
    _rms_norm_fwd[(rows.shape[0],)](rows, out, gain, rstd, rows.shape[1], fudge, 0.0,
                                    BLOCK_SIZE=triton.next_power_of_2(rows.shape[1]))
    return out
'''


def test_an_op_whose_changed_kernel_another_op_compares_has_a_line_naming_that_op_in_every_output(tmp_path):
    """rms_rows launches the changed kernel RMSNormFunction launches, and no family fits its parameters:
    compared through RMSNormFunction, it gets a line of its own, and the count of ops matches the op lines."""
    source = {state: {"mylib/__init__.py": "", "mylib/rms.py": RMS.replace("{rstd}", RSTD[state]) + ROWS}
              for state in ("before", "after")}
    repo = two_revisions(tmp_path / "rows", source["before"], source["after"])
    out, terminal = tmp_path / "r", io.StringIO()
    with contextlib.redirect_stdout(terminal), contextlib.redirect_stderr(io.StringIO()):
        code = main.main(["review", "--repo", str(repo), "v1", "v2", "--json", f"{out}.json", "--markdown", f"{out}.md",
                          *SMALL, "--fail-on-numerics"])
    data, markdown = json.loads(Path(f"{out}.json").read_text()), Path(f"{out}.md").read_text()
    line = ("mylib.rms:rms_rows: not compared on its own: what changed in it (kernel _rms_norm_fwd changed) is "
            "compared through mylib.rms:RMSNormFunction")
    texts = [x["text"] for x in data["lines"]]
    assert code == 0   # no gate fails or goes unjudged for it: RMSNormFunction's comparison judges the kernel
    assert line in texts and f"- {line}\n" in markdown and line in " ".join(terminal.getvalue().split())
    assert data["judged_through"] == [{"op": "mylib.rms:rms_rows", "what": [{"kind": "kernel", "name": "_rms_norm_fwd",
                                                                              "detail": ""}],
                                       "through": ["mylib.rms:RMSNormFunction"]}]
    ops = changes(Repository(str(repo)), *(Repository(str(repo)).commit(r, r) for r in ("v1", "v2"))).ops
    names = {name: op for op in ops for name in (op.op.name.split(".")[0], mapping.op_key(op))}
    said = [names[t.split(": ")[0]] for t in texts if t.split(": ")[0] in names]
    assert texts[0].startswith(f"{len(ops)} ops changed") and sorted(map(id, said)) == sorted(map(id, ops))


def test_an_op_judged_through_one_that_was_not_compared_says_so_and_adds_no_unjudged_change():
    from compare.review import render
    from compare.review.command import Compared
    target = mapping.Target("mylib/rms.py", "mylib.rms", "RMSNormFunction.apply", None, "rms_norm", "by the test",
                            ("mylib.rms:_k",), (What(Change.KERNEL, "_k"),))
    judged = mapping.JudgedThrough("mylib.rms:rms_rows", target.what, (target.key,))
    review = render.Review("v1", "v2", "a" * 40, "b" * 40, Changes(), (Compared(target, "RMSNormFunction", None, "no"),),
                           (), judged_through=(judged,))
    assert ("mylib.rms:rms_rows: not compared on its own: what changed in it (kernel _k changed) is left to "
            "mylib.rms:RMSNormFunction, not compared either (see its line)") in [text for _, text in render.lines(review)]
    assert render.unjudged(review) == ["mylib.rms:_k changed and could not be compared"]   # RMSNormFunction's alone


def test_op_naming_an_op_judged_through_another_compares_that_other(tmp_path):
    """--op rms_rows: rms_rows is judged through RMSNormFunction's comparison, so that comparison runs (not
    'no changed op of this review is named so', and nothing left out as not named)."""
    source = {state: {"mylib/__init__.py": "", "mylib/rms.py": RMS.replace("{rstd}", RSTD[state]) + ROWS}
              for state in ("before", "after")}
    repo = two_revisions(tmp_path / "rows", source["before"], source["after"])
    out = tmp_path / "r.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main.main(["review", "--repo", str(repo), "v1", "v2", "--op", "rms_rows", "--json", str(out), *SMALL])
    data = json.loads(out.read_text())
    assert code == 0 and data["left_out"] == []
    assert [(c["target"]["module"], c["target"]["callable"], c["report"] is not None) for c in data["compared"]] == \
        [("mylib.rms", "RMSNormFunction.apply", True)], data["compared"]
