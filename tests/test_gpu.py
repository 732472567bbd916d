"""On a CUDA GPU: compiled kernels, inductor and the timing machinery (skipped without a GPU)."""
import dataclasses

import pytest
import torch

from compare.checks import harness, numerics, timing
from compare.runtime.backend import configure
from variants import registry
from variants.group_norm import FAMILY, Shape

pytestmark = pytest.mark.gpu
BACKEND = configure("auto")


def test_every_variant_passes_compiled_on_the_gpu():
    reg = registry()
    names = ["pointer_mutation", "explicit_offset", "explicit_offset_range", "pointer_mutation_tlrange", "flat",
             "torch", "inductor"]
    for shape in (Shape(4, 64, 16, (96,)), Shape(2, 2, 1, (300, 300))):
        case = numerics.run_case(FAMILY, [reg.get(n) for n in names], shape, torch.float32, BACKEND, (0, 1))
        for v in case.variants:
            assert v.status == "pass", (shape.label, v.variant, v.reasons)


def test_timing_keeps_every_sample_and_compares_with_the_baseline():
    reg = registry()
    shape = Shape(8, 64, 16, (512,))
    inputs = FAMILY.make_inputs(shape, torch.float32, "cuda", 0)
    calls = {n: harness.bench_call(FAMILY, reg.get(n), inputs, shape, "forward")
             for n in ("pointer_mutation", "explicit_offset")}
    config = timing.TimingConfig(rounds=12, min_rounds=12, calls_per_round=3, max_seconds=2, warmup_ms=5)
    case = timing.time_case(calls, FAMILY.bytes_moved(shape, torch.float32, "forward"), 4000.0, shape.label,
                            "forward", config)
    assert [v.variant for v in case.variants] == ["pointer_mutation", "explicit_offset"]
    for v in case.variants:
        assert v.status == "ok" and v.rounds == 12 and len(v.samples_ms) == 36
        assert all(s > 0 for s in v.samples_ms) and v.p20_ms <= v.median_ms <= v.p80_ms
    (c,) = case.comparisons
    assert c.ci_low <= c.ratio <= c.ci_high and 0 < c.p_value <= 1


def test_a_crashing_variant_is_reported_and_the_rest_timed():
    reg = registry()
    shape = Shape(2, 8, 2, (64,))
    inputs = FAMILY.make_inputs(shape, torch.float32, "cuda", 0)

    def boom():
        raise RuntimeError("planted crash")
    calls = {"explicit_offset": harness.bench_call(FAMILY, reg.get("explicit_offset"), inputs, shape, "forward"),
             "boom": boom}
    case = timing.time_case(calls, 1, 1.0, shape.label, "forward",
                            timing.TimingConfig(rounds=3, min_rounds=3, calls_per_round=1, warmup_ms=1))
    assert [v.status for v in case.variants] == ["ok", "error"]
    assert "planted crash" in case.variants[1].reason
    assert case.comparisons[0].verdict == "n/a"


def test_a_variant_not_for_the_shape_is_not_run_and_says_why_and_the_rest_are_timed():
    reg = registry()
    shape = Shape(2, 8, 2, (64,))   # 256 elements a group: one program holds it, nothing to read again
    inputs = FAMILY.make_inputs(shape, torch.float32, "cuda", 0)
    calls = {n: harness.bench_call(FAMILY, reg.get(n), inputs, shape, "forward")
             for n in ("explicit_offset", "single_read_coop_reread")}
    case = timing.time_case(calls, 1, 1.0, shape.label, "forward",
                            timing.TimingConfig(rounds=3, min_rounds=3, calls_per_round=1, warmup_ms=1))
    assert [v.status for v in case.variants] == ["ok", "not_run"]
    assert case.variants[1].reason.startswith("not for this shape: slices are read again only")
    assert case.comparisons[0].verdict == "n/a" and case.comparisons[0].reason == "single_read_coop_reread not run"


