"""The recorded family (variants/recorded.py): an op's recorded calls of the toy library (tests/replay_library.py)
made a family whose inputs are the recorded values; how far the timed call is grown (variants/recorded_growth.py);
and `record` + `compare --recorded` end to end, with the compiled code compared on the CPU (sm_90 offline)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests import replay_library
from variants import recorded_growth as growth
from variants.recorded_growth import Sized

ROOT = Path(__file__).resolve().parents[1]
GB = 1 << 30


# ---------------------------------------------------------------- how far the timed call is grown
def test_a_row_wise_call_is_grown_along_its_rows_to_at_least_256_mb():
    x, w = Sized("X", (4, 1024), 4), Sized("W", (1024,), 4)
    g = growth.plan([x, w], {"eps": 1e-6}, [Sized("out", (4, 1024), 4)], free_bytes=80 * GB)
    moved = (g.factor * 2 * x.bytes) + w.bytes
    assert g.grown == ("X",) and g.rows == 4 and moved >= growth.TARGET_BYTES > moved - 2 * x.bytes
    assert f"from 4 to {4 * g.factor} (x{g.factor})" in g.why


def test_no_gpu_or_a_call_already_large_keeps_the_recorded_size():
    big = Sized("X", (1 << 16, 1024), 4)
    assert growth.plan([big], {}, [], free_bytes=None).factor == 1
    said = growth.plan([big], {}, [], free_bytes=80 * GB)
    assert said.factor == 1 and "moves 256.0 MB already" in said.why


@pytest.mark.parametrize("tensors, scalars, outputs, why", [
    ([Sized("X", (8, 64), 4)], {"n_rows": 8}, [], "argument n_rows=8 says the size"),
    ([Sized("X", (8, 64), 4, contiguous=False)], {}, [], "X is strided"),
    ([Sized("X", (8, 64), 4), Sized("M", (64, 8), 4)], {}, [], "M [64, 8] also holds 8"),
    ([Sized("X", (8, 64), 4)], {}, [Sized("out", (64, 8), 4)], "output out [64, 8] holds 8 in another dimension"),
])
def test_growing_is_declined_where_it_would_change_what_the_op_does(tensors, scalars, outputs, why):
    g = growth.plan(tensors, scalars, outputs, free_bytes=80 * GB)
    assert g.factor == 1 and g.why.startswith("the recorded size, not grown: ") and why in g.why


def test_memory_stops_growing_short_of_the_target_and_says_so():
    x = Sized("X", (4, 1024), 4)
    g = growth.plan([x], {}, [Sized("out", (4, 1024), 4)], free_bytes=growth.PEAK_COPIES * 64 * 2**20)
    assert 1 < g.factor and g.factor * 2 * x.bytes <= 64 * 2**20 and "memory stops it short of 256.0 MB" in g.why
    assert growth.plan([x], {}, [], free_bytes=growth.PEAK_COPIES * x.bytes).factor == 1


# ---------------------------------------------------------------- a recording made a family
@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return replay_library.make(tmp_path_factory.mktemp("toylib"))


@pytest.fixture(scope="module")
def scale_family(library, tmp_path_factory):
    """ScaleFunction's calls recorded in this process (x of 50 and 130 elements, requiring grad), made a family."""
    from compare.runtime.replay_worker import Recorder
    from variants.recorded import RecordedFamily
    from variants.recorded_build import write_family
    out = tmp_path_factory.mktemp("recorded")
    sys.path.insert(0, str(library))
    try:
        recorder = Recorder({"out": str(out), "calls": 6, "per_dtypes": 2, "bytes": 1 << 20})
        recorder.install([{"module": "toylib.ops", "name": "ScaleFunction.apply"}])
        import toylib.ops as ops
        xs = [torch.randn(n, requires_grad=True) for n in (50, 130)]
        for x in xs:
            ops.scale(x, 3.0).sum().backward()
    finally:
        sys.path.remove(str(library))
        for name in [m for m in sys.modules if m.startswith("toylib")]:
            del sys.modules[name]
    built = write_family(out, "toylib.ops:ScaleFunction.apply", out / "family", "ScaleFunction", None)
    return RecordedFamily(built.folder / built.name), built, [x.detach() for x in xs]


