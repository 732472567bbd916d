"""The swiglu family on the CPU interpreter, tiny shapes: every variant against float64 both ways; planted
faults caught (a wrong gradient, a column never written, a write into an input that is not the documented
in-place one); the documented in-place backward not reported as a write into its inputs; the flat launcher
replayed by the IR; input kinds outside the family's refused in one line."""
import inspect

import pytest
import torch

import main
from compare.checks import harness, numerics
from compare.runtime.backend import configure
from compare.checks.ir.compile import launcher_ref, recorded_launch
from tests.planted import load_mutated
from variants import registry
from variants.operands import Output
from variants.ops import op_variant
from variants.swiglu import Swiglu

BACKEND = configure("auto")
REG = registry()
SW = REG.family("swiglu")
SHAPE = SW.parse_shape("3,40").shapes[0]   # 40 columns: a block of 64, masked


class Undeclared(Swiglu):
    """swiglu with its in-place gradients not declared as such: what compare/ would say without `overwrites`."""

    grads = (Output("da", of="a"), Output("db", of="b"))


def run(variants, direction="backward", family=SW, kind="normal"):
    case = numerics.run_case(family, variants, SHAPE, torch.float32, BACKEND, (0,), kind, direction=direction)
    return {v.variant: v for v in case.variants}


def planted(tmp_path, name, old, new, count=1, forward=False):
    import variants.swiglu.rowwise as good
    bad = load_mutated(tmp_path, good, name, old, new, count)[0]
    return SW.triton_variant(name, f"planted: {name}", str(tmp_path),
                             forward=bad.swiglu_forward if forward else good.swiglu_forward,
                             backward=good.swiglu_backward if forward else bad.swiglu_backward)


