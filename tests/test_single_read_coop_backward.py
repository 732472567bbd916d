"""single_read_coop's own backward (variants/group_norm/single_read_coop_backward.py) under the interpreter:
dx, dW and dB against float64 autograd on every input kind and on tiles of every shape it takes (rows of
a channel summed before their atomic add, one-column tiles, a masked last row); the saved float32 mean
corrected, where the shared backward fed the same statistics is off; planted faults the same check
catches; the tile rules. Split groups waiting for each other need a GPU: tests/test_gpu.py runs them."""
import pytest
import torch

from compare.runtime import backend

backend.configure("cpu")

import variants.group_norm as gn  # noqa: E402
from tests.planted import load_mutated  # noqa: E402
from variants.group_norm import single_read_coop as coop  # noqa: E402
from variants.group_norm import single_read_coop_backward as cb  # noqa: E402
from tests.sampled import sampled

SHAPES = {
    "seed_like": gn.Shape(3, 8, 2, (512,)),       # rows of 512 (2 warps), one row a channel
    "rows_summed": gn.Shape(2, 2, 1, (2048,)),    # 4 rows of 1,024, 2 a channel: summed before the atomic add
    "one_column": gn.Shape(3, 6, 2, (7, 5)),      # 35 a channel: 1-wide rows, a masked tail (105 of 128)
    "narrow": gn.Shape(2, 12, 4, (24,)),          # 24 a channel: 8-wide rows
}


def run_backward(module, inputs, shape, saved=None):
    """dx, dW, dB of `module`'s backward launcher, from single_read_coop's forward statistics (or `saved`)."""
    if saved is None:
        saved = gn.alloc_outputs(shape, inputs.x.dtype, "cpu")
        coop.launch(inputs, saved, shape)
    grads = gn.FAMILY.alloc_grads(shape, inputs.x.dtype, "cpu")
    for g in grads.values():
        g.fill_(float("nan"))   # an unwritten element stays NaN and fails the check
    module.launch_coop_backward(module.coop_backward, inputs, saved, grads, shape)()
    return grads


def problems(grads, ref):
    """What differs from the float64 reference beyond float32's tolerance, per gradient."""
    found = []
    for name in ("dx", "dW", "dB"):
        out, r = grads[name].double(), ref[name]
        if not torch.equal(torch.isfinite(out), torch.isfinite(r)):
            found.append(f"{name}: non-finite where the reference is finite (or the reverse)")
            continue
        both = torch.isfinite(r)
        if bool(((out - r)[both].abs() > 1e-5 + 1.3e-6 * r[both].abs()).any()):
            found.append(f"{name}: beyond tolerance, max abs {float((out - r)[both].abs().max()):.2e}")
    return found


@pytest.mark.parametrize("kind", [k for k in gn.INPUT_KINDS if k != "tiny"])
@pytest.mark.parametrize("name", sampled(SHAPES, fast=2))
def test_within_tolerance_of_float64_on_every_input_kind(name, kind):
    shape = SHAPES[name]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 2, kind)
    assert problems(run_backward(cb, inputs, shape), gn.FAMILY.reference_backward(inputs, shape)) == []


def test_on_tiny_inputs_at_least_as_accurate_as_the_shared_backward():
    """On tiny inputs rstd is ~1/sqrt(eps): dx = (W dy - c2 - x_hat c1) * rstd magnifies float32 rounding
    where W dy and c2 nearly cancel, and on some draws every backward, torch's too, misses the element-wise
    tolerance. The family's accuracy verdict over several draws is the fair test there."""
    from compare.checks import numerics
    from variants import registry
    reg = registry()
    case = numerics.run_case(gn.FAMILY, [reg.get("pointer_mutation"), reg.get("single_read_coop")], SHAPES["narrow"],
                             torch.float32, backend.configure("cpu"), (0, 1, 2, 3), direction="backward",
                             input_kind="tiny")
    verdict = next(v for v in case.verdicts if (v.a, v.b) == ("pointer_mutation", "single_read_coop"))
    assert verdict.accuracy in ("as accurate", "more accurate"), verdict