def test_timing_every_dtype_and_mode_through_the_pipeline():
    from compare.comparison import pipeline
    request = pipeline.Request(("pointer_mutation", "explicit_offset", "torch"), shape="4,64,16,256",
                               dtype="float32,float16", checks=("timing",),
                               timing=timing.TimingConfig(modes=("forward", "backward", "full"), rounds=10,
                                                          min_rounds=10, calls_per_round=2, warmup_ms=5))
    report = pipeline.run(request, registry(), BACKEND)
    assert [(c.dtype, c.mode) for c in report.timing.cases] == [
        (d, m) for d in ("float32", "float16") for m in ("forward", "backward", "full")]
    for case in report.timing.cases:
        assert [v.status for v in case.variants] == ["ok", "ok", "ok"], [v.reason for v in case.variants]
        assert len(case.comparisons) == 2
        # the A/A control: the baseline again, timed in the same rounds over every buffer placement
        assert case.control is not None and case.control.variant == "pointer_mutation again"
        assert case.control.ci_low <= case.control.ratio <= case.control.ci_high
        # each entry pairs every sealed copy (one per entry: three variants and the control) with every
        # output set once a cycle
        assert case.placements == 4 * request.timing.placements
        triton_pair = case.comparisons[0]
        # both Triton variants time the one shared backward kernel in backward mode, and only there
        assert (triton_pair.basis == "identical timed code") == (case.mode == "backward"), (case.mode, triton_pair)
        assert case.comparisons[1].basis != "identical timed code"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_single_read_coop_split_groups_pass_every_input_kind_and_repeat_their_bits(dtype):
    """The split path (programs of a group waiting for each other) exists only compiled: every input kind
    within tolerance of float64, through the family's numerics, and a second launch bit for bit the same."""
    from variants.group_norm import single_read_coop as coop
    reg = registry()
    shape = Shape(2, 64, 2, (32, 32))     # 32,768 elements a group: split over 4 programs
    assert coop.choose(shape.hidden_size).split
    for kind in FAMILY.input_kinds:
        case = numerics.run_case(FAMILY, [reg.get("single_read_coop")], shape, dtype, BACKEND, (0,), input_kind=kind)
        assert case.variants[0].status == "pass", (kind, case.variants[0].reasons)
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    first, second = (FAMILY.alloc_outputs(shape, dtype, "cuda") for _ in range(2))
    coop.launch(inputs, first, shape)
    coop.launch(inputs, second, shape)
    bits = {torch.bfloat16: torch.int16, torch.float32: torch.int32}
    for name in FAMILY.outputs:
        assert torch.equal(first[name].view(bits[first[name].dtype]), second[name].view(bits[second[name].dtype])), name


