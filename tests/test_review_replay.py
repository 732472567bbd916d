"""Any op, no family: review records the calls the library's own tests make and replays them at BASE and HEAD.
The toy library (tests/replay_library.py) plants a refactor, a bug, a failure, an in-place write, an op no
test calls, and an op named like a layer norm that is none; the comparison of tensors is tested on its own."""
from __future__ import annotations

import dataclasses
import json
import math
import types

import pytest
import torch

from compare.checks.replay_diff import compare_named, tensor_diff
from compare.model.family_fit import family_fit
from compare.model.replay import (Agreement, CallFailure, Pass, ReplayedCall, ReplayedOp, ReplayVerdict, Side,
                                  TensorDiff, decide)
from compare.model.states import Failure, Status
from tests import replay_library


# ---------------------------------------------------------------- BASE's tensor against HEAD's
def test_the_same_bits_are_identical_and_a_negative_zero_is_not():
    x = torch.tensor([1.0, 0.0, float("nan")])
    assert tensor_diff("out", x, x.clone()).agreement == Agreement.IDENTICAL
    d = tensor_diff("out", x, torch.tensor([1.0, -0.0, float("nan")]))
    assert d.agreement == Agreement.WITHIN and d.differing == 1 and d.beyond == 0


def test_a_difference_beyond_tolerance_says_where_by_how_much_and_both_values():
    base = torch.zeros(3, 4)
    head = base.clone()
    head[2, 1] = 1e-3
    d = tensor_diff("out", base, head)
    assert d.agreement == Agreement.BEYOND and (d.differing, d.beyond) == (1, 1)
    assert d.where == (2, 1) and d.base_value == 0.0 and math.isclose(d.head_value, 1e-3, rel_tol=1e-6)
    assert math.isclose(d.max_abs, 1e-3, rel_tol=1e-6) and d.max_ulp > 1e6   # an ULP at zero is tiny


def test_one_ulp_in_bfloat16_is_within_tolerance_and_counted_in_ulps():
    base = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    head = torch.tensor([1.0078125, 2.0], dtype=torch.bfloat16)   # the next bfloat16 after 1.0
    d = tensor_diff("grad X", base, head)
    assert d.agreement == Agreement.WITHIN and d.max_ulp == 1.0 and d.where == (0,)


def test_a_nan_at_one_side_only_is_beyond_tolerance_and_counted():
    d = tensor_diff("out", torch.tensor([1.0, 2.0]), torch.tensor([1.0, float("nan")]))
    assert d.agreement == Agreement.BEYOND and d.nan_mismatch == 1


def test_other_shapes_dtypes_or_a_missing_tensor_are_not_comparable_and_say_why():
    assert "float32[2] at BASE, float32[3] at HEAD" in tensor_diff("out", torch.zeros(2), torch.zeros(3)).why
    assert tensor_diff("out", torch.zeros(2), torch.zeros(2, dtype=torch.float16)).agreement == Agreement.UNLIKE
    assert tensor_diff("out", torch.zeros(2), None).why == "a tensor at BASE only"
    found = compare_named({"out": torch.zeros(2), "n": 3}, {"out": torch.zeros(2), "n": 4})
    assert [(t.name, t.agreement) for t in found] == [("out", Agreement.IDENTICAL), ("n", Agreement.UNLIKE)]


def test_a_difference_no_larger_than_bases_own_run_to_run_spread_is_said_as_spread():
    base, again = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0 + 4e-6, 3.0])   # BASE run twice
    [small] = compare_named({"out": base}, {"out": torch.tensor([1.0, 2.0 - 4e-6, 3.0])}, {"out": again})
    assert small.agreement == Agreement.SPREAD and math.isclose(small.spread, 4e-6, rel_tol=5e-2)   # float32 near 2.0
    [large] = compare_named({"out": base}, {"out": torch.tensor([1.0, 2.0, 3.1])}, {"out": again})
    assert large.agreement == Agreement.BEYOND and large.spread > 0   # far beyond what BASE does to itself
    [steady] = compare_named({"out": base}, {"out": torch.tensor([1.0, 2.0 + 4e-6, 3.0])}, {"out": base.clone()})
    assert steady.agreement == Agreement.WITHIN and steady.spread == 0.0   # BASE is deterministic: the change's


def test_integer_outputs_must_match_exactly():
    d = tensor_diff("idx", torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]))
    assert d.agreement == Agreement.BEYOND and d.where == (2,) and (d.base_value, d.head_value) == (3.0, 4.0)


