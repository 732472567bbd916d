"""The cross_entropy family on the operand protocol, on the CPU interpreter: an int64 operand and a scalar or
per-row loss go through numerics unchanged; every variant passes forward and backward on every input kind;
planted faults (a sum not rescaled, an ignored row left unwritten) are caught; bad input is one line."""
import pytest
import torch

import main
from compare.checks import numerics
from compare.runtime.backend import configure
from tests.planted import load_mutated
from variants import registry

BACKEND = configure("auto")
REG = registry()
CE = REG.family("cross_entropy")
SEED = 6   # two of six rows ignored


def shape(text: str, max_block: int = 128):
    """A --shape, its rows read in chunks of `max_block` (several per row, as on a 256k vocabulary)."""
    import dataclasses
    return dataclasses.replace(CE.parse_shape(text).shapes[0], max_block=max_block)


def run(s, direction="forward", kind="normal", extra=(), names=("two_pass", "online", "torch")):
    variants = [REG.get(n, "cross_entropy") for n in names] + list(extra)
    return numerics.run_case(CE, variants, s, torch.float32, BACKEND, (SEED,), kind, direction=direction,
                             reference="torch")


def status(case):
    return {v.variant: (v.status, v.reasons) for v in case.variants}


# a per-row loss with smoothing where the kind's values are hostile, a scalar mean where NaN must reach it
@pytest.mark.parametrize("kind, text", [("normal", "6,300,none,0.1"), ("large", "6,300,none,0.1"),
                                        ("all_equal", "6,300,mean"), ("all_ignored", "6,300,mean"),
                                        ("nonfinite", "6,300,mean")])
def test_every_variant_passes_forward_and_backward_on_every_input_kind(kind, text):
    for direction in ("forward", "backward"):
        case = run(shape(text), direction, kind)
        assert all(s == "pass" for s, _ in status(case).values()), (direction, status(case))
    inputs = CE.make_inputs(shape(text), torch.float32, "cpu", 0, kind)
    assert inputs.target.dtype == torch.int64 and inputs.X.dtype == torch.float32
    assert CE.alloc_outputs(shape(text), torch.float32, "cpu")["loss"].shape == (() if "mean" in text else (6,))


def test_all_ignored_targets_give_a_nan_mean_in_every_variant_and_the_reference():
    s = shape("6,300,mean")
    inputs = CE.make_inputs(s, torch.float32, "cpu", 0, "all_ignored")
    assert (inputs.target == s.ignore_index).all() and torch.isnan(CE.reference(inputs, s)["loss"])
    case = run(s, kind="all_ignored")
    loss = {v.variant: next(e for e in v.outputs if e.output == "loss") for v in case.variants}
    assert all(e.nan == 1 and e.nonfinite_mismatch == 0 for e in loss.values()), loss


def test_a_running_sum_not_rescaled_when_the_max_grows_is_caught(tmp_path):
    import variants.cross_entropy.online as good
    bad, _ = load_mutated(tmp_path, good, "no_rescale", "row_sum * tl.exp(row_max - new_max)", "row_sum", 1)
    variant = CE.triton_variant("no_rescale", "planted: the running sum kept at the old max", str(tmp_path),
                                forward=bad.cross_entropy_forward)
    s = shape("6,300,sum", max_block=32)
    inputs = CE.make_inputs(s, torch.float32, "cpu", SEED)
    valid = inputs.X[inputs.target != s.ignore_index]
    assert (valid.argmax(dim=1) >= 32).any()   # some row's max lies beyond its first chunk: the sum must rescale
    result = status(run(s, extra=[variant], names=("online",)))
    assert result["online"][0] == "pass"
    assert result["no_rescale"][0] == "fail" and any(r.startswith("loss:") for r in result["no_rescale"][1])


