"""Timing statistics on synthetic samples whose truth is known."""
import math
import random

import pytest

from compare import stats


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