class InPlace(torch.autograd.Function):
    """An op whose backward writes its gradients over the a and b it saved, as training libraries ship it."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.nn.functional.silu(a) * b

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        s = torch.sigmoid(a)
        da, db = dc * b * s * (1 + a * (1 - s)), dc * a * s
        a.data.copy_(da)
        b.data.copy_(db)
        return a.data, b.data


@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("kind", ["normal", "large", "nonfinite"])
def test_every_variant_matches_float64_and_writes_only_where_documented(direction, kind):
    names = ["rowwise", "sigmoid_exp", "flat", "torch"]
    found = run([REG.get(n, "swiglu") for n in names], direction, kind=kind)
    assert {n: (v.status, v.writes) for n, v in found.items()} == {n: ("pass", ()) for n in names}
    outputs = {"forward": {"c"}, "backward": {"da", "db"}}[direction]
    assert {e.output for e in found["rowwise"].outputs} == outputs
    assert all(e.unwritten == 0 for e in found["flat"].outputs)


def test_a_planted_wrong_gradient_is_caught_on_da_alone(tmp_path):
    bad = planted(tmp_path, "no_silu_term", "    da, db = gated_grads(dc, a, b, tl.sigmoid(a))\n",
                  "    da, db = gated_grads(dc, a, b, tl.sigmoid(a))\n    da = dc * b * tl.sigmoid(a)\n")
    found = run([REG.get("rowwise", "swiglu"), bad])
    assert found["rowwise"].status == "pass"
    assert found["no_silu_term"].status == "fail"
    assert [r.split(":")[0] for r in found["no_silu_term"].reasons] == ["da"]


def test_a_column_the_in_place_backward_never_writes_is_unwritten_not_just_wrong(tmp_path):
    bad = planted(tmp_path, "short_row", "    mask = cols < n_cols\n", "    mask = cols < n_cols - 1\n", count=2)
    declared = {e.output: e for e in run([bad])["short_row"].outputs}
    assert declared["da"].unwritten == SHAPE.rows and declared["db"].unwritten == SHAPE.rows
    undeclared = {e.output: e for e in run([bad], family=Undeclared())["short_row"].outputs}
    assert undeclared["da"].unwritten == 0 and undeclared["da"].beyond_tol >= SHAPE.rows


def test_the_documented_in_place_write_is_no_fault_and_other_writes_are(tmp_path):
    op = op_variant("in_place", InPlace.apply, None, SW, "an op writing da over a", "test", "test")
    assert run([op])["in_place"].status == "pass" and run([op])["in_place"].writes == ()
    flagged = run([op], family=Undeclared())["in_place"].writes
    assert sorted(w.input for w in flagged) == ["a", "b"]
    into_dc = planted(tmp_path, "writes_dc", "    tl.store(b_ptr + cols, db.to(b_ptr.dtype.element_ty), mask=mask)\n",
                      "    tl.store(b_ptr + cols, db.to(b_ptr.dtype.element_ty), mask=mask)\n"
                      "    tl.store(dc_ptr + cols, db.to(dc_ptr.dtype.element_ty), mask=mask)\n")
    assert [w.input for w in run([into_dc])["writes_dc"].writes] == ["dc"]
    over_a = planted(tmp_path, "forward_over_a", "    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)\n",
                     "    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)\n"
                     "    tl.store(a_ptr + cols, b.to(a_ptr.dtype.element_ty), mask=mask)\n", count=2, forward=True)
    assert [w.input for w in run([over_a], "forward")["forward_over_a"].writes] == ["a"]   # a: in place only backward


def test_the_timed_in_place_backward_repeats_from_the_same_a_and_b():
    inputs, buffers = SW.make_inputs(SHAPE, torch.float32, "cpu", 3), {}
    call = harness.bench_call(SW, REG.get("rowwise", "swiglu"), inputs, SHAPE, "backward", buffers=buffers)
    ref = SW.reference_backward(inputs, SHAPE)
    for _ in range(2):   # the second call reads a and b again, not the first call's gradients
        call()
    grads = buffers["grads"]
    assert all(torch.allclose(grads[g].double(), ref[g], rtol=1e-5, atol=1e-6) for g in ("da", "db"))
    assert SW.bytes_moved(SHAPE, torch.float16, "forward") == 3 * SHAPE.numel * 2
    assert SW.bytes_moved(SHAPE, torch.float32, "backward") == 5 * SHAPE.numel * 4


def test_the_flat_launcher_is_replayed_by_the_ir_with_its_own_arguments():
    flat = REG.get("flat", "swiglu")
    assert launcher_ref(SW, flat.forward_launcher) == "flat_forward_call"
    shape = SW.preset("llm").shapes[-1]
    args, kwargs = recorded_launch(SW, "forward", shape, "float16", "flat_forward_call")
    assert args[3] == 4096 * 28672 and kwargs["BLOCK_SIZE"] == 1024
    for kernel, role in ((flat.kernel, "forward"), (flat.backward_kernel, "backward")):   # what its launchers pass
        args, kwargs = recorded_launch(SW, role, shape, "float16", f"flat_{role}_call")
        params = tuple(inspect.signature(kernel.fn).parameters)
        assert len(params) == len(args) + 1 and params[-2:] == ("n_elements", "BLOCK_SIZE") and set(kwargs) == {"BLOCK_SIZE"}
    args, kwargs = recorded_launch(SW, "forward", shape, "float16")
    assert args[3:] == (28672, 28672) and kwargs["BLOCK_SIZE"] == 32768


def test_an_input_kind_swiglu_does_not_draw_is_refused_in_one_line(capsys):
    assert main.main(["compare", "--family", "swiglu", "--inputs", "huge", "--check", "numerics"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "normal, large, tiny, nonfinite" in err[0], err
    a = SW.make_inputs(SHAPE, torch.float16, "cpu", 0, "large").a.double()
    assert a.abs().max() <= 90 and (a < -11).any()   # exp(-a) overflows float16 there


def test_variants_named_without_a_family_come_from_the_one_family_that_has_them_all():
    from compare.comparison import plan
    p = plan.build(plan.Request(variants=("rowwise", "flat")), REG)
    assert p.family is SW and p.variants[1] is REG.get("flat", "swiglu")
    p = plan.build(plan.Request(variants=("flat", "torch")), REG)   # the default's
    assert p.family.name == REG.default_family and p.variants[0] is REG.get("flat", REG.default_family)
