"""single_read (variants/group_norm/single_read.py) against float64 on every input kind, through every
path (resident, streamed, split), under the interpreter; and a planted fault that the same check catches."""
import pytest
import torch

from compare.runtime import backend

backend.configure("cpu")

import variants.group_norm as gn  # noqa: E402
from tests.planted import load_mutated  # noqa: E402
from variants.group_norm import single_read  # noqa: E402
from tests.sampled import sampled

TOL = {torch.float32: (1.3e-6, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}
CONFIGS = {
    "default": None,
    "streamed": single_read.Config("streamed", 64, 4),
    "split": single_read.Config("split", 64, 4, slices=3),
    "split_in_order": single_read.Config("split", 128, 4, slices=2, reverse=False),
}
SHAPES = (gn.Shape(2, 8, 2, (16,)), gn.Shape(3, 6, 2, (7, 5)), gn.Shape(2, 6, 2, (100,)))


def _run(module, config, inputs, shape):
    outputs = gn.alloc_outputs(shape, inputs.x.dtype, "cpu")
    for t in outputs.values():
        t.fill_(float("nan"))   # an unwritten element stays NaN and fails the check
    if config is None:
        module.launch(inputs, outputs, shape)
    else:
        module.launch_with(config, inputs, outputs, shape)
    return outputs


def _problems(outputs, ref, dtype):
    """What differs from the float64 reference beyond the dtype's tolerance, per output."""
    rtol, atol = TOL[dtype]
    found = []
    for name in gn.FAMILY.outputs:
        out, r = outputs[name].double(), ref[name]
        if not torch.equal(torch.isfinite(out), torch.isfinite(r)):
            found.append(f"{name}: non-finite where the reference is finite (or the reverse)")
            continue
        both = torch.isfinite(r)
        tol = atol + (rtol if name == "y" else 1.3e-6) * r[both].abs()
        if bool(((out - r)[both].abs() > tol).any()):
            found.append(f"{name}: beyond tolerance, max abs {float((out - r)[both].abs().max()):.2e}")
    return found


@pytest.mark.parametrize("path", sampled(CONFIGS))
@pytest.mark.parametrize("kind", [k for k in gn.INPUT_KINDS if k != "huge"])
@pytest.mark.parametrize("dtype", sampled([torch.float32, torch.bfloat16]))
def test_within_tolerance_of_float64_on_every_input_kind(path, kind, dtype):
    assert problems_on_every_shape(single_read, CONFIGS[path], kind, dtype) == []


def problems_on_every_shape(module, config, kind, dtype, shapes=SHAPES):
    """What differs from the float64 reference, shape by shape, on `kind` inputs of `dtype` through `config`."""
    found = []
    for shape in shapes:
        inputs = gn.make_inputs(shape, dtype, "cpu", 3, kind)
        found += [f"{shape}: {p}" for p in _problems(_run(module, config, inputs, shape),
                                                     gn.FAMILY.reference(inputs, shape), dtype)]
    return found


def huge_problems(module, config):
    """Near the top of float32's range every sum of squares overflows; a scaled two-pass does not. What is
    wrong with `module`'s output on huge inputs: y is checked against a float64 formula on the deviations
    (the float64 group_norm reference itself loses accuracy there), the mean to within the values' magnitude
    (the mean of values of both signs is only as exact as that)."""
    shape = SHAPES[2]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 5, "huge")
    out = _run(module, config, inputs, shape)
    x = inputs.x.double().view(shape.batch, shape.num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    xhat = ((x - mean) / (x - mean).pow(2).mean(-1, keepdim=True).sqrt()).view_as(inputs.x)
    expected = xhat * inputs.weight.double().view(1, -1, 1) + inputs.bias.double().view(1, -1, 1)
    found = []
    if not (bool(torch.isfinite(out["y"]).all()) and bool(torch.isfinite(out["rstd"]).all())):
        found.append("non-finite y or rstd")
    elif float((out["y"].double() - expected).abs().max()) >= 1e-5:
        found.append(f"y off by {float((out['y'].double() - expected).abs().max()):.2e}")
    if not bool(((out["mean"].double() - mean.view(shape.batch, -1)).abs() < 1e-6 * x.abs().amax(-1)).all()):
        found.append("mean beyond 1e-6 of the values' magnitude")
    return found


@pytest.mark.parametrize("path", CONFIGS)
def test_huge_values_stay_finite_and_close(path):
    assert huge_problems(single_read, CONFIGS[path]) == []


@pytest.mark.parametrize("kind", ["large_mean", "all_equal"])
def test_within_tolerance_where_the_one_pass_seed_kernel_writes_nan(kind):
    assert problems_where_the_seed_writes_nan(single_read, kind) == []


def problems_where_the_seed_writes_nan(module, kind):
    """`module`'s default launch against float64 on inputs of `kind` where the seed's one-pass
    E[x^2] - E[x]^2 cancels to NaN (checked first: the premise)."""
    from variants.group_norm import pointer_mutation
    shape = gn.Shape(4, 8, 2, (512,))   # the seed's group size, 2,048
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 1, kind)
    seed_out = gn.alloc_outputs(shape, torch.float32, "cpu")
    gn.FAMILY.launch_forward(pointer_mutation.group_norm_forward, inputs, seed_out, shape)
    assert not bool(torch.isfinite(seed_out["y"]).all())
    return _problems(_run(module, None, inputs, shape), gn.FAMILY.reference(inputs, shape), torch.float32)


def test_all_equal_group_gives_exactly_the_bias():
    shape = gn.Shape(1, 4, 2, (32,))
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 1, "all_equal")
    out = _run(single_read, None, inputs, shape)
    constant_group = out["y"].view(1, 2, 2, 32)[0, 0]   # group 0 holds one value repeated
    assert torch.equal(constant_group, inputs.bias[:2].view(2, 1).expand(2, 32))


@pytest.mark.parametrize("old, new", [("m2 = m2 + tl.sum(dev * dev, axis=0) + delta", "m2 = m2 + delta"),
                                      ("_finalize(tl.sum(dev * dev, axis=0), hidden_size,",
                                       "_finalize(tl.sum(dev * dev, axis=0), hidden_size - 1,")])
def test_a_planted_fault_is_caught(tmp_path, old, new):
    """The same check fails on single_read with one edit (the streamed path drops the in-block spread;
    the resident path divides by n - 1, the unbiased variance): the tests above could have failed."""
    module, _ = load_mutated(tmp_path, single_read, "single_read_planted", old, new, 1)
    shape = SHAPES[2]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 3, "normal")
    config = CONFIGS["streamed"] if "delta" in old else None
    assert _problems(_run(module, config, inputs, shape), gn.FAMILY.reference(inputs, shape), torch.float32) != []


def test_choose_holds_small_groups_in_registers_and_streams_large_ones():
    assert single_read.choose(2048, 4).path == "resident"
    assert single_read.choose(40960, 10).path != "resident"
    assert single_read.choose(2048, 4).block == 2048
