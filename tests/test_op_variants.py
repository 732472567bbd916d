"""Op-level variants (variants/ops.py): a library's op at two revisions (tests/op_package.py's `normlib`),
compared as its users call it, its spec mapping the family's arguments onto its own. Only the backward
kernel changes between HEAD~1 and HEAD, so the forward compiles identically and the backward does not;
forward outputs, dW and dB are bitwise equal, while dx may differ in its last bits, within tolerance."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

import main
from compare.checks import harness
from compare.runtime.backend import configure
from compare.checks.ir.launches import LaunchRecorder
from tests.op_package import make_repo
from variants import registry
from variants.external import ExternalKernels


@triton.jit
def scale(X_ptr, n, BLOCK: tl.constexpr):   # launched by test_a_kernel_launched_with_two_specializations...
    offsets = tl.arange(0, BLOCK)
    tl.store(X_ptr + offsets, tl.load(X_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


ROOT = Path(__file__).resolve().parent.parent
BACKEND = configure("auto")
APPLY = "normlib/norm.py::GroupNormFunction.apply"                 # takes the family's op arguments in order
TORCH_ORDER = "normlib/norm.py::group_norm(X, num_groups, W, B, eps)"   # torch's order: mapped
SHAPE = "2,8,2,16"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("ops"))


@pytest.fixture(scope="module")
def report(repo, tmp_path_factory) -> dict:
    """One run of every check: HEAD~1 through Function.apply, HEAD through the function in torch's order (mapped)."""
    out = tmp_path_factory.mktemp("ops-report") / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "--repo", str(repo), "--shape", SHAPE,
                        "--trials", "1", "--inputs", "normal", "--stage", "ttir", "--quiet", "--json", str(out),
                        "--variant", f"old=git:HEAD~1:{APPLY}", "--variant", f"new=git:HEAD:{TORCH_ORDER}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def _case(report: dict, direction: str) -> dict:
    return next(c for c in report["numerics"]["cases"] if c["direction"] == direction)


def test_ir_says_the_forward_kernel_is_identical_and_the_backward_kernel_changed(report):
    ir = report["ir"]
    assert [(k["kernel"], k["a"], k["b"], k["status"], k["changed_stages"]) for k in ir["kernels"]] == [
        ("gn_forward_kernel", "old", "new", "identical", []),
        ("gn_backward_kernel", "old", "new", "changed", ["ttir"])]
    assert [v["variant"] for v in ir["variants"]] == [
        "old:gn_forward_kernel", "old:gn_backward_kernel", "new:gn_forward_kernel", "new:gn_backward_kernel"]
    assert all(v["status"] == "ok" for v in ir["variants"])
    diffs = {(p["a"], p["b"]): p["stages"][0] for p in ir["pairs"]}
    assert diffs[("old:gn_forward_kernel", "new:gn_forward_kernel")]["changed_lines"] == 0
    assert diffs[("old:gn_backward_kernel", "new:gn_backward_kernel")]["changed_lines"] > 0


def test_numerics_run_at_op_level_forward_and_backward(report):
    assert {v["name"]: v["kind"] for v in report["variants"]} == {"old": "op", "new": "op"}
    forward = _case(report, "forward")
    status = {v["variant"]: v for v in forward["variants"]}
    assert status["old"]["status"] == status["new"]["status"] == "pass"
    assert [e["output"] for e in status["old"]["outputs"]] == ["y"]       # an op returns y, not the statistics
    assert any(line.startswith("op-level variants (old, new) are called as their users call them")
               for line in report["numerics"]["plan"])
    bits = {(p["a"], p["b"], p["output"]): p["n_diff"] for p in forward["pairs"]}
    assert bits[("old", "new", "y")] == 0                                  # the forward kernel did not change
    assert ("old", "torch", "mean") not in bits                            # only outputs both give are compared

    backward = _case(report, "backward")
    status = {v["variant"]: v for v in backward["variants"]}
    assert status["old"]["status"] == status["new"]["status"] == "pass", backward["variants"]
    assert [e["output"] for e in status["old"]["outputs"]] == ["dx", "dW", "dB"]
    bits = {(p["a"], p["b"], p["output"]): p["n_diff"] for p in backward["pairs"]}
    assert bits[("old", "new", "dW")] == 0 and bits[("old", "new", "dB")] == 0
    if not BACKEND.gpu:   # seen on the interpreter; compiled code may contract the two forms alike
        assert bits[("old", "new", "dx")] > 0         # the regrouped dx rounds differently somewhere


