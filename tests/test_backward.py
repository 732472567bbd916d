"""The backward check: the shared backward kernel against float64 autograd, and planted faults in it
(a missing atomic add, a wrong element count in the normalisation) are caught."""
import pytest
import torch

from compare.checks import numerics
from compare.runtime.backend import configure
from tests.planted import mutant_backward
from variants import registry
from variants.group_norm import FAMILY, Shape
import variants.group_norm.pointer_mutation as pointer_mutation

BACKEND = configure("auto")
REG = registry()
SHAPE = Shape(3, 8, 2, (12,))     # batch 3: three programs add into every channel's dW, dB
ODD = Shape(2, 6, 2, (5, 3))      # hidden 45, 15 per channel: not powers of two


def run(variants, family=FAMILY, shape=SHAPE, seeds=(0,), dtype=torch.float32):
    return numerics.run_case(family, variants, shape, dtype, BACKEND, seeds, direction="backward",
                             reference="torch")


def by_name(case):
    return {v.variant: v for v in case.variants}


def outputs(result):
    return {e.output: e for e in result.outputs}


@pytest.mark.parametrize("shape", [SHAPE, ODD], ids=["pow2", "odd"])
def test_real_variants_and_torch_pass_backward(shape):
    names = ["pointer_mutation", "explicit_offset", "flat", "torch"]
    case = run([REG.get(n) for n in names], shape=shape)
    assert case.direction == "backward"
    for v in case.variants:
        assert v.status == "pass", (v.variant, v.reasons)
        assert set(outputs(v)) == {"dx", "dW", "dB"}
        assert outputs(v)["dx"].rel_l2 < 1e-6
    # the seed's pair share the backward kernel and, here, bitwise-equal statistics
    seed_pairs = [p for p in case.pairs if {p.a, p.b} == {"pointer_mutation", "explicit_offset"}]
    assert [p.output for p in seed_pairs] == ["dx", "dW", "dB"]
    # dW and dB are atomic adds: on a GPU their order, and so their last bits, can change from run to run
    deterministic = ("dx",) if BACKEND.gpu else ("dx", "dW", "dB")
    assert all(p.equal for p in seed_pairs if p.output in deterministic)
    assert {(v.a, v.b) for v in case.verdicts} >= {("torch", "pointer_mutation"), ("torch", "flat")}


def _faulty(tmp_path, name, old, new, count=1):
    """A variant bringing pointer_mutation's forward and a planted fault in the backward kernel."""
    kernel = mutant_backward(tmp_path, name, old, new, count)
    variant = FAMILY.triton_variant(name, f"planted backward fault: {new.strip()}", "tests/planted.py",
                                    forward=pointer_mutation.group_norm_forward, backward=kernel)
    assert variant.own_kernels == ("forward", "backward")
    return variant, FAMILY


def test_store_instead_of_atomic_add_for_dB_is_caught(tmp_path):
    bad, family = _faulty(tmp_path, "db_store", "tl.atomic_add(DB_ptr + channel, db)", "tl.store(DB_ptr + channel, db)")
    case = run([REG.get("pointer_mutation"), bad], family)
    result = by_name(case)["db_store"]
    assert result.status == "fail"
    errs = outputs(result)
    assert errs["dB"].beyond_tol > 0 and errs["dB"].unwritten == 0   # caught through the error, not the poison
    assert errs["dx"].beyond_tol == 0 and errs["dW"].beyond_tol == 0  # dx and dW are untouched by this edit
    assert by_name(case)["pointer_mutation"].status == "pass"
    v = next(v for v in case.verdicts if (v.a, v.b) == ("pointer_mutation", "db_store"))
    assert not v.as_accurate and any(d.startswith("dB") for d in v.detail)
    assert not next(p for p in case.pairs if p.output == "dB").equal


def test_skipped_atomic_add_for_dW_is_caught(tmp_path):
    bad, family = _faulty(tmp_path, "dw_skipped", "tl.atomic_add(DW_ptr + channel, dw)\n", "pass\n")
    result = by_name(run([bad], family))["dw_skipped"]
    errs = outputs(result)
    assert result.status == "fail"
    assert errs["dW"].beyond_tol == SHAPE.channels      # every channel's dW stayed zero
    assert errs["dB"].beyond_tol == 0
    assert any(r.startswith("dW:") for r in result.reasons)


@pytest.mark.parametrize("old, new", [
    ("c1 = c1 / hidden_size", "c1 = c1 / (hidden_size - 1)"),         # an unbiased-style N - 1
    ("c2 = c2 / hidden_size", "c2 = c2 / (hidden_size // channels_per_group)"),  # per channel, not per group
], ids=["c1_N_minus_1", "c2_per_channel"])
def test_wrong_element_count_in_normalisation_is_caught(tmp_path, old, new):
    bad, family = _faulty(tmp_path, "wrong_n", old, new)
    case = run([REG.get("explicit_offset"), bad], family)
    result = by_name(case)["wrong_n"]
    errs = outputs(result)
    assert result.status == "fail"
    assert errs["dx"].beyond_tol > errs["dx"].numel // 2
    assert errs["dW"].beyond_tol == 0 and errs["dB"].beyond_tol == 0   # the sums themselves are right
    assert by_name(case)["explicit_offset"].status == "pass"
    assert not next(v for v in case.verdicts if v.b == "wrong_n" and v.a == "explicit_offset").as_accurate


def test_backward_reference_matches_the_analytic_formula():
    """The float64 autograd reference agrees with the spec's formula computed directly in float64."""
    inputs = FAMILY.make_inputs(ODD, torch.float64, "cpu", 3)
    ref = FAMILY.reference_backward(inputs, ODD)
    n, g = ODD.batch, ODD.num_groups
    x = inputs.x.view(n, g, -1)
    dy = inputs.dy.view(n, g, -1)
    w = inputs.weight.repeat_interleave(ODD.spatial_size).view(g, -1)
    mean = x.mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ODD.eps)
    x_hat = (x - mean) * rstd
    c1 = (x_hat * w * dy).mean(-1, keepdim=True)
    c2 = (w * dy).mean(-1, keepdim=True)
    dx = (w * dy - (x_hat * c1 + c2)) * rstd
    assert torch.allclose(ref["dx"], dx.view_as(inputs.x), rtol=1e-12, atol=1e-12)
    dw = (dy * x_hat).view(n, ODD.channels, -1).sum((0, 2))
    assert torch.allclose(ref["dW"], dw, rtol=1e-12, atol=1e-12)


def test_inductor_backward_is_reported_not_run():
    case = run([REG.get("torch"), REG.get("inductor")])
    inductor = by_name(case)["inductor"]
    assert inductor.status == "not_run"
    assert by_name(case)["torch"].status == "pass"