@pytest.mark.parametrize("shape, chunks", [
    (Shape(16, 320, 32, (64, 64)), 5),    # the image preset's N16 C320: 4 slices of 10,240, all in one turn
    (Shape(64, 320, 32, (64, 64)), 5),    # 8,192 slices: more than the GPU holds programs, several turns each
    (Shape(3, 6, 2, (75, 73)), 2)],       # 16,425 a group: masked blocks, a short last slice, W and B per element
    ids=["image", "turns", "odd"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_single_read_coop_read_again_slices_pass_every_input_kind_and_repeat_their_bits(shape, chunks, dtype):
    """Slices streamed through, then read again (from L2) once the group has arrived: every input kind
    within tolerance of float64 through the family's numerics, and a second launch bit for bit the same."""
    from variants.group_norm import single_read_coop as coop
    config = coop.Config(coop.REREAD_BLOCK, coop.REREAD_WARPS, split=True, chunks=chunks)
    variant = dataclasses.replace(registry().get("single_read_coop"),
                                  run=lambda inputs, outputs, s: coop.launch_with(config, inputs, outputs, s))
    for kind in FAMILY.input_kinds:
        case = numerics.run_case(FAMILY, [variant], shape, dtype, BACKEND, (0,), input_kind=kind)
        assert case.variants[0].status == "pass", (kind, case.variants[0].reasons)
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    first, second = (FAMILY.alloc_outputs(shape, dtype, "cuda") for _ in range(2))
    coop.launch_with(config, inputs, first, shape)
    coop.launch_with(config, inputs, second, shape)
    bits = {torch.bfloat16: torch.int16, torch.float32: torch.int32}
    for name in FAMILY.outputs:
        assert torch.equal(first[name].view(bits[first[name].dtype]), second[name].view(bits[second[name].dtype])), name


@pytest.mark.parametrize("change, shape", [
    ("register_cap", Shape(64, 320, 32, (64, 64))),   # 40,960 elements a group, 5 slices; 2,048 groups
    ("overlap", Shape(64, 320, 32, (64, 64))),
    ("overlap", Shape(2, 64, 2, (32, 32)))],          # 16 slices: every program's one turn loads nothing
    ids=["register_cap", "overlap", "overlap_one_turn"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_single_read_coop_register_cap_and_overlap_change_no_bit(dtype, change, shape):
    """A split program under a register cap (more programs in flight), or loading its next slice while it
    waits (overlap), computes what the plain one computes: the same slices, the same arithmetic, so the
    same bits, on a shape whose programs take several slices each (a slice written twice, or one
    finished with another group's statistics, would show) and, overlapped, on one whose programs take
    one (the loop's only turn finishes the slice the program loaded before it)."""
    from variants.group_norm import single_read_coop as coop
    base = coop.Config(8192, 4, split=True, max_registers=None if change == "register_cap" else 128)
    changed = dataclasses.replace(base, **({"max_registers": 128} if change == "register_cap" else {"overlap": True}))
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    plain, other = (FAMILY.alloc_outputs(shape, dtype, "cuda") for _ in range(2))
    coop.launch_with(base, inputs, plain, shape)
    coop.launch_with(changed, inputs, other, shape)
    for name in FAMILY.outputs:
        assert torch.equal(plain[name], other[name]), name
    ref = FAMILY.reference(inputs, shape)["y"]
    assert float((plain["y"].double() - ref).norm() / ref.norm()) < (1e-6 if dtype == torch.float32 else 4e-3)


@pytest.mark.parametrize("shape", [Shape(4, 64, 16, (512,)), Shape(2, 64, 2, (32, 32)), Shape(3, 6, 2, (7, 5))],
                         ids=["resident", "split", "narrow_tile"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_single_read_coop_backward_passes_every_input_kind_and_repeats_dx(shape, dtype):
    """single_read_coop's own backward (resident groups, split groups waiting for each other, and a tile
    one column wide for channels of 15 elements) against float64 autograd on every input kind (large
    means included: it corrects the saved float32 mean), through the family's backward check; dx bit for
    bit the same on a second launch."""
    from variants.group_norm import single_read_coop_backward as cb
    reg = registry()
    label = cb.describe_backward(shape)
    for kind in FAMILY.input_kinds:
        case = numerics.run_case(FAMILY, [reg.get("single_read_coop")], shape, dtype, BACKEND, (0,),
                                 direction="backward", input_kind=kind)
        assert case.variants[0].status == "pass", (kind, label, case.variants[0].reasons)
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    saved = FAMILY.alloc_outputs(shape, dtype, "cuda")
    reg.get("single_read_coop").run(inputs, saved, shape)
    first, second = (FAMILY.alloc_grads(shape, dtype, "cuda") for _ in range(2))
    cb.launch_coop_backward(cb.coop_backward, inputs, saved, first, shape)()
    cb.launch_coop_backward(cb.coop_backward, inputs, saved, second, shape)()
    bits = {torch.bfloat16: torch.int16, torch.float32: torch.int32}[dtype]
    assert torch.equal(first["dx"].view(bits), second["dx"].view(bits))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_single_read_coop_split_launches_of_other_row_counts_do_not_disturb_each_other(dtype):
    """A split program reads its launch's epoch from one counter and waits at every row of its set for
    the next multiple of the slice count, which holds only while every row of the set advances together:
    two shapes with the same slice count and different row counts, launched in turns, must each give their
    own first bits again (a wait that timed out would write NaN, a race other bits)."""
    from variants.group_norm import single_read_coop as coop
    # 256 and 512 rows of 4 slices: 1,024 and 2,048 items, more than the GPU holds programs (about 400-530),
    # so a program's later items lie in rows far from its first, where a shared counter would lag
    shapes = [Shape(128, 64, 2, (32, 32)), Shape(256, 64, 2, (32, 32))]
    config = coop.Config(8192, 4, split=True)
    inputs = [FAMILY.make_inputs(s, dtype, "cuda", i) for i, s in enumerate(shapes)]
    first = []
    for order in (0, 1, 0, 1, 1, 0, 0, 1):
        out = FAMILY.alloc_outputs(shapes[order], dtype, "cuda")
        coop.launch_with(config, inputs[order], out, shapes[order])
        if len(first) < 2 and order == len(first):
            first.append(out)
            assert bool(torch.isfinite(out["rstd"]).all()), order
            continue
        for name in FAMILY.outputs:
            assert torch.equal(out[name], first[order][name]), (order, name)


def _backward_case(names, shape, dtype=torch.bfloat16, extra=None):
    reg = registry()
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    calls = {n: harness.bench_call(FAMILY, reg.get(n), inputs, shape, "backward") for n in names}
    calls.update(extra or {})
    return timing.time_case(calls, FAMILY.bytes_moved(shape, dtype, "backward"), 4000.0, shape.label, "backward",
                            timing.TimingConfig(rounds=3, min_rounds=3, calls_per_round=1, warmup_ms=1))


def test_torch_and_inductor_backward_are_replayed_from_graphs_and_leave_the_default_stream():
    # their forward made the inputs' gradient nodes on the default stream, which broke the backward's
    # capture: the first backward case of every process was timed eagerly (reports/backward_capture)
    case = _backward_case(("pointer_mutation", "torch", "inductor"), Shape(4, 64, 16, (256,)))
    assert case.graph and case.note == "", case.note
    assert [v.status for v in case.variants] == ["ok", "ok", "ok"]
    assert torch.cuda.current_stream() == torch.cuda.default_stream()


def test_a_pass_that_cannot_be_captured_leaves_torch_on_the_stream_it_found():
    x = torch.ones(1024, device="cuda")

    def synchronizes():   # .item() waits for the GPU: not allowed while a stream is captured
        x.sum().item()
    case = _backward_case(("pointer_mutation",), Shape(4, 64, 16, (256,)), extra={"synchronizes": synchronizes})
    assert not case.graph and case.note.startswith("CUDA graph capture failed for synchronizes"), case.note
    assert torch.cuda.current_stream() == torch.cuda.default_stream()


def test_an_op_writing_into_dy_is_timed_on_restored_inputs_and_leaves_the_others_alone(tmp_path):
    """An op whose backward writes dx over dy, timed through the pipeline (graph replay) beside the same
    op that does not: the writer is named and restored before each call; the other's inputs are never
    touched, and the numerics of both agree bit for bit."""
    from compare.comparison import pipeline
    from tests import op_package
    op_package.write(tmp_path, "grouped")
    norm = tmp_path / "normlib" / "norm.py"
    request = pipeline.Request(variants=(), shape="4,64,16,512", trials=1, inputs="normal",
                               checks=("numerics", "backward", "timing"),
                               timing=timing.TimingConfig(modes=("backward",), rounds=10, min_rounds=10,
                                                          max_seconds=2),
                               external=(f"plain={norm}::GroupNormFunction.apply",
                                         f"in_place={norm}::GroupNormDyInPlace.apply"))
    with pipeline.loaded(request, registry()) as (request, reg, failed):
        report = pipeline.run(request, reg, BACKEND, failed=failed)
    (case,) = report.timing.cases
    variants = {v.variant: v for v in case.variants}
    assert variants["plain"].status == variants["in_place"].status == "ok", {n: v.reason for n, v in variants.items()}
    assert [w.input for w in variants["in_place"].writes] == ["dy"] and variants["plain"].writes == ()
    assert "in_place wrote into its inputs" in case.note
    backward = next(c for c in report.numerics.cases if c.direction == "backward")
    assert all(p.n_diff == 0 for p in backward.pairs if {p.a, p.b} == {"plain", "in_place"})


def test_the_first_screen_of_a_timed_compare_holds_every_checks_row(tmp_path):
    """On the GPU the default pair is timed: at COLUMNS=80, piped, the glance's rows (numerics, timing of the
    forward, compiled code) come within the first 24 lines, none wider than 80 or ending in a space."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(root)}
    r = subprocess.run([sys.executable, str(root / "main.py"), "compare", "--shape", "4,64,16,512", "--trials", "1",
                        "--inputs", "normal", "--modes", "forward", "--quiet"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 and not line.endswith(" ") for line in lines)
    rows = {}
    for line in lines[:24]:   # a row: its mark (none for info), then the check's words
        words = line.split()
        words = words[1:] if words[:1] in (["OK"], ["WARN"], ["FAIL"], ["SKIP"]) else words
        rows.setdefault(" ".join(words[:2]), words[2:])
    assert rows["numerics identical"][:1] == ["bits"], r.stdout   # the seed's pair: every bit the same
    assert rows["timing forward"][0] in ("slower", "faster", "no"), r.stdout
    assert rows["compiled code"][0] == "changed", r.stdout
    assert len(lines) <= 24, r.stdout
