"""The operand protocol (variants/operands.py) on a family that only declares: an int64 operand drawn as
integers and sealed bit for bit, a 0-d loss compared against float64 forward and backward, buffers and
bytes from the declarations, the record's attribute access; integer outputs poisoned with their own value."""
import pytest
import torch

from compare.checks import numerics
from compare.runtime import sealing
from compare.runtime.backend import configure
from variants.baselines import torch_variants
from variants.family import Family
from variants.inputs import norm_operands
from variants.operands import Operand, Output
from variants.ops import op_variant
from variants.rows import RowShape, parse_shape

BACKEND = configure("auto")


def targets(shape, gen, dtype):
    return torch.randint(shape.cols, (shape.rows,), generator=gen)


def pick_op(x, t):
    return -x.gather(1, t[:, None]).mean()


class Pick(Family):
    """loss = -mean(x[row, t[row]]): a scalar from a float operand and an integer one."""

    name, default_pair, presets = "pick", ("torch", "torch"), {"default": parse_shape("5,12")}
    operands = (Operand("x", differentiable=True), Operand("t", size="rows", dtype=torch.int64, draw=targets))
    outputs = (Output("loss", size="scalar", dtype=torch.float32, upstream="dloss"),)
    grads = (Output("dx", of="x"),)
    torch_op = staticmethod(pick_op)

    def parse_shape(self, text, eps=1e-6):
        return parse_shape(text, eps)

    def shape_from_dict(self, d):
        return RowShape(**d)

    def reference(self, inputs, shape):
        return {"loss": pick_op(inputs.x.double(), inputs.t)}

    def launch_forward(self, kernel, inputs, outputs, shape):
        raise NotImplementedError("no kernels")

    def variants(self):
        return torch_variants(self.name, pick_op, pick_op, lambda i, s: (i.x.float(), i.t),
                              lambda r, out, s: out["loss"].copy_(r), "-x.gather(1, t).mean()")


PICK = Pick()
SHAPE = PICK.preset("default").shapes[0]


def test_an_integer_operand_is_drawn_as_integers_and_sealed_bit_for_bit():
    inputs = PICK.make_inputs(SHAPE, torch.float16, "cpu", 7)
    assert inputs.t.dtype == torch.int64 and inputs.x.dtype == torch.float16 and inputs.dloss.shape == ()
    assert 0 <= int(inputs.t.min()) and int(inputs.t.max()) < SHAPE.cols
    assert torch.equal(PICK.make_inputs(SHAPE, torch.float16, "cpu", 7).t, inputs.t)   # the seed decides
    copy = sealing.sealed_copy(inputs)
    assert copy.t is not inputs.t and torch.equal(copy.t, inputs.t) and sealing.writes(inputs, copy) == ()
    copy.t[0] += 1
    assert [(w.input, w.changed) for w in sealing.writes(inputs, copy)] == [("t", 1)]
    meta = PICK.make_inputs(SHAPE, torch.float32, "meta", 0)
    assert meta.t.dtype == torch.int64 and meta.t.shape == (SHAPE.rows,)


def test_a_float_generator_for_an_integer_operand_is_refused():
    class Rounded(Pick):
        operands = (Operand("x", differentiable=True),
                    Operand("t", size="rows", dtype=torch.int64, draw=lambda s, g, d: torch.zeros(s.rows, dtype=torch.float64)))
    with pytest.raises(ValueError, match="operand t is torch.int64, its generator gave torch.float64"):
        Rounded().make_inputs(SHAPE, torch.float32, "cpu", 0)


def test_a_scalar_loss_is_compared_forward_and_backward_and_a_wrong_one_fails():
    wrong = op_variant("wrong", lambda x, t: 1.01 * pick_op(x.float(), t), None, PICK, "planted: 1% off", "t", "t")
    for direction, outputs in (("forward", {"loss": 1}), ("backward", {"dx": SHAPE.numel})):
        case = numerics.run_case(PICK, PICK.variants()[:1] + [wrong], SHAPE, torch.float32, BACKEND, (0, 1),
                                 direction=direction)
        found = {v.variant: v for v in case.variants}
        assert {e.output: e.numel // 2 for e in found["torch"].outputs} == outputs
        assert found["torch"].status == "pass" and found["wrong"].status == "fail", found
        assert found["torch"].writes == () and found["wrong"].writes == ()


def test_a_gradient_of_an_operand_not_declared_differentiable_is_refused():
    class Undifferentiable(Pick):
        grads = (Output("dt", of="t"),)
    with pytest.raises(ValueError, match="dt is the gradient of 't', not a differentiable operand"):
        Undifferentiable()


def test_buffers_and_bytes_come_from_the_declarations():
    out, grads = PICK.alloc_outputs(SHAPE, torch.float16, "cpu"), PICK.alloc_grads(SHAPE, torch.float16, "cpu")
    assert (out["loss"].shape, out["loss"].dtype) == ((), torch.float32)
    assert (grads["dx"].shape, grads["dx"].dtype) == (SHAPE.tensor_shape, torch.float16)
    x, t = SHAPE.numel * 2, SHAPE.rows * 8
    assert PICK.bytes_moved(SHAPE, torch.float16, "forward") == x + t + 4
    assert PICK.bytes_moved(SHAPE, torch.float16, "backward") == 4 + x + t + x   # dloss: float32, as the loss
    # full: a pass that fuses its forward and backward moves the operands, its result, dloss and dx once
    assert PICK.bytes_moved(SHAPE, torch.float16, "full") == x + t + 4 + 4 + x
    assert PICK.op_params == ("x", "t") and PICK.op_grads == {"dx": "x"}


def test_the_record_reads_by_name_and_the_norm_families_hand_made_operands_build_one():
    legacy = norm_operands(torch.ones(2, 3), torch.ones(3), None, seed=4, kind="normal", dy=torch.zeros(2, 3))
    assert legacy.weight.shape == (3,) and legacy.bias is None and legacy.dtype == torch.float32
    assert set(sealing.tensors(legacy)) == {"x", "weight", "dy"} and legacy.upstream == ("dy",)
    with pytest.raises(AttributeError, match="no operand 'w'"):
        legacy.w
    assert legacy.replace(x=torch.zeros(2, 3)).x.sum() == 0 and legacy.x.sum() == 6


def test_integer_outputs_are_poisoned_with_a_value_no_index_takes():
    t = numerics.poison_(torch.empty(4, dtype=torch.int64))
    t[1] = 3
    assert numerics.unwritten_mask(t).tolist() == [True, False, True, True]
    e = numerics.measure(t, torch.tensor([0.0, 3.0, 0.0, 0.0], dtype=torch.float64), "idx", torch.float32)
    assert e.unwritten == 3 and e.beyond_tol == 0 and e.rtol == 0.0


def test_cross_entropys_full_floor_leaves_out_the_gradient_its_forward_writes_for_its_backward():
    # inductor's fused forward and backward need not write x_grad nor read it back: the floor of the full pass
    # is the logits and targets read, the loss written, dloss read and dx written, each once
    from variants import registry
    ce = registry().families["cross_entropy"]
    shape = ce.parse_shape("4,32,mean").shapes[0]
    x, t = 4 * 32 * 4, 4 * 8
    assert ce.bytes_moved(shape, torch.float32, "full") == x + t + 4 + 4 + x
    assert ce.bytes_moved(shape, torch.float32, "forward") == x + t + 4 + x   # x_grad written over the logits
