"""Timing isolates a variant's failure the way numerics does (compare/checks/timing.py, harness.OpPass), on the
simulated device (tests/simulated_device.py): through autograd, an op returning one persistent output buffer,
one returning its cached output, one whose calls start raising in the rounds: each is named with why, and the
honest ops beside them are timed. Forward, the persistent buffer is timed and the cache is the audit's foul."""
import pytest
import torch

from compare.checks import harness
from compare.model.results import TimingStatus
from tests.exploits_timed import Clocked, audited_case, honest_op, SHAPES
from tests.simulated_device import clock  # noqa: F401 (the fixture)
from variants import registry
from variants.ops import op_variant
from variants.spec import CallMap

FAMILY = "group_norm"


def _op(family, name: str, fn):
    return op_variant(name, fn, CallMap(tuple(family.op_params)), family, "a test's op", "tests", name)


def persistent(like):
    """An honest op that writes into one output buffer per shape and returns it (a reused workspace)."""
    buffers = {}

    def op(*args):
        y = like.torch_op(*args)
        out = buffers.setdefault(tuple(y.shape), torch.empty_like(y).detach())
        return out.copy_(y)   # through autograd: its backward is y's
    return op


def cached(like):
    """An op that keeps its answer keyed by the input's pointer and returns it on the next call."""
    cache = {}

    def op(*args):
        key = args[0].data_ptr()
        if key not in cache:
            cache[key] = like.torch_op(*args)
        return cache[key]
    return op


def raising_after(like, calls: int):
    """An op that raises from its `calls`-th call on: past the warm-up, in the timed rounds."""
    count = [0]

    def op(*args):
        count[0] += 1
        if count[0] >= calls:
            raise RuntimeError("Trying to backward through the graph a second time")
        return like.torch_op(*args)
    return op


def _case(clock, mode: str, **hostile):
    family = registry().families[FAMILY]
    like = Clocked(family, clock)
    shape = family.parse_shape(SHAPES[FAMILY]).shapes[0]
    chosen = [honest_op(like), honest_op(like, "honest_too")] + [_op(family, n, f(like)) for n, f in hostile.items()]
    case = audited_case(family, chosen, shape, mode, "cpu", copy_gbs=1e6)
    return {v.variant: v for v in case.variants}


def test_forward_a_persistent_buffer_is_timed_and_a_cached_answer_fouled(clock):
    family = registry().families[FAMILY]
    like = Clocked(family, clock)
    shape = family.parse_shape(SHAPES[FAMILY]).shapes[0]
    chosen = [honest_op(like), _op(family, "persistent", persistent(like)), _op(family, "cached", cached(like))]
    case = audited_case(family, chosen, shape, "forward", "cpu", copy_gbs=1e6)
    found = {v.variant: v for v in case.variants}
    assert found["persistent"].status is TimingStatus.OK and found["persistent"].median_ms > 0
    assert {f.variant for f in case.fouls} == {"cached"}   # its timed calls did no work: the audit's


@pytest.mark.parametrize("mode", ["backward", "full"])
def test_ops_returning_one_buffer_are_named_and_the_honest_ones_timed(clock, mode):
    found = _case(clock, mode, persistent=persistent, cached=cached)
    for name in ("persistent", "cached"):
        assert found[name].status is TimingStatus.ERROR, found[name]
        assert found[name].reason == harness.REUSED
    for name in ("honest", "honest_too"):
        assert found[name].status is TimingStatus.OK, found[name]
        assert len(found[name].samples_ms) == found[name].rounds * found[name].calls_per_round > 0
        # the simulated device's clock moves in the op's forward: a backward alone takes no time there
        assert found[name].median_ms > 0 or mode == "backward"


def test_an_op_whose_calls_raise_in_the_rounds_is_named_and_the_others_timed(clock):
    found = _case(clock, "forward", raising=lambda like: raising_after(like, 20))
    assert found["raising"].status is TimingStatus.ERROR
    assert found["raising"].reason == "RuntimeError: Trying to backward through the graph a second time"
    assert not found["raising"].samples_ms
    for name in ("honest", "honest_too"):
        assert found[name].status is TimingStatus.OK and found[name].median_ms > 0
