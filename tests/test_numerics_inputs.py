"""The input kinds have the properties they claim, and the numerics check reads them right:
NaN/Inf must propagate exactly where the reference's do; the seed's kernels' real failures on hard
inputs (catastrophic cancellation in the one-pass variance, overflow) are reported, not hidden."""
import pytest
import torch

from compare.checks import numerics
from compare.runtime.backend import configure
from compare.model.results import OutputError, VariantNumerics
from variants import registry
from variants.group_norm import FAMILY, INPUT_KINDS, Shape, make_inputs

BACKEND = configure("auto")
REG = registry()
SHAPE = Shape(2, 8, 4, (16,))    # 4 groups: the nonfinite kind puts NaN, +Inf, -Inf in groups 0, 1, 2
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def groups(x, shape=SHAPE):
    return x.view(shape.batch, shape.num_groups, -1)


@pytest.mark.parametrize("kind", list(INPUT_KINDS))
def test_kinds_are_seeded_and_in_the_dtype(kind):
    for dtype in DTYPES:
        a, b, c = (make_inputs(SHAPE, dtype, "cpu", s, kind) for s in (5, 5, 6))
        assert a.x.dtype == a.weight.dtype == a.dy.dtype == dtype
        assert torch.equal(a.x.view(torch.int16 if dtype != torch.float32 else torch.int32),
                           b.x.view(torch.int16 if dtype != torch.float32 else torch.int32))
        assert not torch.equal(a.x.nan_to_num(), c.x.nan_to_num())
        assert a.kind == kind


def test_all_equal_groups_are_really_equal_and_the_others_are_not():
    for dtype in DTYPES:
        g = groups(make_inputs(SHAPE, dtype, "cpu", 1, "all_equal").x)
        assert (g[:, 0::2] == g[:, 0::2, :1]).all()
        assert (g[:, 1::2].std(-1) > 0.5).all()


def test_large_mean_keeps_its_spread_after_the_cast():
    for dtype in DTYPES:
        x = make_inputs(SHAPE, dtype, "cpu", 1, "large_mean").x.double()
        assert 990 < float(x.mean()) < 1010
        assert float(groups(x).std(-1).min()) > 0          # not collapsed to one value by rounding


def test_huge_is_near_the_top_and_representable():
    for dtype in DTYPES:
        x = make_inputs(SHAPE, dtype, "cpu", 1, "huge").x
        top = torch.finfo(dtype).max
        assert torch.isfinite(x).all()
        assert float(x.abs().min()) >= top / 16 * 0.99 and float(x.abs().max()) <= top / 8


def test_tiny_holds_subnormals_in_float32():
    x = make_inputs(SHAPE, torch.float32, "cpu", 1, "tiny").x
    tiny = torch.finfo(torch.float32).tiny
    assert float(x.abs().max()) < 64 * tiny
    assert int(((x != 0) & (x.abs() < tiny)).sum()) > 0


def test_nonfinite_positions_and_reference_propagation():
    inputs = make_inputs(SHAPE, torch.float32, "cpu", 2, "nonfinite")
    g = groups(inputs.x)
    assert int(torch.isnan(g[0, 0]).sum()) == 1 and int(torch.isposinf(g[0, 1]).sum()) == 1
    assert int(torch.isneginf(g[0, 2]).sum()) == 1
    assert torch.isfinite(g[0, 3]).all() and torch.isfinite(g[1]).all()
    y = groups(FAMILY.reference(inputs, SHAPE)["y"])
    assert (~torch.isfinite(y[0, :3])).all() and torch.isfinite(y[0, 3]).all() and torch.isfinite(y[1]).all()


def test_real_kernel_propagates_nonfinite_exactly_where_the_reference_does():
    case = numerics.run_case(FAMILY, [REG.get("explicit_offset")], SHAPE, torch.float32, BACKEND, (0, 1), "nonfinite")
    v = case.variants[0]
    assert v.status == "pass", v.reasons
    y = {e.output: e for e in v.outputs}["y"]
    per_group = SHAPE.hidden_size
    assert y.nan + y.inf == 2 * 3 * per_group and y.nonfinite_mismatch == 0


def test_nonfinite_where_the_reference_is_finite_fails():
    ref = torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64)
    ok = numerics.measure(torch.tensor([1.0, float("inf"), 3.0]), ref, "y")      # non-finite in both: agreement
    assert ok.ok and ok.nonfinite_mismatch == 0
    bad = numerics.measure(torch.tensor([float("nan"), float("nan"), 3.0]), ref, "y")
    assert not bad.ok and bad.nonfinite_mismatch == 1


