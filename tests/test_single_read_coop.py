"""single_read_coop (variants/group_norm/single_read_coop.py) against float64 on every input kind, through
its CPU paths (a resident group with W and B per tile row or per element; a split configuration, which the
interpreter runs as the spec entry streaming the same blocks), planted faults the same check catches, and
the launcher's rules. Split groups waiting for each other need a GPU: tests/test_gpu.py runs them."""
import pytest
import torch

from tests.test_single_read import (SHAPES, _problems, _run, huge_problems,  # configures the CPU backend first
                                    problems_on_every_shape, problems_where_the_seed_writes_nan)
import variants.group_norm as gn  # noqa: E402
from tests.planted import load_mutated_coop  # noqa: E402
from variants.group_norm import single_read_coop as coop  # noqa: E402
from tests.sampled import sampled

TILED = gn.Shape(2, 8, 2, (256,))     # 256 elements per channel: W and B per tile row
CONFIGS = {
    "default": None,
    "split": coop.Config(64, 4, split=True),
    "split_one_block": coop.Config(16, 1, split=True),
    "register_cap": coop.Config(1024, 4, max_registers=96),   # a compile option: the interpreter runs it as is
}
# the every-input-kind sweep takes minutes on the interpreter: the quick suite runs the first configuration
SWEPT = sampled(CONFIGS)


@pytest.mark.parametrize("path", SWEPT)
@pytest.mark.parametrize("kind", [k for k in gn.INPUT_KINDS if k != "huge"])
@pytest.mark.parametrize("dtype", sampled([torch.float32, torch.bfloat16]))
def test_within_tolerance_of_float64_on_every_input_kind(path, kind, dtype):
    assert problems_on_every_shape(coop, CONFIGS[path], kind, dtype, SHAPES + (TILED,)) == []


