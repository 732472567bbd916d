"""The numerics comparison: real variants pass, planted faults are caught and named."""
import pytest
import torch

from compare.checks import numerics
from compare.runtime.backend import configure
from tests.planted import mutant
from variants import registry
from variants.group_norm import FAMILY, Shape
import variants.group_norm.explicit_offset as explicit_offset
import variants.group_norm.pointer_mutation as pointer_mutation

BACKEND = configure("auto")
REG = registry()
SHAPE = Shape(2, 8, 2, (24,))           # 4 channels per group, 96 elements per group
ODD = Shape(1, 6, 2, (5, 7))            # hidden 105: not a power of two


def run(variants, shape=SHAPE, dtype=torch.float32, seeds=(0, 1)):
    return numerics.run_case(FAMILY, variants, shape, dtype, BACKEND, seeds)


def by_name(case):
    return {v.variant: v for v in case.variants}


@pytest.mark.parametrize("shape", [SHAPE, ODD], ids=["pow2", "odd"])
def test_every_triton_variant_and_torch_pass(shape):
    names = ["pointer_mutation", "explicit_offset", "explicit_offset_range", "pointer_mutation_tlrange", "flat", "torch"]
    case = run([REG.get(n) for n in names], shape)
    for v in case.variants:
        assert v.status == "pass", (v.variant, v.reasons)
        assert {e.output for e in v.outputs} == {"y", "mean", "rstd"}
        assert all(e.unwritten == 0 and e.nan == 0 for e in v.outputs)


def test_seed_pair_is_bitwise_identical_here():
    case = run([REG.get("pointer_mutation"), REG.get("explicit_offset")])
    assert [p.output for p in case.pairs] == ["y", "mean", "rstd"]
    assert all(p.equal and p.first_diff is None for p in case.pairs)


def test_off_by_one_mask_is_caught_as_unwritten(tmp_path):
    bad = mutant(tmp_path, explicit_offset, "off_by_one", "mask = offsets < hidden_per_channel\n",
                 "mask = offsets < hidden_per_channel - 1\n")
    case = run([REG.get("explicit_offset"), bad])
    result = by_name(case)["off_by_one"]
    assert result.status == "fail"
    y = {e.output: e for e in result.outputs}["y"]
    # one element per channel, per trial
    assert y.unwritten == SHAPE.batch * SHAPE.channels * 2
    assert any(r.startswith("y:") and "never written" in r for r in result.reasons)
    assert by_name(case)["explicit_offset"].status == "pass"
    pair = next(p for p in case.pairs if p.output == "y")
    assert not pair.equal and pair.first_diff == (0, 0, SHAPE.spatial[0] - 1)


def test_last_channel_of_group_left_unwritten_is_caught(tmp_path):
    bad = mutant(tmp_path, pointer_mutation, "skip_last_channel",
                 "tl.range(first_channel, first_channel + channels_per_group)",
                 "tl.range(first_channel, first_channel + channels_per_group - 1)")
    result = by_name(run([bad]))["skip_last_channel"]
    y = {e.output: e for e in result.outputs}["y"]
    assert result.status == "fail"
    assert y.unwritten == SHAPE.batch * SHAPE.num_groups * SHAPE.spatial[0] * 2
    assert {e.output: e for e in result.outputs}["mean"].unwritten == 0


def test_neighbouring_channel_weight_is_caught(tmp_path):
    bad = mutant(tmp_path, explicit_offset, "neighbour_weight", "w = tl.load(W_ptr + channel)",
                 "w = tl.load(W_ptr + (channel ^ 1))")
    result = by_name(run([bad]))["neighbour_weight"]
    y = {e.output: e for e in result.outputs}["y"]
    assert result.status == "fail"
    assert y.unwritten == 0 and y.beyond_tol > y.numel // 2
    assert any("beyond rtol" in r for r in result.reasons)


def test_crashing_variant_is_reported_and_others_still_run(tmp_path):
    bad = mutant(tmp_path, explicit_offset, "crashes", "mean, rstd = group_statistics(",
                 "mean, rstd = undefined_helper(")
    case = run([REG.get("pointer_mutation"), bad])
    assert by_name(case)["crashes"].status == "error"
    assert "undefined_helper" in by_name(case)["crashes"].reasons[0]
    assert by_name(case)["pointer_mutation"].status == "pass"
    assert case.pairs == ()


