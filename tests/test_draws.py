"""compare.checks.draws: inputs drawn ahead in threads are the inputs drawn on the spot, bit for bit; a trial
read twice (the backward's seed 0) is drawn once; memory held stays under its bound."""
import torch

from compare.checks import draws
from compare.checks.numerics import same_bits
from variants import registry

REG = registry()


class Counting:
    """A family whose make_inputs counts its calls (the draws made)."""

    def __init__(self, family):
        self.family, self.calls = family, []

    def make_inputs(self, shape, dtype, device, seed, kind="normal"):
        self.calls.append((shape.label, seed, kind))
        return self.family.make_inputs(shape, dtype, device, seed, kind)


def _cases(family):
    kinds = list(family.input_kinds)[:2]   # normal and one more
    shape = family.preset(family.default_preset).shapes[0]
    fwd = [draws.Trials(shape, torch.float32, k, (0, 1) if k == "normal" else (0,)) for k in kinds]
    bwd = [draws.Trials(shape, torch.float32, k, (0,)) for k in kinds]
    return shape, fwd + bwd


def _same(a, b) -> bool:
    ta, tb = a.named_tensors(), b.named_tensors()
    return ta.keys() == tb.keys() and all(bool(same_bits(ta[k], tb[k]).all()) for k in ta)


def test_drawn_ahead_equals_drawn_on_the_spot_and_repeats_are_drawn_once():
    for name in ("group_norm", "cross_entropy"):
        family = REG.families[name]
        counting = Counting(family)
        shape, cases = _cases(family)
        with draws.Draws(counting, "cpu", cases) as d:
            got = [(seed, c.kind, d.get(shape, torch.float32, seed, c.kind)) for c in cases for seed in c.seeds]
        assert len(got) == 5
        for seed, kind, inputs in got:
            assert _same(inputs, family.make_inputs(shape, torch.float32, "cpu", seed, kind)), (name, seed, kind)
        # five trials, three distinct: the backward's seed-0 trials were the forward's
        assert sorted(counting.calls) == sorted({(shape.label, s, k) for s, k, _ in got}), name


def test_a_trial_not_in_the_plan_is_drawn_when_asked_and_the_bound_holds(monkeypatch):
    family = REG.families["group_norm"]
    counting = Counting(family)
    shape, cases = _cases(family)
    monkeypatch.setattr(draws, "HELD_BYTES", 1)   # nothing may be held: every trial drawn when asked for
    with draws.Draws(counting, "cpu", cases) as d:
        for c in cases:
            for seed in c.seeds:
                d.get(shape, torch.float32, seed, c.kind)
                assert len(d.held) <= 1
        extra = d.get(shape, torch.float32, 7, "normal")
    assert _same(extra, family.make_inputs(shape, torch.float32, "cpu", 7, "normal"))
    assert len(counting.calls) == 6   # no trial held for its second use: drawn again
