"""Timing statistics on synthetic samples whose truth is known."""
import math
import random

import pytest

from compare.checks import stats


def synthetic(true_ratio, rounds=30, per_round=5, sigma=0.01, drift=0.03, seed=0):
    """Rounds of samples: lognormal noise, plus a per-round drift shared by A and B (as on a GPU whose
    clock moves between rounds)."""
    rng = random.Random(seed)
    a, b = [], []
    for _ in range(rounds):
        level = 1.0 + rng.uniform(-drift, drift)
        a.append([level * math.exp(rng.gauss(0, sigma)) for _ in range(per_round)])
        b.append([level * true_ratio * math.exp(rng.gauss(0, sigma)) for _ in range(per_round)])
    return a, b


def test_interval_covers_the_true_ratio_about_95_percent_of_the_time():
    hits, n = 0, 200
    for seed in range(n):
        a, b = synthetic(1.02, seed=seed)
        est = stats.ratio_with_interval(a, b, n_boot=400, n_perm=200, seed=seed)
        hits += est.ci_low <= 1.02 <= est.ci_high
    assert 0.88 <= hits / n <= 0.995, hits / n


def test_pairing_by_round_removes_shared_drift():
    a, b = synthetic(1.0, drift=0.2, sigma=0.002, seed=3)
    est = stats.ratio_with_interval(a, b, seed=3)
    # without pairing a 20% drift would swamp the estimate; paired, the interval stays narrow
    assert est.ci_high - est.ci_low < 0.05
    assert est.p_value > 0.01


@pytest.mark.parametrize("ratio, expected", [(1.05, "slower"), (0.95, "faster"), (1.0, "no difference beyond noise")])
def test_verdict_on_clear_cases(ratio, expected):
    a, b = synthetic(ratio, sigma=0.005, seed=7)
    est = stats.ratio_with_interval(a, b, seed=7)
    assert stats.verdict(est) == expected
    if expected != "no difference beyond noise":
        assert est.p_value < 0.05


def test_significant_but_inside_noise_band_is_no_difference():
    est = stats.RatioEstimate(ratio=1.004, ci_low=1.002, ci_high=1.006, p_value=0.001, rounds=50)
    assert stats.verdict(est, noise=0.01) == "no difference beyond noise"
    assert stats.verdict(est, noise=0.001) == "slower"


def test_interval_outside_band_but_not_significant_is_no_difference():
    est = stats.RatioEstimate(ratio=1.05, ci_low=1.02, ci_high=1.08, p_value=0.2, rounds=5)
    assert stats.verdict(est) == "no difference beyond noise"
    est = stats.RatioEstimate(ratio=0.95, ci_low=0.92, ci_high=0.98, p_value=0.2, rounds=5)
    assert stats.verdict(est) == "no difference beyond noise"


def test_interval_straddling_band_edge_is_no_difference():
    est = stats.RatioEstimate(ratio=1.012, ci_low=1.005, ci_high=1.02, p_value=0.001, rounds=50)
    assert stats.verdict(est) == "no difference beyond noise"


def test_mismatched_rounds_are_refused():
    with pytest.raises(ValueError, match="same number"):
        stats.ratio_with_interval([[1.0]] * 3, [[1.0]] * 4)


def test_quantiles():
    assert stats.quantiles([1, 2, 3, 4, 5]) == (1.8, 3.0, 4.2)


# ---------------------------------------------------------------- the A/A control and identical code
def entries(ratios, rounds=40, per_round=5, sigma=0.004, drift=0.03, placement=(), seed=0):
    """Rounds of samples for several entries timed in the same rounds: each entry's true ratio (an
    entry-level bias is just a ratio), a per-round drift shared by all, and optionally a per-placement
    factor, placement = round mod len(placement), shared by every entry of the round (shared buffers)."""
    rng = random.Random(seed)
    out = [[] for _ in ratios]
    for r in range(rounds):
        level = (1.0 + rng.uniform(-drift, drift)) * (placement[r % len(placement)] if placement else 1.0)
        for samples, ratio in zip(out, ratios):
            samples.append([level * ratio * math.exp(rng.gauss(0, sigma)) for _ in range(per_round)])
    return out


def test_placement_shared_by_every_entry_of_a_round_cancels():
    # three placements moving the time by -4%, +5%, 0%: far more than the noise band, but every variant
    # of a round writes to the same placement, so the paired comparison does not see it
    a, b = entries((1.0, 1.0), placement=(0.96, 1.05, 1.0), seed=11)
    assert stats.verdict(stats.ratio_with_interval(a, b, seed=1)) == stats.NO_DIFFERENCE
    a, b = entries((1.0, 1.03), placement=(0.96, 1.05, 1.0), seed=12)
    assert stats.verdict(stats.ratio_with_interval(a, b, seed=1)) == "slower"


def test_a_bias_the_control_shows_gives_no_verdict():
    # each entry with its own buffers: the copy B lands 2% slower, the baseline's A/A copy 2.5% slower,
    # although all three run the same kernel; without the control, B's bias would be called slower
    a, b, a_again = entries((1.0, 1.02, 1.025), seed=5)
    est = stats.ratio_with_interval(a, b, seed=2)
    control = stats.ratio_with_interval(a, a_again, seed=3)
    assert stats.verdict(est) == "slower"
    decision = stats.decide(est, control=control)
    assert decision.verdict == stats.NO_DIFFERENCE
    assert decision.basis == "A/A control" and decision.margin > 0.02


def test_a_real_three_percent_difference_clears_a_clean_control():
    a, b, a_again = entries((1.0, 1.03, 1.0), seed=6)
    est = stats.ratio_with_interval(a, b, seed=2)
    decision = stats.decide(est, control=stats.ratio_with_interval(a, a_again, seed=3))
    assert decision.verdict == "slower" and decision.basis == "noise band" and decision.margin == stats.DEFAULT_NOISE
    a, b, a_again = entries((1.0, 0.97, 1.0), seed=7)
    est = stats.ratio_with_interval(a, b, seed=2)
    assert stats.decide(est, control=stats.ratio_with_interval(a, a_again, seed=3)).verdict == "faster"


def test_a_difference_larger_than_the_control_still_counts():
    # the control reaches about 1.5%; a true 5% difference lies well beyond it
    a, b, a_again = entries((1.0, 1.05, 1.015), seed=8)
    est = stats.ratio_with_interval(a, b, seed=2)
    decision = stats.decide(est, control=stats.ratio_with_interval(a, a_again, seed=3))
    assert decision.verdict == "slower" and decision.basis == "A/A control" and 0.015 < decision.margin < 0.03


def test_identical_timed_code_is_never_faster_or_slower():
    a, b = entries((1.0, 1.05), seed=9)
    est = stats.ratio_with_interval(a, b, seed=2)
    assert stats.verdict(est) == "slower"
    decision = stats.decide(est, same_code=True)
    assert decision.verdict == stats.NO_DIFFERENCE and decision.basis == "identical timed code"


def test_control_deviation_is_the_farthest_reach_from_one():
    est = stats.RatioEstimate(ratio=0.995, ci_low=0.985, ci_high=1.004, p_value=0.01, rounds=40)
    assert stats.control_deviation(est) == pytest.approx(0.015)
    assert stats.control_deviation(None) == 0.0
