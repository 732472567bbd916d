"""variants/ops.py: an op called as its mapping says: family arguments and constants where the call puts
them, the element of a tuple result it names, and a call that cannot fit refused before anything runs."""
import pytest
import torch

from compare.runtime.call_capture import parameter_names
from variants.ops import MappedOp, call_signature, check_call
from variants.variant import NoGradient, OpCallError, differentiable_result
from variants.spec import BadSpec, parse


def _call(text):
    return parse(f"a=k.py::{text}").call


def test_constants_and_keywords_go_where_the_call_puts_them():
    seen = {}

    def op(x, weight, scale, mode="sum", bias=None):
        seen.update(weight=weight, mode=mode, bias=bias)
        return x * scale, "second"

    mapped = MappedOp(op, _call("op(X, None, 2.0, bias=B, mode='mean')[0]"))
    out = mapped(torch.ones(2), torch.full((2,), 3.0))   # X, then B: the family arguments in the call's order
    assert torch.equal(out, torch.full((2,), 2.0))
    assert seen["weight"] is None and seen["mode"] == "mean" and torch.equal(seen["bias"], torch.full((2,), 3.0))
    assert MappedOp(op, _call("op(X, None, 1.0)[1]"))(torch.ones(1)) == "second"


def test_a_tuple_result_needs_the_element_named():
    def op(x):
        return x, x
    with pytest.raises(OpCallError, match=r"say which element is the output: \(X\)\[i\]"):
        MappedOp(op, _call("op(X)"))(torch.ones(1))
    with pytest.raises(OpCallError, match=r"\[5\] is none of them"):
        MappedOp(op, _call("op(X)[5]"))(torch.ones(1))
    with pytest.raises(OpCallError, match="not a tuple"):
        MappedOp(lambda x: x, _call("op(X)[0]"))(torch.ones(1))


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, reduction="mean"):
        return x * 2

    @staticmethod
    def backward(ctx, dy):
        return dy * 2, None, None, None


def test_an_autograd_functions_apply_is_checked_against_its_forward():
    check_call(_Scale.apply, _call("f(X, None, eps)"), ("X", "eps"), "--variant a")
    with pytest.raises(BadSpec, match="does not fit the callable's parameters"):
        check_call(_Scale.apply, _call("f(X, eps)"), ("X", "eps"), "--variant a")   # weight has no default
    with pytest.raises(BadSpec, match="'W' is not an argument of the family's op"):
        check_call(_Scale.apply, _call("f(X, W, eps)"), ("X", "eps"), "--variant a")


class _ScaleNoCtx(torch.autograd.Function):
    """The style whose forward takes no ctx: `setup_context` saves what backward needs."""

    @staticmethod
    def forward(x, weight, eps):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, dy):
        return dy * 2, None, None


def test_an_autograd_functions_parameters_leave_out_ctx_only_where_forward_takes_it():
    assert list(call_signature(_Scale.apply).parameters) == ["x", "weight", "eps", "reduction"]
    assert list(call_signature(_ScaleNoCtx.apply).parameters) == ["x", "weight", "eps"]
    check_call(_ScaleNoCtx.apply, _call("f(X, None, eps)"), ("X", "eps"), "--variant a")
    # a recorded call's arguments are named by the same parameters, `argI` past them or where none are read
    assert parameter_names(_ScaleNoCtx.apply, 4) == ["x", "weight", "eps", "arg3"]
    assert parameter_names(_Scale.apply, 2) == ["x", "weight"]
    assert parameter_names(torch.add, 2) == ["arg0", "arg1"]   # a builtin whose signature Python cannot read


def test_a_result_without_a_gradient_is_a_forward_only_op():
    x = torch.ones(2, requires_grad=True)
    assert differentiable_result(x * 2, "here") is not None
    with pytest.raises(NoGradient, match="forward-only"):
        differentiable_result((x * 2).detach(), "here")


def test_an_output_is_copied_only_where_its_values_survive_unchanged():
    from variants.ops import _copy_checked
    buffer = torch.empty((), dtype=torch.float32)
    loss = torch.tensor(1.0 / 3.0, dtype=torch.bfloat16)
    _copy_checked(buffer, loss, "loss")   # bfloat16 into float32: every value kept, its rounding too
    assert buffer.item() == loss.float().item() and buffer.item() != 1.0 / 3.0
    with pytest.raises(OpCallError, match="the op returned loss as torch.float64"):
        _copy_checked(buffer, torch.tensor(0.5, dtype=torch.float64), "loss")   # a rounding cast: refused
    with pytest.raises(OpCallError, match=r"returned y as torch.float32 \(3,\)"):
        _copy_checked(torch.empty(2), torch.ones(3), "y")