def test_gpu_only_variant_is_listed_as_not_run_without_gpu():
    if BACKEND.gpu:
        pytest.skip("this machine has a GPU, so inductor runs")
    case = run([REG.get("torch"), REG.get("inductor")])
    inductor = by_name(case)["inductor"]
    assert inductor.status == "not_run" and "GPU" in inductor.reasons[0]


def test_poison_marks_only_unwritten_elements():
    t = numerics.poison_(torch.empty(10))
    t[3] = float("nan")      # a computed NaN is not "unwritten"
    t[4] = 1.0
    mask = numerics.unwritten_mask(t)
    assert mask.sum() == 8 and not mask[3] and not mask[4]
    for dtype in (torch.float16, torch.bfloat16):
        assert torch.isnan(numerics.poison_(torch.empty(4, dtype=dtype))).all()


def test_measure_counts_nan_and_tolerance():
    ref = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    out = torch.tensor([1.0, 2.0 + 1e-3, float("nan"), 4.0])
    e = numerics.measure(out, ref, "y")
    assert e.nan == 1 and e.nonfinite_mismatch == 1 and e.beyond_tol == 2
    assert e.max_abs == pytest.approx(1e-3, rel=1e-3)
    assert not e.ok


def test_ulp_matches_nextafter_for_float32():
    values = torch.tensor([1.0, 3.5, 1e-3, 1e30, 1e-40], dtype=torch.float64)
    spacing = numerics.ulp(values, torch.float32)
    as32 = values.to(torch.float32)
    expected = (torch.nextafter(as32, torch.tensor(float("inf"))) - as32).to(torch.float64)
    assert torch.equal(spacing, expected)


def test_bitwise_counts_signed_zero():
    a = torch.tensor([0.0, 1.0, 2.0])
    b = torch.tensor([-0.0, 1.0, 2.0])
    assert numerics.bitwise(a, b) == (1, (0,), 0.0)
    assert numerics.bitwise(a, a.clone()) == (0, None, 0.0)
    assert numerics.bitwise(a, torch.tensor([0.0, float("nan"), 2.5])) == (2, (1,), float("inf"))


def _jittery(name: str, ulps: int, salt: list):
    """torch's forward with y moved by up to `ulps` float32 ULPs at random, differently on every call:
    an output that is not deterministic, like an atomic add's."""
    import dataclasses
    torch_variant = REG.get("torch")

    def run(inputs, out, shape):
        torch_variant.run(inputs, out, shape)
        salt.append(len(salt))
        g = torch.Generator().manual_seed(1000 + len(salt))
        steps = torch.randint(-ulps, ulps + 1, out["y"].shape, generator=g)
        out["y"].copy_(out["y"] + steps * torch.finfo(torch.float32).eps * out["y"].abs())
    return dataclasses.replace(torch_variant, name=name, run=run, why="torch's forward with run-to-run jitter (test)")


def test_difference_within_run_to_run_spread_is_reported_as_such():
    salt: list = []
    case = run([_jittery("jitter_a", 2, salt), _jittery("jitter_b", 2, salt), REG.get("torch")])
    spread = {s.output: s for s in by_name(case)["jitter_a"].spread}
    assert spread["y"].n_diff > 0 and spread["mean"].n_diff == 0
    pair = {(p.a, p.b, p.output): p for p in case.pairs}
    assert pair[("jitter_a", "jitter_b", "y")].verdict == "within run-to-run spread"
    assert pair[("jitter_a", "jitter_b", "mean")].verdict == "identical"
    # torch run twice gives the same bits: no spread of its own
    assert by_name(case)["torch"].spread and all(s.n_diff == 0 for s in by_name(case)["torch"].spread)


def test_difference_beyond_run_to_run_spread_differs():
    salt: list = []
    case = run([_jittery("small", 1, salt), _jittery("large", 40, salt)])
    y = next(p for p in case.pairs if p.output == "y")
    assert y.spread_n_diff > 0 and y.verdict == "differ"   # B noisier than A: not explained by A's spread
    assert y.max_abs > 2 * next(s for s in by_name(case)["small"].spread if s.output == "y").max_abs