# ---------------------------------------------------------------- the op's verdict, decided once
def _call(*agreements, failures=()):
    return ReplayedCall(0, "x: float32[4]", "t.py::t", tuple(TensorDiff("out", "float32", (4,), a) for a in agreements),
                        tuple(failures))


def test_an_ops_verdict_is_its_worst_call_and_a_side_failing_alone_comes_first():
    assert decide(()) == ReplayVerdict.NO_CALLS
    assert decide((_call(Agreement.IDENTICAL), _call(Agreement.IDENTICAL))) == ReplayVerdict.IDENTICAL
    assert decide((_call(Agreement.IDENTICAL), _call(Agreement.WITHIN))) == ReplayVerdict.WITHIN
    assert decide((_call(Agreement.WITHIN), _call(Agreement.BEYOND))) == ReplayVerdict.BEYOND
    assert decide((_call(Agreement.IDENTICAL), _call(Agreement.SPREAD))) == ReplayVerdict.SPREAD
    assert decide((_call(Agreement.SPREAD), _call(Agreement.WITHIN))) == ReplayVerdict.WITHIN
    head_fails = _call(failures=(CallFailure(Side.HEAD, Pass.FORWARD, "ValueError: no"),))
    assert decide((_call(Agreement.BEYOND), head_fails)) == ReplayVerdict.HEAD_FAILS
    both = (CallFailure(Side.BASE, Pass.BACKWARD, "E"), CallFailure(Side.HEAD, Pass.BACKWARD, "E"))
    assert decide((_call(failures=both),)) == ReplayVerdict.BOTH_FAIL
    assert decide((_call(failures=both), _call(Agreement.IDENTICAL))) == ReplayVerdict.IDENTICAL
    op = ReplayedOp.made(op="m:f", label="f", tests=(), recorded_at=Side.HEAD, calls=(head_fails,))
    assert op.verdict == ReplayVerdict.HEAD_FAILS


def test_the_summary_says_how_each_side_fails_and_on_which_calls():
    from compare.review.replay_render import summary
    head = CallFailure(Side.HEAD, Pass.BACKWARD, "UnboundLocalError: NUM_SMS")
    base = CallFailure(Side.BASE, Pass.FORWARD, "AttributeError: None")
    calls = tuple(dataclasses.replace(_call(failures=(base, head) if i % 2 == 0 else (head,)), index=i)
                  for i in range(4))
    op = ReplayedOp.made(op="m:f", label="f", tests=("t.py",), recorded_at=Side.HEAD, calls=calls)
    level, line = summary(op)
    assert op.verdict == ReplayVerdict.HEAD_FAILS and level == "fail"
    assert line.endswith("its backward raises at HEAD: UnboundLocalError: NUM_SMS; "
                         "its forward raises at BASE on calls 1, 3: AttributeError: None")
    alone = ReplayedOp.made(op="m:f", label="f", tests=("t.py",), recorded_at=Side.HEAD, calls=calls[1:2])
    assert summary(alone)[1].endswith("its backward raises at HEAD: UnboundLocalError: NUM_SMS (BASE runs it)")


# ---------------------------------------------------------------- a family checked before it judges
def _report(*variants, kind="normal"):
    case = types.SimpleNamespace(direction="forward", input_kind=kind, shape="R4 H8", dtype="float32",
                                 variants=variants)
    return types.SimpleNamespace(numerics=types.SimpleNamespace(cases=(case,)))


def _numbers(status, failure=Failure.NONE, reasons=(), beyond=0):
    out = types.SimpleNamespace(output="y", numel=32, beyond_tol=beyond)
    return types.SimpleNamespace(variant="op.base", status=status, failure=failure, reasons=reasons, outputs=(out,))


def test_a_family_fits_when_base_passes_on_a_normal_input_and_not_when_it_raises_or_is_far_off():
    assert family_fit(_report(_numbers(Status.PASS)), "op.base").fits
    raised = family_fit(_report(_numbers(Status.ERROR, Failure.LIBRARY, ("AssertionError: W has 3",))), "op.base")
    assert not raised.fits and "AssertionError: W has 3" in raised.why
    off = family_fit(_report(_numbers(Status.FAIL, beyond=30)), "op.base")
    assert not off.fits and "30 of 32 elements of y" in off.why
    # a crash or a load failure says nothing of the fit; no normal input run leaves the family to judge
    assert family_fit(_report(_numbers(Status.ERROR, Failure.CRASH)), "op.base").fits
    assert family_fit(_report(_numbers(Status.FAIL, beyond=30), kind="huge"), "op.base").fits


