"""single_read_tiled (variants/group_norm/single_read_tiled.py) against float64 on every input kind,
through both paths, under the interpreter; planted faults that the same check catches."""
import pytest
import torch

from tests.test_single_read import (SHAPES, _problems, _run, huge_problems,  # configures the CPU backend first
                                    problems_on_every_shape, problems_where_the_seed_writes_nan)
import variants.group_norm as gn  # noqa: E402
from tests.planted import load_mutated  # noqa: E402
from variants.group_norm import single_read_tiled as tiled  # noqa: E402
from tests.sampled import sampled

CONFIGS = {
    "default": None,
    "streamed": tiled.Config("streamed", 64, 4),
    "streamed_smallest_block": tiled.Config("streamed", 16, 2),
}


@pytest.mark.parametrize("path", sampled(CONFIGS))
@pytest.mark.parametrize("kind", [k for k in gn.INPUT_KINDS if k != "huge"])
@pytest.mark.parametrize("dtype", sampled([torch.float32, torch.bfloat16]))
def test_within_tolerance_of_float64_on_every_input_kind(path, kind, dtype):
    assert problems_on_every_shape(tiled, CONFIGS[path], kind, dtype) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["large_mean", "all_equal"])
def test_within_tolerance_where_the_one_pass_seed_kernel_writes_nan(kind):
    assert problems_where_the_seed_writes_nan(tiled, kind) == []


@pytest.mark.parametrize("path", CONFIGS)
def test_a_group_of_one_huge_value_repeated_gives_exactly_the_bias(path):
    """var = 0 at the top of the range: the scaled rstd would overflow float32; y must still be B."""
    shape = gn.Shape(1, 2, 1, (96,))
    x = torch.full((1, 2, 96), 3.0e37)
    inputs = gn.norm_operands(x, torch.tensor([1.5, -0.5]), torch.tensor([0.25, 2.0]), seed=0, kind="huge")
    out = _run(tiled, CONFIGS[path], inputs, shape)
    assert torch.equal(out["y"], inputs.bias.view(1, 2, 1).expand(1, 2, 96))
    assert float(out["rstd"]) == pytest.approx(1000.0, rel=1e-6)


@pytest.mark.parametrize("old, new, path", [
    ("s2 = s2 * shrink * shrink + b2", "s2 = s2 * shrink * shrink + b2 * 1.01", "streamed"),
    ("_channel_of(row_start, hidden_per_channel, inv_hpc)", "_channel_of(row_start + VEC, hidden_per_channel, inv_hpc)",
     "default"),
    ("rstd, rstd_t = _finalize(s2 / hidden_size - mean_t * mean_t, a, eps)\n    _write_y",
     "rstd, rstd_t = _finalize(s2 / (hidden_size - 1) - mean_t * mean_t, a, eps)\n    _write_y", "default")])
def test_a_planted_fault_is_caught(tmp_path, old, new, path):
    module, _ = load_mutated(tmp_path, tiled, "single_read_tiled_planted", old, new, 1)
    shape = SHAPES[0]   # 16 elements per channel: the per-row path
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 3, "normal")
    assert _problems(_run(module, CONFIGS[path], inputs, shape), gn.FAMILY.reference(inputs, shape), torch.float32) != []


def test_choose_and_the_streamed_block_signal():
    assert tiled.choose(2048) == tiled.Config("resident", 2048, 2)
    assert tiled.choose(1).block == 16
    assert tiled.choose(40960).path == "streamed"
    assert tiled.kernel_block(tiled.Config("streamed", 4096, 8)) > tiled.RESIDENT_CAP.value


@pytest.mark.parametrize("path", CONFIGS)
def test_huge_values_stay_finite_and_close(path):
    """As for single_read (tests/test_single_read.py, huge_problems)."""
    assert huge_problems(tiled, CONFIGS[path]) == []
