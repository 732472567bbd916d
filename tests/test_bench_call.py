"""The family's bench calls for timing: one shared placement of buffers per case, and the `timed_code`
key that tells the comparison when two variants time the same compiled code (CPU interpreter)."""
import dataclasses
import functools

import torch

from compare.checks import harness, timing
from compare.runtime.backend import configure
from variants import registry
from variants.group_norm import FAMILY, Shape

BACKEND = configure("auto")
SHAPE = Shape(2, 8, 2, (16,))


def _calls(mode, names=("pointer_mutation", "explicit_offset"), placements=2):
    reg = registry()
    inputs = FAMILY.make_inputs(SHAPE, torch.float32, BACKEND.device, 0)
    return timing.case_calls(functools.partial(harness.bench_call, FAMILY), [reg.get(n) for n in names], inputs, SHAPE,
                             mode, placements)


def test_variants_of_a_case_write_into_one_shared_placement():
    reg = registry()
    inputs = FAMILY.make_inputs(SHAPE, torch.float32, BACKEND.device, 0)
    buffers = {}
    first = harness.bench_call(FAMILY, reg.get("pointer_mutation"), inputs, SHAPE, "backward", buffers=buffers)
    y, dx = buffers["outputs"]["y"], buffers["grads"]["dx"]
    second = harness.bench_call(FAMILY, reg.get("explicit_offset"), inputs, SHAPE, "backward", buffers=buffers)
    assert buffers["outputs"]["y"] is y and buffers["grads"]["dx"] is dx
    dx.fill_(float("nan"))
    second()
    assert torch.isfinite(dx).all()     # the second variant wrote into the buffer the first one was given
    dx.fill_(float("nan"))
    first()
    assert torch.isfinite(dx).all()


def test_every_entry_pairs_each_input_copy_with_each_output_set_once_a_cycle():
    # an entry that kept one pairing of input copy and output set kept one place in memory through a case:
    # identical kernels read 2.4% apart on an H100 at 537 MB (reports/timing_validation/README.md)
    seen = []

    def recording(variant, inputs, shape, mode, buffers=None):
        def call():
            pass
        seen.append((variant.name, id(inputs["x"]), id(buffers)))
        return call
    reg = registry()
    inputs = FAMILY.make_inputs(SHAPE, torch.float32, BACKEND.device, 0)
    variants = [reg.get(n) for n in ("pointer_mutation", "explicit_offset")]
    calls, control = timing.case_calls(recording, variants, inputs, SHAPE, "forward", 3)
    entries, sets = 3, 3                                   # two variants and the control; three output sets
    assert all(len(fns) == entries * sets for fns in calls.values()) and len(control) == entries * sets
    by_entry = [seen[i * entries * sets:(i + 1) * entries * sets] for i in range(entries)]
    copies = {c for _, c, _ in seen}
    assert len(copies) == entries and len({b for _, _, b in seen}) == sets
    for placement in range(entries * sets):
        round_ = [entry[placement] for entry in by_entry]
        assert len({c for _, c, _ in round_}) == entries   # no two entries read one copy in a round
        assert len({b for _, _, b in round_}) == 1         # and all write the one set of the round
    for entry in by_entry:
        assert len({(c, b) for _, c, b in entry}) == entries * sets   # every pairing, each once
        for start in range(0, entries * sets, entries):    # every copy within each block of `entries` rounds
            assert {c for _, c, _ in entry[start:start + entries]} == copies
    assert [fn.timed_code for fn in _calls("forward", placements=3)[1]] == [
        fn.timed_code for fn in _calls("forward", placements=3)[0]["pointer_mutation"]]


def test_backward_of_triton_variants_times_identical_code_forward_does_not():
    backward, _ = _calls("backward")
    keys = {fn.timed_code for fns in backward.values() for fn in fns}
    assert len(keys) == 1 and None not in keys
    for mode in ("forward", "full"):
        calls, _ = _calls(mode)
        assert calls["pointer_mutation"][0].timed_code != calls["explicit_offset"][0].timed_code


def test_a_run_wrapping_the_same_kernel_in_more_work_is_not_identical_code():
    # the planted slowdown of benchmarks/timing_validation.py: the same forward kernel plus an extra copy
    base = registry().get("explicit_offset")

    def slower(inputs, outputs, shape):
        base.run(inputs, outputs, shape)
        outputs["y"].add_(0)
    planted = dataclasses.replace(base, name="planted", run=slower)
    inputs = FAMILY.make_inputs(SHAPE, torch.float32, BACKEND.device, 0)
    for mode in ("forward", "full"):
        a, b = (harness.bench_call(FAMILY, v, inputs, SHAPE, mode) for v in (base, planted))
        assert a.timed_code != b.timed_code, mode
    a, b = (harness.bench_call(FAMILY, v, inputs, SHAPE, "backward") for v in (base, planted))
    assert a.timed_code == b.timed_code   # the backward pass runs the one shared backward kernel alone


def test_torch_timed_code_is_unknown_so_never_called_identical():
    calls, _ = _calls("backward", names=("pointer_mutation", "torch"))
    assert calls["torch"][0].timed_code is None
    assert not timing._same_code(calls["torch"][0], calls["torch"][1])


def test_a_call_that_cannot_be_built_becomes_a_failing_entry():
    def broken(variant, inputs, shape, mode, buffers=None):
        raise ValueError("no backward for this kind")
    reg = registry()
    calls, _ = timing.case_calls(broken, [reg.get("pointer_mutation")], None, SHAPE, "backward", 2)
    try:
        calls["pointer_mutation"][0]()
    except ValueError as exc:
        assert "no backward" in str(exc)
    else:
        raise AssertionError("the failing entry did not raise")


def test_variants_sharing_the_familys_forward_time_identical_code_and_their_own_backwards_do_not():
    """layer_norm's variants bring only backward kernels: their forwards run the one shared kernel."""
    reg = registry()
    family = reg.family("layer_norm")
    shape = family.parse_shape("8,40").shapes[0]
    inputs = family.make_inputs(shape, torch.float32, BACKEND.device, 0)
    names = ("bwd_pointer_mutation", "bwd_explicit_offset", "bwd_atomic")
    codes = {mode: [harness.bench_call(family, reg.get(n, "layer_norm"), inputs, shape, mode).timed_code for n in names]
             for mode in ("forward", "backward", "full")}
    assert len(set(codes["forward"])) == 1
    assert len(set(codes["backward"])) == 3 and len(set(codes["full"])) == 3


def test_a_variant_under_other_names_resolves_by_each_name_and_times_the_same_code():
    # benchmarks/timing_validation.py --aa: the A/A of a variant --variant cannot load (its own launcher)
    from benchmarks.timing_validation import under_other_names
    reg = registry()
    renamed = under_other_names(reg, "single_read_coop", ("a1", "a2"))
    assert [renamed.get(n).name for n in ("a1", "a2")] == ["a1", "a2"]
    assert renamed.get("a1").run is reg.get("single_read_coop").run
    assert not reg.has("a1")   # the registry it was given is left as it was
    inputs = FAMILY.make_inputs(SHAPE, torch.float32, BACKEND.device, 0)
    calls, _ = timing.case_calls(functools.partial(harness.bench_call, FAMILY),
                                 [renamed.get(n) for n in ("a1", "a2", "pointer_mutation")],
                                 inputs, SHAPE, "forward")
    assert timing._same_code(calls["a1"][0], calls["a2"][0])
    assert not timing._same_code(calls["a1"][0], calls["pointer_mutation"][0])