def test_one_pass_variance_failures_are_reported():
    """Pass 1's var = E[x^2] - E[x]^2 in float32: at mean 1000 it cancels to a negative variance
    (NaN) in some groups; float32 huge values overflow the sums. These are the seed's kernels' real
    failures, and the check must report them."""
    vs = [REG.get("pointer_mutation"), REG.get("torch")]
    large = numerics.run_case(FAMILY, vs, SHAPE, torch.float32, BACKEND, (0,), "large_mean", reference="torch")
    pm = {v.variant: v for v in large.variants}["pointer_mutation"]
    assert pm.status == "fail"
    assert {e.output: e for e in pm.outputs}["rstd"].nonfinite_mismatch > 0
    assert not next(v for v in large.verdicts if (v.a, v.b) == ("torch", "pointer_mutation")).as_accurate
    huge = numerics.run_case(FAMILY, vs[:1], SHAPE, torch.float32, BACKEND, (0,), "huge")
    y = {e.output: e for e in huge.variants[0].outputs}["y"]
    assert huge.variants[0].status == "fail" and y.nonfinite_mismatch > 0   # the float32 sum of squares overflows
    if not BACKEND.gpu:   # the interpreter's numpy overflows every group; compiled code (FMA, order) only some
        assert y.nonfinite_mismatch == SHAPE.numel


def _v(name, rel, max_abs, mismatch=0, max_ulp=10.0):
    e = OutputError("y", "float32", 10, max_abs, rel, max_ulp, 0, 1e-6, 1e-5, 0, 0, mismatch, 0, 1.0)
    return VariantNumerics(name, "pass", (), (e,))


def test_verdict_rule():
    assert numerics.verdict(_v("a", 1e-3, 1e-3), _v("b", 5e-2, 5e-2), True, torch.float32).as_accurate
    assert numerics.verdict(_v("a", 1e-3, 1e-3), _v("b", 1.9e-3, 1.9e-3), False, torch.float32).as_accurate
    worse = numerics.verdict(_v("a", 1e-3, 1e-3), _v("b", 2.1e-3, 1e-3), False, torch.float32)
    assert not worse.as_accurate and worse.detail == ("y: rel L2 2.10e-03 against 1.00e-03",)
    assert not numerics.verdict(_v("a", 1e-3, 1e-3), _v("b", 0, 0, mismatch=1), False, torch.float32).as_accurate
    # below the floor (machine epsilon of the dtype) differences do not count
    assert numerics.verdict(_v("a", 0, 0), _v("b", 1e-8, 1e-8), False, torch.float32).as_accurate
    # a max abs loss within 1 ULP everywhere is no loss; the same loss at 1.5 ULP is
    assert numerics.verdict(_v("a", 0, 0), _v("b", 0, 1e-6, max_ulp=1.0), False, torch.float32).as_accurate
    assert not numerics.verdict(_v("a", 0, 0), _v("b", 0, 1e-6, max_ulp=1.5), False, torch.float32).as_accurate


def test_verdict_is_three_way():
    a, b = _v("a", 1e-3, 1e-3), _v("b", 4e-4, 4e-4)
    assert numerics.verdict(a, b, False, torch.float32).accuracy == "more accurate"
    better = numerics.verdict(a, b, False, torch.float32)
    assert better.gained == ("y",) and better.lost == () and better.detail[0] == "y: rel L2 4.00e-04 against 1.00e-03"
    assert numerics.verdict(b, a, False, torch.float32).accuracy == "less accurate"
    assert numerics.verdict(a, _v("b", 1.5e-3, 1e-3), False, torch.float32).accuracy == "as accurate"
    assert numerics.verdict(a, a, True, torch.float32).basis == "bitwise equal"
    # finite where A wrote NaN: more accurate, whatever the error over the elements finite in both
    fixed = numerics.verdict(_v("a", 0, 0, mismatch=7), _v("b", 1e-3, 1e-3), False, torch.float32)
    assert fixed.accuracy == "more accurate" and fixed.detail == (
        "y: 0 non-finite-mismatched or unwritten elements against 7",)


def test_verdict_never_overclaims_a_mixed_result():
    def two(name, y_rel, mean_rel):
        return VariantNumerics(name, "pass", (), tuple(
            OutputError(o, "float32", 10, r, r, 10.0, 0, 1e-6, 1e-5, 0, 0, 0, 0, 1.0)
            for o, r in (("y", y_rel), ("mean", mean_rel))))
    mixed = numerics.verdict(two("a", 1e-3, 1e-3), two("b", 1e-4, 1e-2), False, torch.float32)
    assert mixed.accuracy == "less accurate" and mixed.basis == "mixed"
    assert mixed.lost == ("mean",) and mixed.gained == ("y",)