def test_the_family_takes_the_recorded_calls_names_values_and_gradients(scale_family):
    family, built, xs = scale_family
    assert built.call.text() == "(x, factor)" and family.op_params == ("x", "factor") and family.op_grads == {"grad_x": "x"}
    assert [family.preset(p).shapes[0].call for p in ("call1", "call2", "smallest", "timed")] == [0, 1, 0, 1]
    inputs = family.make_inputs(family.preset("call2").shapes[0], torch.float32, "cpu", seed=5, kind="recorded")
    assert torch.equal(inputs["x"], xs[1]) and inputs["factor"] == 3.0 and not inputs["x"].requires_grad
    assert inputs.upstream == ("upstream_gradient",) and inputs["upstream_gradient"].shape == (130,)
    # forward: x read, out written; full adds the upstream gradient and x's gradient
    assert family.bytes_moved(family.preset("call2").shapes[0], torch.float32, "full") == 4 * 130 * 4
    with pytest.raises(ValueError, match="recorded in float32; ask for --dtype float32"):
        family.make_inputs(family.preset("call1").shapes[0], torch.float16, "cpu", 0, "recorded")


def test_a_grown_call_repeats_its_recorded_rows(scale_family, tmp_path):
    from variants.recorded import RecordedFamily
    from variants.recorded_build import write_family
    family, _, xs = scale_family
    # call 2 moves 1040 bytes (x read, out written): to move 3000 it is grown 3 times
    built = write_family(family.recording, "toylib.ops:ScaleFunction.apply", tmp_path, "ScaleFunction", 80 * GB,
                         target=3000)
    assert "call 2 (x: float32[130] grad, factor=3.0), grown along the leading dimension of x from 130 to 390" \
        in built.timed
    grown_family = RecordedFamily(built.folder / built.name)
    [shape] = grown_family.preset("timed").shapes
    grown = grown_family.make_inputs(shape, torch.float32, "cpu", 0, "recorded")
    assert shape.factor == 3 and grown["x"].shape == (390,) and torch.equal(grown["x"][260:], xs[1])
    assert grown_family.alloc_outputs(shape, torch.float32, "meta")["out"].shape == (390,)
    assert grown_family.bytes_moved(shape, torch.float32, "forward") == 3 * 1040


def test_a_call_one_side_cannot_run_is_left_out_and_the_others_keep_their_numbers(scale_family, tmp_path):
    from variants.recorded import RecordedFamily
    from variants.recorded_build import write_family
    family, _, _ = scale_family
    built = write_family(family.recording, "toylib.ops:ScaleFunction.apply", tmp_path, "ScaleFunction", None,
                         avoid={0: "its forward raises at BASE (ValueError: no)"})
    assert built.left_out == ("call 1 (x: float32[50] grad, factor=3.0): its forward raises at BASE (ValueError: no)",)
    assert built.timed.startswith("call 2 ") and built.smallest.startswith("call 2 ")
    kept = RecordedFamily(built.folder / built.name)
    assert "call1" not in kept.presets and kept.preset("call2").shapes[0].text == "call 2"
    assert kept.parse_shape("2").shapes[0].call == 0
    with pytest.raises(ValueError, match="a recorded call's number: 2"):
        kept.parse_shape("1")


def test_both_revisions_run_forward_and_backward_on_the_recorded_inputs_launching_their_kernel(library, scale_family):
    from compare.checks.harness import run_backward
    from compare.checks.ir.ops import discover
    from variants.external import ExternalKernels
    family, built, xs = scale_family
    shape = family.preset("smallest").shapes[0]
    with ExternalKernels(library) as loaded:
        for rev in ("HEAD~1", "HEAD"):
            op = loaded.load(f"at_{rev[-1]}=git:{rev}:toylib/ops.py::ScaleFunction.apply{built.call.text()}", family)
            inputs = family.make_inputs(shape, torch.float32, "cpu", 0, "recorded")
            grads = family.alloc_grads(shape, torch.float32, "cpu")
            run_backward(family, op, inputs, grads, shape)
            assert torch.equal(grads["grad_x"], 3.0 * inputs["upstream_gradient"])
            found = discover(op, family, shape, "float32", "cpu", warm=False)
            assert [launch.name for launch in found.launches] == ["_scale_kernel"] and not found.backward_failed


