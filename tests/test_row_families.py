"""layer_norm and rms_norm on the CPU interpreter: every family listed; their variants pass against the
float64 reference, forward and backward; planted faults in a backward kernel and in a forward are caught;
backward kernels load with --variant by their parameters; the IR says which kernel differs."""
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import main
from compare.checks import numerics
from compare.comparison import pipeline
from compare.runtime.backend import configure
from compare.model.results import from_dict
from tests.planted import load_mutated
from variants import registry

BACKEND = configure("auto")
REG = registry()
LN, RMS = REG.family("layer_norm"), REG.family("rms_norm")
ROOT = Path(__file__).resolve().parent.parent


def run(family, names, shape, direction="forward", dtype=torch.float32, extra=()):
    variants = [REG.get(n, family.name) for n in names] + list(extra)
    return numerics.run_case(family, variants, shape, dtype, BACKEND, (0,), direction=direction, reference="torch")


def status(case):
    return {v.variant: (v.status, v.reasons) for v in case.variants}


def test_list_shows_every_family_found_the_row_families_among_them(capsys):
    """Every family the registry finds, whichever they are (a family added to variants/ edits no test)."""
    assert main.main(["list"]) == 0
    out = capsys.readouterr().out
    first = " ".join(out.split("\n\n")[0].split())   # the line wraps at the terminal's width
    assert first == f"families: {', '.join(REG.families)} (default group_norm)"
    assert {"group_norm", "layer_norm", "rms_norm"} <= set(REG.families)
    for name in REG.families:
        assert f"## family {name}:" in out


@pytest.mark.parametrize("shape", ["64,200", "3,1000"])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_layer_norm_variants_pass(shape, direction):
    shape = LN.parse_shape(shape).shapes[0]
    case = run(LN, ["bwd_pointer_mutation", "bwd_explicit_offset", "bwd_atomic", "torch"], shape, direction)
    assert all(s == "pass" for s, _ in status(case).values()), status(case)
    assert {e.output for e in case.variants[0].outputs} == ({"y", "mean", "rstd"} if direction == "forward" else {"dx", "dW", "dB"})
    persistent = [p for p in case.pairs if {p.a, p.b} == {"bwd_pointer_mutation", "bwd_explicit_offset"}]
    assert persistent and all(p.equal for p in persistent)   # same arithmetic, same order: same bits


@pytest.mark.parametrize("shape", ["64,200", "4,512,1.0,gemma", "4,96,0.5,none"])
@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_rms_norm_variants_pass_in_every_casting_mode(shape, direction, dtype):
    shape = RMS.parse_shape(shape).shapes[0]
    case = run(RMS, ["pointer_mutation", "explicit_offset", "torch"], shape, direction, dtype)
    if dtype == torch.float16:   # casting to float16 mid-way (llama, none) loses more than float16's tolerance,
        judged = [v for v in case.verdicts if v.a == "torch"]  # for torch as well: judge against torch instead
        assert len(judged) == 2 and all(v.as_accurate for v in judged), judged
    else:
        assert all(s == "pass" for s, _ in status(case).values()), status(case)
    assert all(p.equal for p in case.pairs if {p.a, p.b} == {"pointer_mutation", "explicit_offset"})


def test_rms_norm_reference_backward_is_float64_in_every_mode():
    """The reference backward runs the op on float64 inputs: no casting mode narrows it to float32
    (it did once: rms_norm_torch cast x to float32, and torch's own backward then matched it exactly)."""
    for text in ("6,40", "6,40,1.0,gemma"):
        shape = RMS.parse_shape(text).shapes[0]
        inputs = RMS.make_inputs(shape, torch.float32, "cpu", 1)
        ref = RMS.reference_backward(inputs, shape)
        x, w, dy = (t.double() for t in (inputs.x, inputs.weight, inputs.dy))
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + shape.eps)
        m = dy * (w + shape.offset)
        dx = rstd * m - rstd ** 3 * (m * x).mean(-1, keepdim=True) * x
        assert ref["dx"].dtype == torch.float64
        assert torch.allclose(ref["dx"], dx, rtol=1e-12, atol=1e-12)
        assert torch.allclose(ref["dW"], (dy * x * rstd).sum(0), rtol=1e-12, atol=1e-12)


def _mutant(tmp_path, module, name, old, new):
    return load_mutated(tmp_path, module, name, old, new, 1)[0]


def test_a_planted_fault_in_a_layer_norm_backward_kernel_is_caught(tmp_path):
    import variants.layer_norm.bwd_explicit_offset as good
    bad = _mutant(tmp_path, good, "no_db", "        db += db_row\n", "")
    variant = LN.triton_variant("no_db", "planted: dB never accumulated", str(tmp_path), backward=bad.layer_norm_backward)
    case = run(LN, ["bwd_explicit_offset"], LN.parse_shape("8,40").shapes[0], "backward", extra=[variant])
    result = {v.variant: v for v in case.variants}["no_db"]
    assert result.status == "fail" and any(r.startswith("dB:") for r in result.reasons), result.reasons
    assert status(case)["bwd_explicit_offset"][0] == "pass"