# ---------------------------------------------------------------- the toy library reviewed as typed
@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    import subprocess
    import sys
    top = replay_library.make(tmp_path_factory.mktemp("toylib"))
    out = tmp_path_factory.mktemp("out")
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--quiet",
                        "--json", str(out / "review.json"), "--markdown", str(out / "review.md"),
                        "--fail-on-numerics"], capture_output=True, text=True, timeout=600,
                       cwd=replay_library.Path(__file__).resolve().parents[1])
    data = json.loads((out / "review.json").read_text())
    return r, {op["label"]: op for op in data["replayed"]}, (out / "review.md").read_text()


pytestmark_slow = pytest.mark.slow


@pytestmark_slow
def test_a_refactor_with_the_same_arithmetic_replays_to_identical_bits_outputs_and_gradients(reviewed):
    _, ops, _ = reviewed
    scale = ops["ScaleFunction"]
    assert scale["verdict"] == ReplayVerdict.IDENTICAL.value
    # two signatures per dtype: 50 and 130 (130 twice is one), then float64's, not float32's third
    assert [c["signature"] for c in scale["calls"]] == [
        "x: float32[50] grad, factor=3.0", "x: float32[130] grad, factor=3.0", "x: float64[40] grad, factor=3.0"]
    names = {t["name"] for c in scale["calls"] for t in c["tensors"]}
    assert names == {"out", "grad x"}
    assert scale["tests"] == ["tests/test_ops.py"]


@pytestmark_slow
def test_a_planted_bug_is_beyond_tolerance_at_its_element_and_fails_the_numerics_gate(reviewed):
    r, ops, md = reviewed
    shift = ops["shift"]
    assert shift["verdict"] == ReplayVerdict.BEYOND.value
    [worst] = [t for c in shift["calls"] for t in c["tensors"] if t["agreement"] != "identical bits"][:1]
    assert worst["where"] == [3] and worst["beyond"] == 1 and math.isclose(worst["max_abs"], 1e-3, rel_tol=1e-3)
    assert r.returncode == 1 and "gate failed: shift" in r.stderr
    assert "nothing here says which side is right" in md


@pytestmark_slow
def test_a_head_that_raises_is_heads_failure_and_the_input_written_into_is_compared(reviewed):
    _, ops, _ = reviewed
    assert ops["clip"]["verdict"] == ReplayVerdict.HEAD_FAILS.value
    [failure] = {json.dumps(f) for c in ops["clip"]["calls"] for f in c["failures"]}
    assert json.loads(failure) == {"side": "HEAD", "stage": "forward", "error": "ValueError: clip takes no more calls"}
    acc = ops["accumulate"]
    written = [t for c in acc["calls"] for t in c["tensors"] if t["name"] == "acc (written)"]
    assert written and written[0]["agreement"] == Agreement.BEYOND.value


@pytestmark_slow
def test_an_op_no_test_calls_is_not_compared_and_a_layer_norm_by_name_alone_is_replayed(reviewed):
    r, ops, _ = reviewed
    assert ops["lonely"]["verdict"] == ReplayVerdict.NO_CALLS.value
    assert "review could not judge: toylib.ops:lonely" in r.stderr
    poly = ops["PolyFunction"]
    assert poly["verdict"] == ReplayVerdict.IDENTICAL.value
    assert any(n.startswith("family layer_norm does not fit it: BASE's forward") for n in poly["notes"])
    assert not [label for label in ops if label.startswith("test")]   # the changed test file holds no op
    assert "1 test or benchmark file changed (calls of ops, not ops): tests/test_ops.py" in r.stdout


@pytestmark_slow
@pytest.mark.parametrize("flags", [("--check", "timing"), ("--aa", "--check", "timing")])
def test_a_family_matched_by_name_is_checked_to_fit_when_the_checks_asked_for_leave_out_numerics(tmp_path, flags):
    import subprocess
    import sys
    top = replay_library.make(tmp_path / "toylib")
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--quiet",
                        "--op", "PolyFunction", "--json", str(tmp_path / "r.json"), *flags], capture_output=True,
                       text=True, timeout=600, cwd=replay_library.Path(__file__).resolve().parents[1])
    data = json.loads((tmp_path / "r.json").read_text())
    assert [op["label"] for op in data["compared"]] == [], r.stderr   # not judged as a layer norm
    [poly] = [op for op in data["replayed"] if op["label"] == "PolyFunction"]
    assert any(n.startswith("family layer_norm does not fit it: BASE's forward") for n in poly["notes"])


