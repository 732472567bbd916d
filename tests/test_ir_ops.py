"""The compiled code of op-level variants: a tiny library (`ptrlib`) at three commits, whose group-norm
kernel advances X_ptr and Y_ptr in its channel loop at the first, uses explicit offsets at the second, and
only changes a comment at the third. Its forward-only op cannot run a backward; its Function's backward
is torch code. Then the same-code decision on fixed records, and the corpus (Liger-Kernel PR 999)."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compare.model.headline import headline
from compare.model.results import IRKernelMatch, IRPair, IRPassNote, IRSection, IRStageDiff, PassStatus
from compare.model.same_code import same_code, same_pass_code
from compare.model.vocabulary import STAGES
from tests.fixed_report import fixed_report

ROOT = Path(__file__).resolve().parent.parent
SHAPE = "2,8,2,16"

KERNEL = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _gn_fwd(Y_ptr, X_ptr, W_ptr, B_ptr, hidden, channels_per_group, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    group = tl.program_id(1)
    X_ptr += (row * tl.num_programs(1) + group) * hidden
    Y_ptr += (row * tl.num_programs(1) + group) * hidden
    total = 0.0
    total_sq = 0.0
    for start in tl.range(0, hidden, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(X_ptr + offs, mask=offs < hidden, other=0.0)
        total += tl.sum(x)
        total_sq += tl.sum(x * x)
    mean = total / hidden
    rstd = tl.rsqrt(total_sq / hidden - mean * mean + eps)
    per_channel = hidden // channels_per_group
    for channel in tl.range(group * channels_per_group, (group + 1) * channels_per_group):
        w = tl.load(W_ptr + channel)
        b = tl.load(B_ptr + channel)
{channel_body}


def forward_only(X, num_channels, num_groups, W, B, eps):
    n = X.shape[0]
    Y = torch.empty_like(X)
    hidden = X[0].numel() // num_groups
    _gn_fwd[(n, num_groups)](Y, X.contiguous(), W, B, hidden, num_channels // num_groups, eps, BLOCK=64)
    return Y


class GroupNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, W, B, num_channels, num_groups, eps):
        ctx.save_for_backward(X, W, B)
        ctx.groups, ctx.eps = num_groups, eps
        return forward_only(X, num_channels, num_groups, W, B, eps)

    @staticmethod
    def backward(ctx, dY):
        X, W, B = ctx.saved_tensors
        with torch.enable_grad():
            x, w, b = (t.detach().requires_grad_() for t in (X, W, B))
            y = torch.nn.functional.group_norm(x, ctx.groups, w, b, ctx.eps)
            dx, dw, db = torch.autograd.grad(y, (x, w, b), dY)
        return dx, dw, db, None, None, None
'''
ADVANCED = '''\
        for start in range(0, per_channel, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < per_channel
            x = tl.load(X_ptr + offs, mask=mask, other=0.0)
            tl.store(Y_ptr + offs, (x - mean) * rstd * w + b, mask=mask)
        X_ptr += per_channel
        Y_ptr += per_channel'''
OFFSETS = '''\
        offset = (channel - group * channels_per_group) * per_channel{comment}
        for start in range(0, per_channel, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < per_channel
            x = tl.load(X_ptr + offset + offs, mask=mask, other=0.0)
            tl.store(Y_ptr + offset + offs, (x - mean) * rstd * w + b, mask=mask)'''


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """ptrlib at three commits: pointers advanced (HEAD~2), explicit offsets (HEAD~1), a comment added (HEAD)."""
    repo = tmp_path_factory.mktemp("ptrlib")
    _git(repo, "init", "-q")
    (repo / "ptrlib").mkdir()
    (repo / "ptrlib" / "__init__.py").write_text("")
    for body in (ADVANCED, OFFSETS.format(comment=""), OFFSETS.format(comment="  # within the group")):
        (repo / "ptrlib" / "gn.py").write_text(KERNEL.format(channel_body=body))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "step")
    return repo


def _compare(repo: Path, out: Path, a: str, b: str, shape: tuple[str, ...] = ("--shape", SHAPE)) -> dict:
    r = subprocess.run([sys.executable, "main.py", "compare", "--family", "group_norm", "--repo", str(repo),
                        "--check", "ir", *shape, "--quiet", "--json", str(out),
                        "--variant", f"base={a}", "--variant", f"head={b}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text())


def _ir_line(data: dict) -> str:
    return next(l["text"] for l in data["headline"]["pairs"][0]["lines"] if l["topic"] == "compiled code")


@pytest.fixture(scope="module")
def forward_only(repo, tmp_path_factory) -> dict:
    """The forward-only op at its first two commits: its backward cannot run (its output has no gradient)."""
    op = "ptrlib/gn.py::forward_only(X, num_channels, num_groups, W, B, eps)"
    return _compare(repo, tmp_path_factory.mktemp("fwd") / "r.json", f"git:HEAD~2:{op}", f"git:HEAD~1:{op}")


@pytest.mark.slow   # an end-to-end compare: the op run, then five stages compiled
def test_the_op_headline_names_the_pointers_the_channel_loop_carries_at_each_side(forward_only):
    line = _ir_line(forward_only)
    assert "_gn_fwd changed" in line, line
    assert ("the loop over `channel` (loop 2) carries 2 pointers (X_ptr, Y_ptr) from one iteration to the next in base, "
            "none in head") in line, line


@pytest.mark.slow   # an end-to-end compare: the op run, then five stages compiled
def test_an_op_whose_backward_fails_still_gets_its_forward_kernels_ir(forward_only):
    ir = forward_only["ir"]
    assert [(k["kernel"], k["status"]) for k in ir["kernels"]] == [("_gn_fwd", "changed")]
    assert {v["variant"]: v["status"] for v in ir["variants"]} == {"base:_gn_fwd": "ok", "head:_gn_fwd": "ok"}
    assert [(n["kernel"], n["status"], n["variant"]) for n in ir["passes"]] == [
        ("backward", "not found", "base"), ("backward", "not found", "head")]
    line = _ir_line(forward_only)
    assert "did not compile" not in line and "backward kernels of base, head not found (the backward failed: " in line


@pytest.mark.slow   # an end-to-end compare: the op run, then five stages compiled
def test_two_revisions_with_the_same_code_say_so_in_the_headline(repo, tmp_path):
    op = "ptrlib/gn.py::GroupNormFunction.apply"
    data = _compare(repo, tmp_path / "r.json", f"git:HEAD~1:{op}", f"git:HEAD:{op}")
    assert [(k["kernel"], k["status"]) for k in data["ir"]["kernels"]] == [("_gn_fwd", "identical")]
    where = "sm_90, compiled offline" if data["ir"]["mode"] == "offline" else "as launched on this GPU"
    assert _ir_line(data).startswith(f"compiled code: both sides run the same compiled code ({where}: _gn_fwd "
                                     "identical at every stage, from Triton's IR to the machine code)"), _ir_line(data)


# ---------------------------------------------------------------- the decision, on fixed records
def _section(changed: tuple[str, ...] = (), stages=STAGES, passes=()) -> IRSection:
    diffs = tuple(IRStageDiff(s, "x" if s in changed else "", 2 if s in changed else 0, 9, 3, 12) for s in stages)
    return IRSection("offline", "sm_90", "N2 C8 G2 S256", "float32", "", "", tuple(stages), (),
                     (IRPair("A", "B", diffs),), passes=passes)


def _timing(report) -> str:
    return next(l.text for l in headline(report).pairs[0].lines if l.topic == "timing")


def test_identical_code_at_every_stage_replaces_the_timing_verdict():
    report = dataclasses.replace(fixed_report(slower_ratio=1.03), ir=_section())
    assert same_code(report, "A", "B") is not None
    text = _timing(report)
    assert text.startswith("timing: no verdict: both sides run the same compiled code (sm_90, compiled offline: "
                           "forward kernel identical at"), text
    assert "slower" not in text


@pytest.mark.parametrize("section", [
    _section(changed=("sass",)),                          # the machine code differs
    _section(stages=("ttir", "ttgir", "llir", "ptx")),    # SASS not compared
    _section(passes=(IRPassNote("backward", PassStatus.NOT_COMPARED, why="the IR step failed"),)),
], ids=["sass-differs", "no-sass", "backward-not-compared"])
def test_the_timing_verdict_stays_where_the_same_code_is_not_established(section):
    report = dataclasses.replace(fixed_report(slower_ratio=1.03), ir=section)
    assert same_code(report, "A", "B") is None
    assert _timing(report).startswith("timing: forward: slower in 1 of 1 shape"), _timing(report)


def test_ops_with_identical_kernels_but_a_backward_not_found_are_not_the_same_code():
    ops = dataclasses.replace(_section(), pairs=(), kernels=(IRKernelMatch("_k", "A", "B", "identical"),))
    assert same_code(dataclasses.replace(fixed_report(), ir=ops), "A", "B") is not None
    missing = dataclasses.replace(ops, passes=(IRPassNote("backward", PassStatus.NOT_FOUND, "B", "RuntimeError: x"),))
    assert same_code(dataclasses.replace(fixed_report(), ir=missing), "A", "B") is None


def _two_passes(bwd_passes=("backward",), notes=(), timed_dtype="float32"):
    """Ops A and B whose forward kernel changed and whose backward kernel did not, each pass timed "slower"
    by 3%: the IR compiled at float32, the timing at `timed_dtype`."""
    base = fixed_report(slower_ratio=1.03)
    forward = dataclasses.replace(base.timing.cases[0], dtype=timed_dtype)
    backward = dataclasses.replace(forward, mode="backward")
    ops = dataclasses.replace(_section(), pairs=(), passes=notes, kernels=(
        IRKernelMatch("_fwd", "A", "B", "changed", ("sass",), ("forward",)),
        IRKernelMatch("_bwd", "A", "B", "identical", (), bwd_passes)))
    return dataclasses.replace(base, ir=ops, timing=dataclasses.replace(base.timing, cases=(forward, backward)))


def test_a_pass_whose_kernels_are_all_identical_gets_no_timing_verdict_and_trips_no_gate():
    from compare.model import gates, glance
    report = _two_passes()
    assert same_code(report, "A", "B") is None   # the forward kernel changed: not the whole op
    assert same_pass_code(report, "A", "B", "backward", "float32").kernels == ("_bwd",)
    assert same_pass_code(report, "A", "B", "forward", "float32") is None
    assert same_pass_code(report, "A", "B", "full", "float32") is None   # the full pass runs the changed one too
    text = _timing(report)
    assert text.startswith("timing: forward: slower in 1 of 1 shape (+3.0%); backward: no verdict (_bwd identical "
                           "at every stage: the same compiled code)"), text
    (gate,) = gates.decide(report, fail_if_slower_pct=2.0)
    assert gate.outcome == "failed" and len(gate.lines) == 1 and "forward" in gate.lines[0], gate.lines
    timed = {r.check: (r.verdict, r.where) for r in glance.rows(report) if r.variant == "B" and "timing" in r.check}
    assert timed == {"timing forward": ("slower", "1 of 1 shape"), "timing backward": ("no verdict",
                                                                                     "same compiled code")}


@pytest.mark.parametrize("report", [
    _two_passes(bwd_passes=()),                                   # which pass launched it: not recorded
    _two_passes(bwd_passes=("forward", "backward"), timed_dtype="bfloat16"),   # compiled at float32 only
    _two_passes(notes=(IRPassNote("backward", PassStatus.NOT_FOUND, "B", "RuntimeError: x"),)),
], ids=["passes-unknown", "other-dtype", "backward-not-found"])
def test_a_pass_keeps_its_timing_verdict_where_its_code_is_not_known_to_be_the_same(report):
    """Also Triton variants' passes (`_section`'s forward kernel pair, identical): judged when timed, by
    kernel and launcher, never from the compiled code alone (another launcher may launch another grid)."""
    from compare.model import gates
    assert same_pass_code(report, "A", "B", "backward", report.timing.cases[1].dtype) is None
    assert "backward: slower in 1 of 1 shape" in _timing(report), _timing(report)
    (gate,) = gates.decide(report, fail_if_slower_pct=2.0)
    assert any("backward" in line for line in gate.lines), gate.lines


def test_a_made_report_settles_the_same_code_pass_so_its_tables_agree_with_its_headline():
    from compare.model.same_code import settled
    from compare.model.states import TimingBasis
    from compare.render.timing_tables import timing_summary
    report = settled(_two_passes())
    forward, backward = (case.comparisons[0] for case in report.timing.cases)
    assert (forward.verdict, backward.verdict) == ("slower", "no difference beyond noise")
    assert backward.basis == TimingBasis.IDENTICAL_COMPILED_CODE and backward.ratio == 1.03   # measurement kept
    said = [text for _, text in timing_summary(report.timing)]
    assert any(t.startswith("timing backward: B vs A: no difference beyond noise in 1 of 1 shapes (identical "
                            "compiled code: measurement noise)") for t in said), said
    assert settled(_two_passes(bwd_passes=())) == _two_passes(bwd_passes=())   # not known: left as measured


def test_a_triton_variants_pass_is_never_settled_by_its_compiled_code_alone():
    note = IRPassNote("backward", PassStatus.NOT_COMPARED, why="the IR step failed")
    report = dataclasses.replace(fixed_report(slower_ratio=1.03), ir=_section(passes=(note,)))
    assert same_pass_code(report, "A", "B", "forward", "float32") is None   # its forward kernels: identical


def test_the_same_kernel_launched_on_another_grid_is_changed():
    from types import SimpleNamespace
    from compare.checks.ir.ops import OpKernels, match
    compiled = [("_k", SimpleNamespace(ok=True))]

    def status(grid_b):
        found = OpKernels({"A": compiled, "B": compiled}, {}, grids={"A": {"_k": ((128, 1, 1),)}, "B": {"_k": grid_b}})
        (m,), _ = match(found, "A", "B", lambda a, b: IRPair("A", "B", (IRStageDiff("sass", "", 0, 9, 3, 12),)))
        return m.status, m.changed_stages
    assert status(((128, 1, 1),)) == ("identical", ())
    assert status(((132, 1, 1),)) == ("changed", ("grid",))
    assert status(((),)) == ("identical", ())   # a grid not worked out: not called changed (docs/compiled-code.md)


# ---------------------------------------------------------------- the corpus: Liger-Kernel PR 999
def _corpus_bundle() -> Path:
    """A clone of the corpus bundle (KERNEL_AB_CORPUS or ../shared/corpus), made once per session."""
    corpus = Path(os.environ.get("KERNEL_AB_CORPUS") or ROOT.parent / "shared" / "corpus")
    bundle = corpus / "liger-kernel-prs.bundle"
    if not bundle.exists():
        pytest.skip(f"no corpus bundle at {bundle}")
    return bundle


@pytest.mark.slow   # an end-to-end compare: the op run, then five stages compiled
def test_gn999_names_the_pointers_its_base_advances_in_the_channel_loop(tmp_path):
    bundle = _corpus_bundle()
    clone = tmp_path / "liger"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    diff = subprocess.run(["git", "diff", "gn999_base", "gn999_head"], cwd=clone, capture_output=True,
                          text=True, check=True).stdout
    assert "-        X_ptr += hidden_size_per_channel" in diff and "-        Y_ptr += hidden_size_per_channel" in diff
    op = "src/liger_kernel/ops/group_norm.py::LigerGroupNormFunction.apply(X, W, B, num_channels, num_groups, eps)"
    data = _compare(clone, tmp_path / "r.json", f"git:gn999_base:{op}", f"git:gn999_head:{op}", shape=())  # preset
    line = _ir_line(data)
    assert ("_group_norm_forward_kernel changed (at every stage) [the loop over `channel_idx` (loop 2) carries 2 "
            "pointers (X_ptr, Y_ptr) from one iteration to the next in base, none in head") in line, line
    assert "_group_norm_backward_kernel identical" in line, line


def test_an_op_whose_forward_failed_has_its_kernels_not_found_never_a_failed_compile():
    from compare.model.results import IRVariant
    from compare.model.results_ir import NOT_RUN
    rows = (IRVariant("A:_k", "ok"), IRVariant("B", NOT_RUN, "the op failed when run to find its kernels: E: x"))
    section = dataclasses.replace(_section(), pairs=(), variants=rows)
    report = dataclasses.replace(fixed_report(), ir=section)
    line = next(l for l in headline(report).pairs[0].lines if l.topic == "compiled code")
    assert (line.level, line.text) == ("fail", "compiled code: the kernels of B not found: the op failed when run "
                                               "to find its kernels: E: x")
    assert same_code(report, "A", "B") is None


def test_pass_notes_and_carried_names_survive_report_json():
    from compare.model.results import IRCarried, decode, from_dict, to_dict
    note = IRPassNote("backward", PassStatus.NOT_FOUND, "B", "RuntimeError: x")
    report = dataclasses.replace(fixed_report(), ir=_section(passes=(note,)))
    data = json.loads(json.dumps(to_dict(report)))
    assert data["ir"]["passes"][0]["status"] == "not found"
    assert from_dict(data).ir.passes == (note,) and from_dict(data).ir.passes[0].status is PassStatus.NOT_FOUND
    data["ir"]["passes"][0]["status"] = "gone"
    with pytest.raises(ValueError, match="passes"):
        from_dict(data)
    assert decode(IRCarried, {"type": "!tt.ptr<f32>", "pointer": True}).name == ""   # older reports: no names