def test_an_op_loads_into_a_family_whose_smallest_call_is_not_float32(library, tmp_path):
    """The op's argument names are read on the default preset's call in that call's own dtype (bfloat16 here)."""
    from compare.runtime.replay_worker import Recorder
    from variants.external import ExternalKernels
    from variants.recorded import RecordedFamily
    from variants.recorded_build import write_family
    sys.path.insert(0, str(library))
    try:
        recorder = Recorder({"out": str(tmp_path), "calls": 6, "per_dtypes": 2, "bytes": 1 << 20})
        recorder.install([{"module": "toylib.ops", "name": "ScaleFunction.apply"}])
        import toylib.ops as ops
        for n, dtype in ((130, torch.float32), (20, torch.bfloat16)):
            ops.scale(torch.randn(n, dtype=dtype, requires_grad=True), 3.0).sum().backward()
    finally:
        sys.path.remove(str(library))
        for name in [m for m in sys.modules if m.startswith("toylib")]:
            del sys.modules[name]
    built = write_family(tmp_path, "toylib.ops:ScaleFunction.apply", tmp_path / "family", "ScaleFunction", None)
    family = RecordedFamily(built.folder / built.name)
    assert built.dtypes["smallest"] == "bfloat16" and family.preset(family.default_preset).shapes[0].call == 1
    with ExternalKernels(library) as loaded:
        op = loaded.load(f"head=git:HEAD:toylib/ops.py::ScaleFunction.apply{built.call.text()}", family)
        inputs = family.make_inputs(family.preset("smallest").shapes[0], torch.bfloat16, "cpu", 0, "recorded")
        assert op.name == "head" and inputs["x"].dtype == torch.bfloat16


# ---------------------------------------------------------------- record, then compare --recorded (CLI)
def _main(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_record_refuses_a_command_it_cannot_run_a_missing_command_and_a_bad_op(tmp_path):
    import argparse
    from compare.command_line.recorded import run_record
    from compare.model.errors import UsageError

    def record(op: str, *rest: str):
        return run_record(argparse.Namespace(op=op, out=None, calls=None, device=None, rest=list(rest)))
    with pytest.raises(UsageError, match="is not a Python program kernel-ab can record"):
        record("toylib.ops:shift", "--out", str(tmp_path / "r"), "--", "make", "test")
    with pytest.raises(UsageError, match="give the command after --"):
        record("toylib.ops:shift", "--out", str(tmp_path / "r"))
    with pytest.raises(UsageError, match="is not package.module:CALLABLE"):
        record("toylib/ops.py::shift", "--out", str(tmp_path / "r"), "--", "pytest")
    assert not (tmp_path / "r").exists()   # nothing is written before the command line is whole


@pytest.mark.slow   # a test file run under the recorder, then two ops' kernels compiled offline (five stages)
def test_record_then_compare_recorded_compiles_both_revisions_kernels(library, tmp_path):
    r = _main("record", "toylib.ops:shift", "--out", str(tmp_path / "rec"), "--", "pytest", "-q",
              "tests/test_ops.py", "-k", "shift", cwd=library)
    assert r.returncode == 0 and "recorded 2 calls of toylib.ops:shift" in r.stderr, r.stderr
    op = "toylib/ops.py::shift"
    r = _main("compare", "--recorded", str(tmp_path / "rec"), "--repo", str(library), "--json", str(tmp_path / "r.json"),
              "--variant", f"base=git:HEAD~1:{op}", "--variant", f"head=git:HEAD:{op}", "--quiet", cwd=library)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["family"] == "recorded_shift" and data["preset"] == "smallest"
    # HEAD's planted `+ 1e-3 * (offs == 3)` is new arithmetic in the one kernel
    assert [(k["kernel"], k["status"]) for k in data["ir"]["kernels"]] == [("_shift_kernel", "changed")]
    assert any(s["check"] == "timing" for s in data["skipped"])   # no GPU: timing skipped with compare's reason