def test_the_recorder_wraps_an_op_where_a_module_holds_its_apply_under_another_name(tmp_path):
    import sys
    (tmp_path / "aliaslib").mkdir()
    (tmp_path / "aliaslib" / "__init__.py").write_text("")
    (tmp_path / "aliaslib" / "ops.py").write_text(
        "import torch\n\nclass Twice(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        return x * 2\n\n    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n\n"
        "twice = Twice.apply\n")
    from compare.runtime.replay_worker import Recorder
    sys.path.insert(0, str(tmp_path))
    try:
        recorder = Recorder({"out": str(tmp_path), "calls": 6, "per_dtypes": 2, "bytes": 1 << 20})
        recorder.install([{"module": "aliaslib.ops", "name": "Twice.apply"}])
        import aliaslib.ops as ops
        ops.twice(torch.ones(3))   # through the alias a module made at import
        ops.Twice.apply(torch.ones(4))
        assert [c["signature"] for c in recorder.manifest["calls"]] == ["x: float32[3]", "x: float32[4]"]
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("aliaslib")]:
            del sys.modules[name]


@pytestmark_slow
def test_a_replayed_op_gets_its_compiled_code_compared_on_its_recorded_calls(reviewed):
    r, ops, md = reviewed
    shift = ops["shift"]["report"]
    assert shift["family"] == "recorded_shift" and [(k["kernel"], k["status"]) for k in shift["ir"]["kernels"]] == [
        ("_shift_kernel", "changed")]
    assert ops["shift"]["timed"].startswith("call 1 (x: float32[64]), its kernels compiled for sm_90 offline")
    # clip raises at HEAD, where its calls were recorded: nothing it returned to time
    assert ops["clip"]["report"] is None and "raised when recorded (ValueError: clip takes no more calls)" in \
        ops["clip"]["timed"]
    section = md.split("### `shift`", 1)[1].split("\n### ", 1)[0]
    assert "timing and compiled code, BASE against HEAD on its recorded calls" in section
    assert "_shift_kernel changed" in section


@pytestmark_slow
@pytest.mark.parametrize("act", ["import os; os._exit(3)", "import os; os.kill(os.getpid(), 11)"])
def test_a_replayed_op_that_ends_its_process_leaves_no_temporary_tree(tmp_path, act, monkeypatch):
    """clip ends the process at HEAD (its recording and its replay): clip fails there, the review comes out,
    and none of the recording's or the plays' folders is left in TMPDIR."""
    import os
    import subprocess
    import sys
    monkeypatch.setitem(replay_library.SIDES["after"], "clip_raise", f"{act}\n    ")
    top = tmp_path / "toylib"
    top.mkdir()
    replay_library.make(top)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "KERNEL_AB_ISOLATE"}, "TMPDIR": str(tmp)}
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--quiet",
                        "--json", str(tmp_path / "review.json")], capture_output=True, text=True, timeout=600,
                       env=env, cwd=replay_library.Path(__file__).resolve().parents[1])
    assert r.returncode == 0, r.stderr
    ops = {op["label"]: op for op in json.loads((tmp_path / "review.json").read_text())["replayed"]}
    assert ops["clip"]["verdict"] == "fails at HEAD only" and ops["ScaleFunction"]["verdict"] == "identical"
    assert list(tmp.iterdir()) == []   # no kernel-ab-run-*, -replay-*, -record-* left


_ABORTING_AT_EXIT = '''\
import os
import types
import weakref

import torch
import triton
import triton.language as tl

weakref.finalize(types.SimpleNamespace, os.abort)   # as the process ends, as a library's thread might


@triton.jit
def _double_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    tl.store(Y + offs, {body}, mask=offs < n)


def double(x):
    y = torch.empty_like(x)
    _double_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y
'''


@pytestmark_slow
def test_a_play_that_aborts_as_it_exits_after_every_call_keeps_its_results_and_says_when(tmp_path):
    import subprocess
    import sys
    tests = "import torch\nfrom abortlib.ops import double\n\n\ndef test_double():\n    assert double(torch.ones(100)).sum() == 200\n"
    top = replay_library.commit(tmp_path / "abortlib", {side: {
        "abortlib/__init__.py": "", "abortlib/ops.py": _ABORTING_AT_EXIT.format(body=body),
        "tests/test_ops.py": tests} for side, body in (("before", "x * 2"), ("after", "x + x"))})
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--quiet",
                        "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=600,
                       cwd=replay_library.Path(__file__).resolve().parents[1])
    [op] = json.loads((tmp_path / "r.json").read_text())["replayed"]
    assert op["verdict"] == ReplayVerdict.IDENTICAL.value, (op, r.stderr)
    ended = [n for n in op["notes"] if "the replaying process ended with exit code" in n]
    assert ended and all("after every call was played (as it exited)" in n for n in ended), op["notes"]