def test_the_tiled_shape_takes_w_and_b_per_row_and_the_others_per_element():
    assert coop.tile_rows(coop.choose(TILED.hidden_size).block, 256, coop.choose(TILED.hidden_size).num_warps) > 1
    assert all(coop.tile_rows(coop.choose(s.hidden_size).block, s.hidden_size // s.channels_per_group, 1) == 1
               for s in SHAPES)


@pytest.mark.parametrize("kind", ["large_mean", "all_equal"])
def test_within_tolerance_where_the_one_pass_seed_kernel_writes_nan(kind):
    assert problems_where_the_seed_writes_nan(coop, kind) == []


@pytest.mark.parametrize("path", CONFIGS)
@pytest.mark.parametrize("value", [3.0e37, -1.25, 1.0e-39])
def test_an_all_equal_group_gives_exactly_the_bias_and_its_value_as_mean(path, value):
    """d = x - x0 is 0 everywhere, so the centre is x0 itself and the variance exactly 0, at the top of
    the range and among subnormals alike."""
    shape = gn.Shape(1, 2, 1, (96,))
    x = torch.full((1, 2, 96), value)
    inputs = gn.norm_operands(x, torch.tensor([1.5, -0.5]), torch.tensor([0.25, 2.0]), seed=0, kind="all_equal")
    out = _run(coop, CONFIGS[path], inputs, shape)
    assert torch.equal(out["y"], inputs.bias.view(1, 2, 1).expand(1, 2, 96))
    assert float(out["mean"]) == float(torch.tensor(value))
    assert float(out["rstd"]) == pytest.approx(1000.0, rel=1e-6)


@pytest.mark.parametrize("old, new, path, shape", [
    # the squares' sum
    ("return tl.reduce((d, d * d), 0, add_add)", "return tl.reduce((d, d * d * 1.001), 0, add_add)",
     "default", SHAPES[0]),
    # the unbiased variance where the spec asks for the biased one
    ("    var = m2 * inv_count\n", "    var = m2 / (1.0 / inv_count - 1.0)\n", "default", SHAPES[0]),
    # a tile row's channel one off
    ("channel = first_channel + (start + tl.arange(0, ROWS)[:, None] * WIDTH) // HPC",
     "channel = first_channel + (start + (tl.arange(0, ROWS)[:, None] + 1) * WIDTH) // HPC", "default", TILED),
    # the blocks' combination weighted wrongly
    ("m2 = m2 + (q - t1 * t1 / n_b) + d * d * (n * n_b / total)", "m2 = m2 + (q - t1 * t1 / n_b) + d * d * (n_b / total)",
     "split", SHAPES[2]),
    # bfloat16 held two to a word: a word's two values written back swapped (TILED's rows lie in one
    # channel, so the interpreter takes this path too)
    ("narrow_pair((even - mean_hi) * k + shift, (odd - mean_hi)", "narrow_pair((odd - mean_hi) * k + shift, (even - mean_hi)",
     "default", TILED)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_planted_fault_is_caught(tmp_path, old, new, path, shape, dtype):
    module, _ = load_mutated_coop(tmp_path, "single_read_coop_planted", old, new, 1)
    config = CONFIGS[path]
    inputs = gn.make_inputs(shape, dtype, "cpu", 3, "normal")
    found = _problems(_run(module, config, inputs, shape), gn.FAMILY.reference(inputs, shape), dtype)
    # a fault in the word-packed path shows in bfloat16 only: float32 never takes it
    assert (found != []) == (dtype == torch.bfloat16 or "narrow_pair" not in old)


def test_choose_and_the_config_rules():
    assert coop.choose(2048) == coop.Config(2048, 1) and coop.choose(2048, 2) == coop.Config(2048, 2)
    assert coop.choose(16384) == coop.Config(16384, 8) and coop.choose(16384, 2) == coop.Config(16384, 16)
    for size in (4, 2):
        assert coop.choose(40960, size) == coop.Config(coop.SPLIT_BLOCK, coop.SPLIT_WARPS, split=True,
                                                       max_registers=coop.SPLIT_REGISTERS[size])
    assert coop.tile_rows(2048, 512, 1) == 8 and coop.tile_rows(2048, 512, 4) == 1 and coop.tile_rows(2048, 35, 1) == 1
    # overlap for 16-bit launches of many slices an SM (the image preset on 132 SMs: N32 C512 yes, N16 C320 no)
    assert coop.choose(65536, 2, 1024 / 132) == coop.Config(coop.SPLIT_BLOCK, coop.SPLIT_WARPS, split=True,
                                                             max_registers=coop.OVERLAP_REGISTERS[2], overlap=True)
    assert not coop.choose(40960, 2, 512 / 132).overlap and not coop.choose(65536, 4, 1024 / 132).overlap
    assert not coop.choose(2048, 2, 10000.0).overlap
    with pytest.raises(ValueError, match="power of two"):
        coop.Config(3000, 4)
    with pytest.raises(ValueError, match="split configurations only"):
        coop.Config(2048, 4, overlap=True)
    shape = gn.Shape(1, 2, 1, (4096,))
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 0, "normal")
    with pytest.raises(ValueError, match="cannot hold a group"):
        coop.launch_with(coop.Config(1024, 1), inputs, gn.alloc_outputs(shape, torch.float32, "cpu"), shape)
    assert "interpreted" in coop.describe(coop.Config(64, 4, split=True), torch.device("cpu"))


H200_L2_PER_SM = 60 * 2**20 / 132


@pytest.mark.parametrize("hidden, size, groups, read_again", [
    (40960, 2, 512, True),      # bfloat16 N16 C320: 42 MB of x, within L2
    (40960, 4, 512, False),     # float32 N16 C320: 84 MB, more than L2
    (65536, 2, 1024, False),    # bfloat16 N32 C512: overlapped (many slices an SM), and more than L2 anyway
    (20480, 2, 1200, False),    # 372 KB an SM, within L2, but more than 8 groups an SM: fewer than 2 slices
                                # a group would keep every program of the launch running at once
])
def test_choose_reads_slices_again_only_for_16_bit_launches_whose_x_fits_l2(hidden, size, groups, read_again):
    config = coop.choose(hidden, size, groups / 132, H200_L2_PER_SM)
    assert (config.chunks > 1) == read_again, config.label
    assert coop.choose(hidden, size, groups / 132).chunks == 1   # L2 unknown: never read again


def test_a_read_again_configuration_is_split_only_and_never_overlapped():
    with pytest.raises(ValueError, match="chunks"):
        coop.Config(2048, 2, chunks=2)
    with pytest.raises(ValueError, match="chunks"):
        coop.Config(2048, 2, split=True, overlap=True, chunks=2)
    assert coop.Config(2048, 2, split=True, chunks=5).slice_size == 10240


def test_a_read_again_launch_counts_its_slices_by_the_slice_not_the_block():
    """A read-again slice is `chunks` blocks: the group's slice count (the counters' set, the partials'
    slots, the combination's width) follows the slice, and the last slice may be shorter."""
    shape = gn.Shape(2, 8, 2, (64, 80))     # 20,480 elements a group: 4 slices of 3 blocks of 2,048, the last 2
    config = coop.Config(2048, 2, split=True, chunks=3)
    inputs = gn.make_inputs(shape, torch.bfloat16, "cpu", 1, "normal")
    args, constants = coop.kernel_arguments(config, inputs.x, inputs, gn.alloc_outputs(shape, torch.bfloat16, "cpu"),
                                            shape)
    assert args[12] == 4 and constants["CHUNKS"] == 3 and constants["SLICE_BLOCK"] == 4 and constants["BLOCK"] == 2048
    assert args[7].numel() >= 4 and "interpreted" in coop.describe(config, torch.device("cpu"))


@pytest.mark.parametrize("path", CONFIGS)
def test_huge_values_stay_finite_and_close(path):
    """As for single_read (tests/test_single_read.py, huge_problems)."""
    assert huge_problems(coop, CONFIGS[path]) == []


def _float16_huge_mean_error(module):
    shape = gn.Shape(1, 64, 16, (512,))   # the seed's groups of 2,048
    inputs = gn.make_inputs(shape, torch.float16, "cpu", 0, "huge")
    out = _run(module, None, inputs, shape)
    return float((out["mean"].double() - gn.FAMILY.reference(inputs, shape)["mean"]).abs().max())


@pytest.mark.slow
def test_float16_values_near_the_top_of_the_range_give_their_mean_exactly(tmp_path):
    """|x| in [4094, 8188]: multiples of 2 or 4, so with a centre of few bits (`coop_math.centre`) every x - c is
    exact in float32 and every float64 sum exact; a centre with finer bits (the planted fault: the first
    value times 1 + 2^-20) costs the mean of values near 0 more than float16's tolerance of 1e-5 there."""
    assert _float16_huge_mean_error(coop) == 0.0
    planted, _ = load_mutated_coop(tmp_path, "single_read_coop_fine_centre", "rounded, first)\n",
                              "first * 1.00000095367431640625, first)\n", 1)
    assert _float16_huge_mean_error(planted) > 1e-5


def test_split_launches_keep_one_counter_set_per_slice_count_and_row_count():
    """`launch_epoch` reads one counter for every row a program waits at: that holds only if every row of a
    counter set advances by the slice count each launch, so shapes that share a slice count but not a row
    count must not share counters (the launcher's key), while repeated launches of one shape must (the
    counters only grow)."""
    config = coop.Config(8192, 4, split=True)

    def counters(shape):
        inputs = gn.make_inputs(shape, torch.float32, "cpu", 0, "normal")
        args, constants = coop.kernel_arguments(config, inputs.x, inputs, gn.alloc_outputs(shape, torch.float32, "cpu"),
                                                shape)
        return args[7], args[12]

    small, slices = counters(gn.Shape(1, 8, 2, (64, 64)))      # 2 rows of 16,384 elements: 2 slices
    large, _ = counters(gn.Shape(4, 8, 2, (64, 64)))           # 8 rows, the same slice count
    again, _ = counters(gn.Shape(1, 8, 2, (64, 64)))
    assert slices == 2 and small.data_ptr() != large.data_ptr() and again.data_ptr() == small.data_ptr()


def _float32_mean_error(module, shape):
    inputs = gn.make_inputs(shape, torch.float32, "cpu", 0, "normal")
    ref = gn.FAMILY.reference(inputs, shape)["mean"]
    return float((_run(module, None, inputs, shape)["mean"].double() - ref).norm() / ref.norm())


@pytest.mark.parametrize("shape", [pytest.param(gn.Shape(4, 64, 16, (512,)), marks=pytest.mark.slow),
                                   pytest.param(gn.Shape(16, 8, 2, (256,)), marks=pytest.mark.slow)],
                         ids=["per_element", "tiled"])
def test_a_centre_of_few_bits_keeps_the_float32_mean_of_values_around_0_close(tmp_path, shape):
    """Values around 0 with spread 1: the centre rounds to a multiple of a power of two above the spread
    (0 here), so every x - c is exact; the planted fault centres on the slice's first value, as before,
    and every x - c rounds: the mean lands further from float64."""
    planted, _ = load_mutated_coop(tmp_path, "single_read_coop_first_value_centre", "rounded, first)\n",
                              "first, first)\n", 1)
    exact, first_value = _float32_mean_error(coop, shape), _float32_mean_error(planted, shape)
    assert exact < first_value / 2, (exact, first_value)


TOP = torch.finfo(torch.float32).max


@pytest.mark.parametrize("first_8, old, new", [
    # all positive: their mean rounds to one unit of their spread, and a centre there left every value of
    # the other sign rounding in x - c (the compiled read-again path met it on the huge input kind)
    ([TOP / 16 * (1 + k / 8) for k in range(8)], "    rounded = tl.where(tl.abs(scaled) < 256.0, 0.0, rounded)\n", ""),
    # one of each sign and then six of the other: the sum of their differences from the first overflowed
    # float32, and the centre fell back to the first value
    ([TOP / 8] + [-TOP / 8] * 7, "first + tl.sum((sample - first) * 0.125, axis=0)",
     "first + tl.sum(sample - first, axis=0) * 0.125")],
    ids=["same_sign", "overflowing_differences"])
def test_huge_values_of_both_signs_around_a_mean_of_0_give_it_exactly(tmp_path, first_8, old, new):
    """Huge values of both signs whose mean is 0: centred on 0, x - c = x is exact and the float64 sums
    give the mean exactly; the planted fault brings back the centre that was there before, and with it
    the rounding of x - c (1.7e28 off on the GPU's huge input kind)."""
    shape = gn.Shape(1, 2, 1, (1024,))
    g = torch.Generator().manual_seed(0)
    half = torch.sign(torch.randn(1, 2, 512, generator=g)) * (TOP / 16) * (1 + torch.rand(1, 2, 512, generator=g))
    half[..., :8] = torch.tensor(first_8)
    inputs = gn.norm_operands(torch.cat([half, -half], dim=-1), torch.ones(2), torch.zeros(2), seed=0, kind="huge")
    assert float(gn.FAMILY.reference(inputs, shape)["mean"].abs().max()) == 0.0
    assert float(_run(coop, None, inputs, shape)["mean"].abs().max()) == 0.0
    planted, _ = load_mutated_coop(tmp_path, "single_read_coop_old_centre", old, new, 1)
    assert float(_run(planted, None, inputs, shape)["mean"].abs().max()) > 1e26