@pytest.mark.slow
def test_a_row_pointer_not_advanced_in_rms_norm_is_caught(tmp_path):
    import variants.rms_norm.pointer_mutation as good
    bad = _mutant(tmp_path, good, "stuck", "        RSTD_ptr += RSTD_row_stride\n", "")
    variant = RMS.triton_variant("stuck", "planted: rstd pointer never advanced", str(tmp_path),
                                 forward=good.rms_norm_forward, backward=bad.rms_norm_backward)
    # 400 rows: several rows per persistent program also on a GPU's 132 programs, so the stuck pointer matters
    case = run(RMS, ["pointer_mutation"], RMS.parse_shape("400,40").shapes[0], "backward", extra=[variant])
    assert {v.variant: v.status for v in case.variants} == {"pointer_mutation": "pass", "stuck": "fail"}


@pytest.mark.slow
def test_backward_kernels_load_with_variant_by_their_parameters():
    request = pipeline.Request(variants=("bwd_pointer_mutation",), family="layer_norm", checks=("backward", "ir"), inputs="normal",
                               trials=1, shape="16,64", external=(
                                   "mine=variants/layer_norm/bwd_explicit_offset.py::layer_norm_backward",))
    with pipeline.loaded(request, REG) as (request, reg, failed):
        assert failed == () and reg.get("mine", "layer_norm").own_kernels == ("backward",)
        report = pipeline.run(request, reg, BACKEND)
    assert {v.name: v.kernels for v in report.variants} == {"bwd_pointer_mutation": ("backward",), "mine": ("backward",)}
    assert all(v.status == "pass" for c in report.numerics.cases for v in c.variants)
    assert report.ir.kernel == "backward" and report.ir_kernels == ()
    assert any(str(s).startswith("ir forward: every variant runs the same forward kernel") for s in report.skipped)
    assert report.ir.pairs and not all(d.identical for d in report.ir.pairs[0].stages)


def test_two_kernels_of_one_file_make_one_variant_and_a_wrong_one_is_refused(capsys):
    request = pipeline.Request(variants=(), family="rms_norm", external=(
        "both=variants/rms_norm/pointer_mutation.py::rms_norm_forward,rms_norm_backward",))
    with pipeline.loaded(request, REG) as (_, reg, _):
        assert reg.get("both", "rms_norm").own_kernels == ("forward", "backward")
    args = ["compare", "--family", "layer_norm", "--check", "numerics", "--variant",
            "x=variants/rms_norm/pointer_mutation.py::rms_norm_backward"]
    assert main.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "parameters do not match layer_norm's forward launcher (nor the backward one)" in err[0]


def test_the_atomic_backward_is_compiled_as_its_own_launcher_runs_it():
    from compare.checks.ir.compile import recorded_launch
    shape = LN.parse_shape("4096,1024").shapes[0]
    args, kwargs = recorded_launch(LN, "backward", shape, "float32", "atomic_backward_call")
    assert kwargs["rows_per_program"] == 1
    _, persistent = recorded_launch(LN, "backward", shape, "float32")
    assert persistent["rows_per_program"] == 32       # 4096 rows over the 132 programs of an offline sm_90 compile
    assert persistent["num_warps"] == kwargs["num_warps"] == 4


def test_every_familys_kernels_take_the_parameters_its_launchers_pass():
    """--variant tells a forward kernel from a backward one by these lists: they must be what the
    family's own kernels (each variant's and the shared ones) take, wherever a family launcher launches
    them (a backward kernel with a launcher of its own that is not a family method takes that one's)."""
    checked = 0
    for family in REG.families.values():
        for v in REG.variants(family.name):
            if v.kind != "triton":
                continue
            other_geometry = v.forward_launcher is not None   # swiglu's flat: its launchers' parameters (test_swiglu)
            own_launcher = other_geometry or (v.backward_launcher is not None
                                              and getattr(v.backward_launcher, "__self__", None) is not family)
            for kernel, params in ((None if other_geometry else family.forward_kernel_of(v), family.forward_params),
                                   (None if own_launcher else family.backward_kernel_of(v), family.backward_params)):
                if kernel is not None:
                    checked += 1
                    assert tuple(inspect.signature(kernel.fn).parameters) == params, (family.name, v.name)
    assert checked > 20


@pytest.mark.slow
@pytest.mark.parametrize("family", ["layer_norm", "rms_norm"])
def test_compare_family_runs_numerics_from_the_command_line(family, tmp_path):
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "--family", family, "--check", "numerics",
                        "--check", "backward", "--inputs", "normal", "--trials", "1", "--quiet", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = from_dict(json.loads(out.read_text()))
    assert report.family == family and report.baseline == REG.family(family).default_pair[0]
    assert {c.direction for c in report.numerics.cases} == {"forward", "backward"}
    assert all(v.status == "pass" for c in report.numerics.cases for v in c.variants)
