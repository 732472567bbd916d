"""The cross-entropy kernels on the CPU interpreter, called directly on tiny shapes: loss and the gradient
they write over the logits against torch in float64, for every reduction, with label smoothing, ignored
rows, every row ignored, logits whose exp overflows, and a row holding NaN and +Inf."""
import pytest
import torch

from compare.runtime.backend import configure

configure("auto")

from variants.cross_entropy import common, online, two_pass  # noqa: E402  (after the backend is chosen)
from variants.cross_entropy.reference import reference  # noqa: E402
from variants.cross_entropy import FAMILY  # noqa: E402
from variants.cross_entropy.shapes import CEShape  # noqa: E402

KERNELS = {"two_pass": two_pass.cross_entropy_forward, "online": online.cross_entropy_forward}
# 300 columns in chunks of 128: two full chunks and a masked one, as a 256k vocabulary is read
SHAPE = dict(rows=6, vocab=300, max_block=128)


# seed 1 gives 6 rows one ignored row (about 10% of the rows are ignored)
def run(kernel, shape: CEShape, dtype=torch.float32, kind="normal", seed=1):
    """(loss, gradient written over the logits, float64 reference loss, reference gradient, targets)."""
    drawn = FAMILY.make_inputs(shape, dtype, "cpu", seed, kind)
    x, target = drawn.X, drawn.target
    ref_loss, ref_grad = reference(x, target, shape.ignore_index, shape.label_smoothing, shape.reduction)
    grad = x.clone()
    loss = common.launch(kernel, grad, target, shape.ignore_index, shape.label_smoothing, shape.reduction,
                         shape.max_block)
    return loss, grad, ref_loss, ref_grad, target


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_loss_and_gradient_match_float64_torch(name, reduction, smoothing):
    loss, grad, ref_loss, ref_grad, target = run(KERNELS[name], CEShape(**SHAPE, reduction=reduction,
                                                                        label_smoothing=smoothing))
    assert (target == -100).any() and (target != -100).any()   # the seed gives both kinds of rows
    assert loss.shape == ref_loss.shape and loss.dtype == torch.float32
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad.double(), ref_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", KERNELS)
def test_ignored_rows_have_zero_loss_and_zero_gradient(name):
    loss, grad, _, _, target = run(KERNELS[name], CEShape(**SHAPE, reduction="none"), seed=6)
    ignored = target == -100
    assert ignored.any()
    assert (loss[ignored] == 0).all() and (loss[~ignored] > 0).all()
    assert (grad[ignored] == 0).all() and (grad[~ignored] != 0).any(dim=1).all()


@pytest.mark.parametrize("name", KERNELS)
def test_every_row_ignored_gives_nan_mean_like_torch_and_zero_sum(name):
    loss, grad, ref_loss, ref_grad, _ = run(KERNELS[name], CEShape(**SHAPE), kind="all_ignored")
    assert torch.isnan(ref_loss) and torch.isnan(loss)
    assert (grad == 0).all() and (ref_grad == 0).all()
    loss, _, ref_loss, _, _ = run(KERNELS[name], CEShape(**SHAPE, reduction="sum"), kind="all_ignored")
    assert loss.item() == 0.0 == ref_loss.item()


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_large_logits_whose_exp_overflows_stay_exact(name, dtype):
    shape = CEShape(**SHAPE, reduction="none", label_smoothing=0.1)
    x = FAMILY.make_inputs(shape, dtype, "cpu", 1, "large").X
    assert torch.isinf(torch.exp(x.float()).sum(dim=1)).all()   # the naive sum overflows on every row
    loss, grad, ref_loss, ref_grad, _ = run(KERNELS[name], shape, dtype, "large")
    assert torch.isfinite(loss).all() and torch.isfinite(grad).all()
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=0.0)
    # the interpreter truncates float32 to bfloat16 (a GPU rounds to nearest): one unit in the last place below 1
    torch.testing.assert_close(grad.double(), ref_grad, rtol=0.0, atol=2**-8 if dtype == torch.bfloat16 else 1e-6)


@pytest.mark.parametrize("name", KERNELS)
def test_all_equal_rows_give_log_v_and_a_uniform_softmax(name):
    loss, grad, _, ref_grad, target = run(KERNELS[name], CEShape(**SHAPE, reduction="none"), kind="all_equal")
    valid = target != -100
    torch.testing.assert_close(loss[valid].double(), torch.full((int(valid.sum()),), torch.log(torch.tensor(300.0)),
                                                                dtype=torch.float64), rtol=1e-6, atol=0.0)
    torch.testing.assert_close(grad.double(), ref_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, from the interpreter's inf - inf
@pytest.mark.parametrize("name", KERNELS)
def test_nan_and_inf_in_one_row_make_that_row_nan_and_no_other(name):
    loss, grad, ref_loss, ref_grad, _ = run(KERNELS[name], CEShape(**SHAPE, reduction="none"), kind="nonfinite")
    bad = torch.isnan(ref_loss)
    assert int(bad.sum()) == 1
    assert torch.equal(torch.isnan(loss), bad)
    assert torch.equal(torch.isnan(grad).any(dim=1), torch.isnan(ref_grad).any(dim=1))
    assert torch.isfinite(grad[~bad]).all()


@pytest.mark.parametrize("name", KERNELS)
def test_bfloat16_gradient_is_stored_in_bfloat16_within_its_rounding(name):
    loss, grad, ref_loss, ref_grad, _ = run(KERNELS[name], CEShape(**SHAPE, label_smoothing=0.1), torch.bfloat16)
    assert grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-5)
    # within one unit in the last place (2**-7 relative): the interpreter truncates float32 to bfloat16
    torch.testing.assert_close(grad.double(), ref_grad, rtol=2**-7, atol=1e-6)
