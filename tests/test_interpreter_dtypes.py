"""Which dtypes Triton's CPU interpreter runs faithfully, pinned: one kernel on float16/bfloat16 inputs and on
their exact float32 upcast, so only the final store's rounding differs. Compiled Triton rounds to nearest
even; the interpreter does for float16, but truncates bfloat16 toward zero, hence compare/checks/numerics.py's
INTERPRETER_UNTRUSTED. On a GPU the cast-store tests assert nearest-even for both (the whole-kernel ones
are interpreter-only)."""
import warnings

import pytest
import torch

from compare.checks import numerics
from compare.runtime.backend import configure
from variants import registry
from variants.group_norm import FAMILY, Shape, alloc_outputs, norm_operands

BACKEND = configure("auto")
REG = registry()
SHAPE = Shape(2, 8, 2, (32,))


def _y_low_and_y32(dtype):
    """(y of the kernel on `dtype` inputs, y of the same kernel on the float32 upcast of them).

    Interpreter only: compiled kernels may pick another layout, and so another summation order,
    for another input dtype, so on a GPU the float32 run is no bit-exact twin (the store tests
    below carry the GPU evidence)."""
    if not BACKEND.interpreted:
        pytest.skip("compiled code may reduce in another order per dtype; see the cast-store tests")
    v = REG.get("pointer_mutation")
    low = FAMILY.make_inputs(SHAPE, dtype, BACKEND.device, 0)
    up = norm_operands(low.x.float(), low.weight.float(), low.bias.float(), low.seed, low.kind)
    out_low = alloc_outputs(SHAPE, dtype, BACKEND.device)
    out_32 = alloc_outputs(SHAPE, torch.float32, BACKEND.device)
    v.run(low, out_low, SHAPE)
    v.run(up, out_32, SHAPE)
    numerics.synchronize(BACKEND)
    # loads are exact: the float32 statistics agree bit for bit
    assert torch.equal(out_low["mean"], out_32["mean"]) and torch.equal(out_low["rstd"], out_32["rstd"])
    return out_low["y"].cpu(), out_32["y"].cpu()


def test_float16_store_rounds_to_nearest_even():
    y16, y32 = _y_low_and_y32(torch.float16)
    assert torch.equal(y16.view(torch.int16), y32.to(torch.float16).view(torch.int16))


def test_bfloat16_store():
    ybf, y32 = _y_low_and_y32(torch.bfloat16)
    nearest = y32.to(torch.bfloat16).view(torch.int16)
    truncated = (y32.contiguous().view(torch.int32) >> 16).to(torch.int16)
    if BACKEND.interpreted:
        # the finding: truncation toward zero, not round to nearest even
        assert torch.equal(ybf.view(torch.int16), truncated)
        assert int((ybf.view(torch.int16) != nearest).sum()) > SHAPE.numel // 10
        assert "bfloat16" in numerics.INTERPRETER_UNTRUSTED and "float16" not in numerics.INTERPRETER_UNTRUSTED
    else:
        assert torch.equal(ybf.view(torch.int16), nearest)


def test_untrusted_dtype_is_marked_not_measured():
    case = numerics.run_case(FAMILY, [REG.get("explicit_offset"), REG.get("torch")], SHAPE, torch.bfloat16,
                             BACKEND, (0,), reference="torch")
    by = {v.variant: v for v in case.variants}
    assert by["torch"].status in ("pass", "fail") and by["torch"].outputs      # torch is not the interpreter
    if BACKEND.interpreted:
        assert by["explicit_offset"].status == "untrusted" and by["explicit_offset"].outputs == ()
        assert "truncation" in by["explicit_offset"].reasons[0]
        assert case.pairs == () and case.verdicts == ()
    else:
        assert by["explicit_offset"].status == "pass"


def _store_as(dtype, values):
    import triton
    import triton.language as tl

    @triton.jit
    def cast_store(X, Y, n, TO: tl.constexpr, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(Y + o, tl.load(X + o, mask=o < n).to(TO), mask=o < n)

    src = torch.tensor(values, dtype=torch.float32, device=BACKEND.device)
    dst = torch.empty(len(values), dtype=dtype, device=BACKEND.device)
    to = {torch.float16: triton.language.float16, torch.bfloat16: triton.language.bfloat16}[dtype]
    with warnings.catch_warnings():   # numpy's "overflow in cast" for 7e4 -> float16 inf, which is the point
        warnings.simplefilter("ignore", RuntimeWarning)
        cast_store[(1,)](src, dst, len(values), TO=to, BLOCK=triton.next_power_of_2(len(values)))
    numerics.synchronize(BACKEND)
    return src.cpu(), dst.cpu()


# ties, values just past a tie, subnormals of each dtype, overflow, signed zero, NaN, Inf
SPECIALS = [1.0 + 2 ** -11, 1.0 + 2 ** -11 + 2 ** -20, 1.0 + 2 ** -8, 1.0 + 2 ** -8 + 2 ** -10, 3e-6, 1e-7, -5.9e-8,
            7e4, -1e5, -0.0, float("nan"), float("inf"), 1e-40, 3e38, 0.1, -2.7182817]


def test_float16_store_of_special_values_is_exact():
    src, dst = _store_as(torch.float16, SPECIALS)
    expected = src.to(torch.float16)
    assert torch.equal(dst.view(torch.int16)[~torch.isnan(expected)], expected.view(torch.int16)[~torch.isnan(expected)])
    assert torch.isnan(dst[torch.isnan(expected)]).all()


def test_bfloat16_store_of_special_values():
    src, dst = _store_as(torch.bfloat16, SPECIALS)
    expected = src.to(torch.bfloat16)
    finite = torch.isfinite(expected)
    same = dst.view(torch.int16)[finite] == expected.view(torch.int16)[finite]
    if BACKEND.interpreted:
        assert not same.all()            # 1 + 2^-8 + 2^-10 rounds up to nearest, is truncated here
        assert float(dst[3]) == 1.0 and float(expected[3]) == 1.0078125
    else:
        assert same.all()