def test_the_shapes_take_the_tiles_they_are_named_for():
    assert cb.describe_backward(SHAPES["seed_like"], "cpu") == "resident b2048 w2, tile [4, 512]"
    assert cb.rows_per_channel(4, 1024, 2048) == 2 and cb.rows_per_channel(4, 512, 512) == 1
    assert cb.describe_backward(SHAPES["one_column"], "cpu") == "resident b128 w1, tile [128, 1]"
    assert cb.describe_backward(SHAPES["narrow"], "cpu") == "resident b128 w1, tile [16, 8]"
    assert cb.choose(65536).split and not cb.choose(65536, "cpu").split


def test_a_large_mean_is_corrected_where_the_shared_backward_is_off():
    """The saved float32 mean is off by half a unit in its last place; on a mean of ~1e4 that is a large
    part of the spread. The shared kernel's gradients carry it (the premise, checked); these do not."""
    from variants.group_norm.backward import group_norm_backward
    shape = SHAPES["seed_like"]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 1, "large_mean")
    saved = gn.alloc_outputs(shape, torch.float32, "cpu")
    coop.launch(inputs, saved, shape)
    ref = gn.FAMILY.reference_backward(inputs, shape)
    shared = gn.FAMILY.alloc_grads(shape, torch.float32, "cpu")
    gn.FAMILY.backward_call(group_norm_backward, inputs, saved, shared, shape)()
    assert problems(shared, ref) != []
    assert problems(run_backward(cb, inputs, shape, saved), ref) == []


@pytest.mark.parametrize("old, new, name, kind", [
    # the mean correction dropped: the saved float32 mean used as it is
    ("corr = sx / hidden_size", "corr = sx * 0.0", "seed_like", "large_mean"),
    # a row's channel one off
    ("w = tl.load(W_ptr + first_channel + row_start // HPC,", "w = tl.load(W_ptr + first_channel + (row_start + WIDTH) // HPC,",
     "seed_like", "normal"),
    # only the first row of each run of a channel's rows added into dW
    ("dw = tl.sum(tl.reshape(dw_rows, [CHANNELS, RPC]), axis=1)",
     "dw = tl.max(tl.reshape(dw_rows, [CHANNELS, RPC]), axis=1)", "rows_summed", "normal"),
    # c2 divided by one element too many
    ("c2 = (c2 / hidden_size).to(tl.float32)", "c2 = (c2 / (hidden_size + 1)).to(tl.float32)", "one_column", "normal")])
def test_a_planted_fault_is_caught(tmp_path, old, new, name, kind):
    module, _ = load_mutated(tmp_path, cb, "coop_backward_planted", old, new, 1)
    shape = SHAPES[name]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 3, kind)
    assert problems(run_backward(module, inputs, shape), gn.FAMILY.reference_backward(inputs, shape)) != []


def test_the_family_runs_it_as_single_read_coops_backward():
    variant = next(v for v in gn.FAMILY.variants() if v.name == "single_read_coop")
    assert variant.own_kernels == ("forward", "backward")
    assert variant.backward_kernel is cb.coop_backward and variant.backward_launcher is cb.launch_coop_backward
    # the variants of other files run the shared backward; single_read_coop_reread imports this one
    others = [v for v in gn.FAMILY.variants() if v.kind == "triton" and not v.name.startswith("single_read_coop")]
    assert others and all(v.backward_kernel is None for v in others)


def test_a_config_that_cannot_hold_the_group_is_refused():
    shape = SHAPES["seed_like"]
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 0)
    saved = gn.alloc_outputs(shape, torch.float32, "cpu")
    coop.launch(inputs, saved, shape)
    grads = gn.FAMILY.alloc_grads(shape, torch.float32, "cpu")
    with pytest.raises(ValueError, match="cannot hold a group of 2048"):
        cb.launch_backward_with(cb.Config(1024, 1), cb.coop_backward, inputs, saved, grads, shape)
