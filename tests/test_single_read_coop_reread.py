"""single_read_coop_reread (variants/group_norm/single_read_coop_reread.py): the slice rule (every program
of a launch on the GPU at once), the error for groups one program holds, and its CPU path through the
family against float64. Its slices waiting for each other need a GPU: tests/test_gpu.py runs the read-again
configuration on every input kind."""
import pytest
import torch

from compare.runtime import backend
from compare.checks import numerics

BACKEND = backend.configure("cpu")

import variants.group_norm as gn  # noqa: E402
from variants import NotForThisShape, registry  # noqa: E402
from variants.group_norm.coop_launch import REREAD_BLOCK, REREAD_PROGRAMS_PER_SM, read_again  # noqa: E402

H200_SMS = 132


@pytest.mark.parametrize("shape", [gn.Shape(16, 320, 32, (64, 64)), gn.Shape(32, 512, 32, (64, 64)),
                                   gn.Shape(3, 40, 2, (64, 64))])
def test_slices_of_whole_blocks_keep_every_program_of_the_launch_on_the_gpu_at_once(shape):
    groups_per_sm = shape.batch * shape.num_groups / H200_SMS
    config = read_again(shape.hidden_size, groups_per_sm)
    slices = -(-shape.hidden_size // config.slice_size)
    assert config.split and config.chunks >= 2 and config.block == REREAD_BLOCK
    assert slices * config.slice_size >= shape.hidden_size > (slices - 1) * config.slice_size
    assert slices >= 2 and (groups_per_sm * slices <= REREAD_PROGRAMS_PER_SM or slices == 2)


def test_image_shapes_take_the_slices_the_probe_timed():
    # bfloat16 N16 C320 on 132 SMs: 4 slices of 5 blocks (harness_probe.py at 80aadd0: "b2048x5")
    assert read_again(40960, 16 * 32 / H200_SMS).label == "split b2048x5 w2 reread"
    assert read_again(65536, 32 * 32 / H200_SMS).label == "split b2048x16 w2 reread"


def test_a_group_one_program_holds_is_not_for_this_variant_and_numerics_says_not_run_and_why():
    with pytest.raises(NotForThisShape, match=r"more than 16384 elements\), got 2048"):
        read_again(2048, 1.0)
    case = numerics.run_case(gn.FAMILY, [registry().get("single_read_coop"), registry().get("single_read_coop_reread")],
                             gn.Shape(2, 8, 2, (16,)), torch.float32, BACKEND, (0,))
    held, reread = case.variants
    assert held.status == "pass" and reread.status == "not_run"
    assert reread.reasons == ("not for this shape: slices are read again only for groups split over programs (more "
                              "than 16384 elements), got 64; a program holds such a group",)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["normal", "large_mean", "all_equal"])
def test_on_the_cpu_it_passes_against_float64_through_the_family(kind):
    shape = gn.Shape(1, 4, 2, (96, 96))   # 18,432 elements a group: split
    case = numerics.run_case(gn.FAMILY, [registry().get("single_read_coop_reread")], shape, torch.float32, BACKEND,
                             (0,), input_kind=kind)
    (v,) = case.variants
    assert v.status == "pass", v.reasons


def test_its_backward_is_single_read_coops_own():
    reg = registry()
    a, b = reg.get("single_read_coop"), reg.get("single_read_coop_reread")
    assert a.backward_kernel is b.backward_kernel and a.backward_launcher is b.backward_launcher
    assert a.run is not b.run