def test_an_ignored_row_left_holding_its_logits_is_caught_as_unwritten(tmp_path):
    from variants.cross_entropy import common, two_pass
    arithmetic, _ = load_mutated(tmp_path, common, "keeps_logits", "        tl.store(x_row + start + cols, "
                                 "tl.zeros((BLOCK_SIZE,), x_row.dtype.element_ty), mask=start + cols < n_cols)\n",
                                 "        pass\n", 1)
    bad, _ = load_mutated(tmp_path, two_pass, "keeps_logits_kernel", "from variants.cross_entropy.common import",
                          f"from {arithmetic.__name__} import", 1)
    variant = CE.triton_variant("keeps_logits", "planted: ignored rows not zeroed", str(tmp_path),
                                forward=bad.cross_entropy_forward)
    s = shape("6,300,none")
    ignored = int((CE.make_inputs(s, torch.float32, "cpu", SEED).target == s.ignore_index).sum())
    assert ignored == 2
    result = {v.variant: v for v in run(s, extra=[variant], names=("two_pass",)).variants}
    x_grad = next(e for e in result["keeps_logits"].outputs if e.output == "x_grad")
    assert result["keeps_logits"].status == "fail" and x_grad.unwritten == ignored * 300
    assert result["two_pass"].status == "pass" and result["two_pass"].writes == ()


@pytest.mark.parametrize("args, said", [
    (["--inputs", "huge"], "unknown input kind 'huge'"),
    (["--shape", "4,300,median"], "reduction 'median' is not one of mean, sum, none"),
    (["--shape", "4,300,mean,1"], "label smoothing must be a number in [0, 1)"),
    (["--shape", "4,50,mean,0,7"], "is not ROWS,V[,REDUCTION[,SMOOTHING]]"),
])
def test_bad_input_is_one_line_and_exit_2(args, said, capsys):
    assert main.main(["compare", "--family", "cross_entropy", "--check", "numerics", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kernel-ab: error:") and said in err[0], err


def test_the_in_place_op_passes_and_its_documented_write_over_x_is_not_reported_in_either_pass():
    from compare.comparison import pipeline
    from variants.cross_entropy.inplace_op import online_cross_entropy
    inputs = CE.make_inputs(shape("6,300,none"), torch.float32, "cpu", SEED)
    x = inputs.X.clone()
    online_cross_entropy(x, inputs.target, reduction="none")
    assert not torch.equal(x, inputs.X)   # it does write the gradient over the logits it was given
    request = pipeline.Request(("online_op",), family="cross_entropy", shape="6,300,none", trials=1, inputs="normal",
                               checks=("numerics", "backward"),
                               external=("online_op=variants/cross_entropy/inplace_op.py::online_cross_entropy",))
    with pipeline.loaded(request, REG) as (request, reg, failed):
        assert failed == ()
        report = pipeline.run(request, reg, BACKEND)
    found = {(c.direction, v.variant): (v.status, v.writes) for c in report.numerics.cases for v in c.variants}
    assert found[("forward", "online_op")] == ("pass", ()) and found[("backward", "online_op")] == ("pass", ())


def test_the_confident_kind_puts_the_target_far_above_the_rest_where_a_16_bit_gradient_cancels():
    from variants.cross_entropy import shapes
    shape = shapes.CEShape(64, 128256)
    gen = torch.Generator().manual_seed(0)
    logits, target = shapes.confident(shape, gen, torch.bfloat16), shapes.targets_confident(shape, gen, torch.bfloat16)
    kept = target != shape.ignore_index
    assert 0 < int((~kept).sum()) < shape.rows // 2               # some rows ignored, as in every kind
    rows = torch.arange(shape.rows)[kept]
    p = torch.softmax(logits[kept], dim=1)[torch.arange(len(rows)), target[kept]]
    assert bool((p > 0.99).all()) and bool((p < 1).all())         # confident, not certain
    n = int(kept.sum())
    exact = (p - 1) / n
    # the target's gradient rounded to bfloat16 before the -1 is added keeps almost nothing; folded in first, all
    rounded_first = ((p / n).to(torch.bfloat16).double() - 1 / n).to(torch.bfloat16).double()
    folded_first = exact.to(torch.bfloat16).double()
    assert float(((rounded_first - exact) / exact).abs().median()) > 0.5
    assert float(((folded_first - exact) / exact).abs().max()) < 2 ** -7