def test_timing_is_skipped_on_cpu_with_its_reason(report):
    if BACKEND.gpu:
        pytest.skip("this machine has a GPU: the op-level timing is checked by test_op_timing_on_the_gpu")
    assert report["timing"] is None
    assert any(s["check"] == "timing" and s["why"].startswith("needs a CUDA GPU") for s in report["skipped"])


def test_the_markdown_says_which_kernels_changed(report, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    r = subprocess.run([sys.executable, "main.py", "report", str(path), "--format", "markdown"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert ("ir kernels launched by new vs old, paired by name: gn_forward_kernel identical; "
            "gn_backward_kernel changed (TTIR)") in r.stdout
    assert "Kernels launched by the ops, paired by name" in r.stdout


def test_the_headline_says_which_launched_kernels_changed(report):
    pair = report["headline"]["pairs"][0]
    assert (pair["baseline"], pair["variant"]) == ("old", "new")
    assert [line["topic"] for line in pair["lines"]] == ["numerics", "timing", "compiled code"]
    text = pair["lines"][2]["text"]
    assert text.startswith("compiled code: the kernels each op launched, paired by name: gn_forward_kernel identical; "
                           "gn_backward_kernel changed (in Triton's IR)"), text
    assert "carries" not in text and "not found" not in text, text   # dx's terms reordered, nothing more


def _load(repo, *specs):
    kernels = ExternalKernels(repo)
    from variants.external import add_to
    reg, names, failed = add_to(registry(), kernels, specs, "group_norm")
    assert not failed, failed
    return kernels, reg, names


def test_the_argument_mapping_decides_what_each_parameter_gets(repo):
    """Weight and bias swapped in the mapping: the op is called that way, and its y is wrong."""
    from compare.checks import numerics
    kernels, reg, names = _load(repo, f"right=git:HEAD:{TORCH_ORDER}",
                                f"swapped=git:HEAD:{APPLY}(X, B, W, num_channels, num_groups, eps)",
                                "keywords=git:HEAD:normlib/norm.py::group_norm(X, num_groups, W, bias=B, eps=eps)")
    with kernels:
        family = reg.family("group_norm")
        shape = family.parse_shape(SHAPE).shapes[0]
        case = numerics.run_case(family, [reg.get(n) for n in names], shape, torch.float32, BACKEND, (0,))
    status = {v.variant: v.status for v in case.variants}
    assert status == {"right": "pass", "swapped": "fail", "keywords": "pass"}
    bits = {(p.a, p.b): p.n_diff for p in case.pairs}
    assert bits[("right", "keywords")] == 0 and bits[("right", "swapped")] > 0


def test_an_op_without_a_backward_is_reported_not_crashed(repo, tmp_path):
    from compare.checks import numerics
    kernels, reg, names = _load(repo, "fwd=git:HEAD:normlib/norm.py::forward_only(X, num_groups, W, B, eps)")
    with kernels:
        family = reg.family("group_norm")
        shape = family.parse_shape(SHAPE).shapes[0]
        v = reg.get("fwd")
        forward = numerics.run_case(family, [v], shape, torch.float32, BACKEND, (0,))
        backward = numerics.run_case(family, [v], shape, torch.float32, BACKEND, (0,), direction="backward")
    assert forward.variants[0].status == "pass"
    assert backward.variants[0].status == "error"
    # decided before autograd runs, from the result's state: a call failure, said as such
    from compare.model.results import Failure
    assert backward.variants[0].failure == Failure.CALL
    assert "without a gradient" in backward.variants[0].reasons[0], backward.variants[0].reasons


def test_the_op_passes_timing_calls_run_eagerly(repo):
    """The passes compare/checks/timing.py times (on the GPU; here eagerly, through the interpreter): backward
    reuses one forward's graph across calls, full runs both."""
    kernels, reg, names = _load(repo, f"op=git:HEAD:{TORCH_ORDER}")
    with kernels:
        family = reg.family("group_norm")
        shape = family.parse_shape(SHAPE).shapes[0]
        inputs = family.make_inputs(shape, torch.float32, BACKEND.device, 0)
        v = reg.get("op")
        for mode in ("forward", "backward", "full"):
            fn = harness.bench_call(family, v, inputs, shape, mode)
            assert fn.prefers_graph and callable(fn.capture_graph)
            with LaunchRecorder() as recorder:
                fn()
                fn()
            launched = [launch.name for launch in recorder.launches]
            expected = {"forward": ["gn_forward_kernel"], "backward": ["gn_backward_kernel"],
                        "full": ["gn_forward_kernel", "gn_backward_kernel"]}[mode]
            assert launched == expected, mode


def test_recorded_launches_carry_the_jits_specialization(repo):
    kernels, reg, _ = _load(repo, f"op=git:HEAD:{APPLY}")
    with kernels:
        family = reg.family("group_norm")
        shape = family.parse_shape("2,8,2,16").shapes[0]
        inputs = family.make_inputs(shape, torch.float32, BACKEND.device, 0)
        grads = family.alloc_grads(shape, torch.float32, BACKEND.device)
        with LaunchRecorder() as recorder:
            harness.run_backward(family, reg.get("op"), inputs, grads, shape)
            harness.run_backward(family, reg.get("op"), inputs, grads, shape)   # the same launches again: recorded once
    assert [launch.name for launch in recorder.launches] == ["gn_forward_kernel", "gn_backward_kernel"]
    spec = recorder.launches[0].specialization
    assert spec["signature"]["X_ptr"] == "*fp32" and spec["signature"]["Mean_ptr"] == "*fp32"
    # 4 channels per group, spatial 16 (divisible by 16), 2 groups, eps a float, BLOCK_SIZE = 64
    assert [spec["signature"][n] for n in ("channels_per_group", "spatial", "num_groups", "eps")] == \
        ["i32", "i32", "i32", "fp32"]
    assert spec["constexprs"] == {"BLOCK_SIZE": 64}
    assert "spatial" in spec["divisible_by_16"] and "channels_per_group" not in spec["divisible_by_16"]


def test_the_recorder_notes_which_pass_launched_each_kernel():
    x = torch.ones(32, device=BACKEND.device)
    recorder = LaunchRecorder()
    with recorder.during("forward"):
        scale[(1,)](x, 32, BLOCK=32)
    with recorder.during("backward"):
        scale[(1,)](x, 20, BLOCK=32, num_warps=2)
        scale[(1,)](x, 32, BLOCK=32)   # the forward's kernel again: listed once, noted in both passes
    assert [launch.name for launch in recorder.launches] == ["scale", "scale#2"]
    assert recorder.passes == {"forward": ["scale"], "backward": ["scale#2", "scale"]}


def test_the_recorder_notes_each_kernels_grid_a_grid_function_worked_out_from_its_arguments():
    x = torch.ones(64, device=BACKEND.device)
    asked = []

    def answers_once(meta):   # the launch's own call gets a grid; the recorder's, after it, an error
        asked.append(meta)
        if len(asked) > 1:
            raise RuntimeError("asked twice")
        return (1,)
    with LaunchRecorder() as recorder:
        scale[(2,)](x, 32, BLOCK=32)
        scale[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, 64, BLOCK=16)
        scale[answers_once](x, 64, BLOCK=16)
    assert recorder.grids == {"scale": [(2, 1, 1)], "scale#2": [(4, 1, 1), ()]}   # BLOCK 16: another specialization


def test_a_kernel_launched_with_two_specializations_is_recorded_twice():
    x = torch.ones(32, device=BACKEND.device)
    with LaunchRecorder() as recorder:
        scale[(1,)](x, 32, BLOCK=32)
        scale[(1,)](x, 32, BLOCK=32)
        scale[(1,)](x, 20, BLOCK=32, num_warps=2)
    assert [launch.name for launch in recorder.launches] == ["scale", "scale#2"]
    first, second = (launch.specialization for launch in recorder.launches)
    assert first["signature"] == {"X_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    assert "n" in first["divisible_by_16"] and "n" not in second["divisible_by_16"]
    assert second["options"] == {"num_warps": 2}
    assert float(x[0]) == 8.0 and float(x[31]) == 4.0   # the launches ran: recording changes nothing


@pytest.mark.parametrize("spec, expected", [
    (f"x=git:HEAD:{APPLY}(X, W, B, chans, num_groups, eps)",
     "'chans' is not an argument of the family's op; arguments: X, W, B, num_channels, num_groups, eps"),
    ("x=git:HEAD:normlib/norm.py::gn_forward_kernel(x)", "an argument list is for ops only"),
    ("x=git:HEAD:normlib/norm.py::tuned_kernel", "behind @triton.autotune or @triton.heuristics"),
    ("x=git:HEAD:normlib/norm.py::GroupNormFunction.nope", "normlib/norm.py::GroupNormFunction has no attribute nope"),
    ("x=git:HEAD:normlib/norm.py::group_norm(X, W)",
     "the call (X, W) does not fit the callable's parameters (x, num_groups, weight, bias, eps=1e-05): "
     "missing a required argument: 'weight'"),
])
def test_bad_op_spec_is_one_line_and_exit_2(repo, spec, expected, capsys):
    assert main.main(["compare", "--repo", str(repo), "--variant", spec, "--shape", SHAPE, "--trials", "1",
                      "--check", "numerics", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and expected in err and out == "", err


# ---------------------------------------------------------------- on the GPU (skipped without one)
@pytest.mark.gpu
def test_op_timing_on_the_gpu(repo, tmp_path):
    """Op-level forward, backward and full passes are replayed from CUDA graphs; the IR of the kernels
    the ops launched is read from the GPU run and paired by name."""
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "--repo", str(repo), "--shape", "16,320,32,64x64",
                        "--trials", "1", "--inputs", "normal", "--modes", "forward,backward,full", "--rounds", "12",
                        "--max-seconds", "2", "--quiet", "--json", str(out), "--variant", f"old=git:HEAD~1:{APPLY}",
                        "--variant", f"new=git:HEAD:{TORCH_ORDER}", "--variant", f"same=git:HEAD~1:{APPLY}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    cases = data["timing"]["cases"]
    assert sorted(c["mode"] for c in cases) == ["backward", "forward", "full"]
    for c in cases:
        assert c["graph"], (c["mode"], c["note"])
        assert all(v["status"] == "ok" for v in c["variants"]), c["variants"]
    ir = data["ir"]
    assert ir["mode"] == "launched"
    found = {(k["kernel"], k["b"]): k["status"] for k in ir["kernels"]}
    assert found == {("gn_forward_kernel", "new"): "identical", ("gn_backward_kernel", "new"): "changed",
                     ("gn_forward_kernel", "same"): "identical", ("gn_backward_kernel", "same"): "identical"}


@pytest.mark.gpu
def test_an_op_that_cannot_be_captured_is_timed_eagerly_and_the_note_says_what_that_costs(repo, tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "--repo", str(repo), "--shape", "16,320,32,64x64",
                        "--check", "timing", "--modes", "forward", "--rounds", "12", "--max-seconds", "2", "--quiet",
                        "--json", str(out), "--variant", f"old=git:HEAD~1:{APPLY}",
                        "--variant", "sync=git:HEAD:normlib/norm.py::synchronizing"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    case = json.loads(out.read_text())["timing"]["cases"][0]
    assert not case["graph"]
    assert case["note"].startswith("CUDA graph capture failed for sync (")
    assert "old: eager median" in case["note"] and "from a graph" in case["note"]
    assert all(v["status"] == "ok" for v in case["variants"])
