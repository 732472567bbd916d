"""Statistics for paired, interleaved timing rounds: ratio of medians, bootstrap interval, p-value, verdict.

Pure functions over plain lists; kept apart from timing (which measures) and rendering (which shows).
`a` and `b` are lists of rounds, each round a list of samples (ms) taken in the same round, so the
bootstrap resamples whole rounds, keeping each round's A and B together.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from compare.model.states import TimingBasis, TimingVerdict
from compare.model.vocabulary import CONFIDENCE, DEFAULT_NOISE  # noqa: F401 (re-exported: the verdict's default band)

ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class RatioEstimate:
    ratio: float        # median(B) / median(A) over all samples: > 1 means B takes longer
    ci_low: float
    ci_high: float
    p_value: float
    rounds: int


def _pooled_median_ratio(a: torch.Tensor, b: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Ratio of pooled medians for each row of round indices `idx` (n, rounds)."""
    n = idx.shape[0]
    pa = a[idx].reshape(n, -1)
    pb = b[idx].reshape(n, -1)
    return pb.median(dim=1).values / pa.median(dim=1).values


def _as_rounds(rounds: list[list[float]]) -> torch.Tensor:
    width = min(len(r) for r in rounds)
    if width == 0:
        raise ValueError("every round needs at least one sample")
    return torch.tensor([r[:width] for r in rounds], dtype=torch.float64)


def _interval(boot: torch.Tensor, n_boot: int, confidence: float) -> tuple[float, float]:
    """The percentile interval of the `n_boot` sorted bootstrap ratios `boot`."""
    tail = (1 - confidence) / 2
    return float(boot[int(math.floor(tail * (n_boot - 1)))]), float(boot[int(math.ceil((1 - tail) * (n_boot - 1)))])


def ratio_with_interval(a: list[list[float]], b: list[list[float]], confidence: float = CONFIDENCE,
                        n_boot: int = 2000, n_perm: int = 10000, seed: int = 0) -> RatioEstimate:
    """Ratio of medians B/A with a paired percentile-bootstrap interval over rounds, and a two-sided
    sign-flip permutation p-value on the per-round log ratios (H0: no difference)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"need the same number (>= 2) of rounds for A and B, got {len(a)} and {len(b)}")
    ta, tb = _as_rounds(a), _as_rounds(b)
    rounds = ta.shape[0]
    gen = torch.Generator().manual_seed(seed)
    ratio = float(tb.flatten().median() / ta.flatten().median())
    idx = torch.randint(0, rounds, (n_boot, rounds), generator=gen)
    boot = torch.sort(_pooled_median_ratio(ta, tb, idx)).values
    lo, hi = _interval(boot, n_boot, confidence)
    d = torch.log(tb.median(dim=1).values / ta.median(dim=1).values)
    observed = d.mean().abs()
    signs = torch.randint(0, 2, (n_perm, rounds), generator=gen, dtype=torch.float64) * 2 - 1
    flipped = (signs * d).mean(dim=1).abs()
    p = (int((flipped >= observed - 1e-15).sum()) + 1) / (n_perm + 1)
    return RatioEstimate(ratio, lo, hi, p, rounds)


def ratio_across_runs(a: list[list[float]], b: list[list[float]], confidence: float = CONFIDENCE,
                      n_boot: int = 2000, n_perm: int = 2000, seed: int = 0) -> RatioEstimate:
    """Ratio of medians B/A for rounds of two runs (A: the saved run, B: the new one), which were not
    interleaved: a bootstrap resampling each run's rounds on its own, and a permutation p-value on the
    per-round log medians with the run labels shuffled. `rounds` is the smaller run's count."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"need at least 2 rounds in each run, got {len(a)} and {len(b)}")
    ta, tb = _as_rounds(a), _as_rounds(b)
    na, nb = ta.shape[0], tb.shape[0]
    gen = torch.Generator().manual_seed(seed)
    ratio = float(tb.flatten().median() / ta.flatten().median())
    pick_a, pick_b = (torch.randint(0, n, (n_boot, n), generator=gen) for n in (na, nb))
    boot = torch.sort(ta[pick_a].reshape(n_boot, -1).median(dim=1).values.reciprocal()
                      * tb[pick_b].reshape(n_boot, -1).median(dim=1).values).values
    lo, hi = _interval(boot, n_boot, confidence)
    logs = torch.cat([ta.median(dim=1).values, tb.median(dim=1).values]).log()
    observed = (logs[na:].mean() - logs[:na].mean()).abs()
    picked = logs[torch.rand(n_perm, na + nb, generator=gen).topk(nb, dim=1, sorted=False).indices].sum(dim=1)
    flipped = (picked / nb - (logs.sum() - picked) / na).abs()   # a random nb of the rounds called the new run's
    p = (int((flipped >= observed - 1e-15).sum()) + 1) / (n_perm + 1)
    return RatioEstimate(ratio, lo, hi, p, min(na, nb))


NO_DIFFERENCE = TimingVerdict.NO_DIFFERENCE


@dataclasses.dataclass(frozen=True)
class Decision:
    """A verdict and what decided it: the margin the interval had to clear, and why that margin."""

    verdict: TimingVerdict   # faster, slower or NO_DIFFERENCE
    margin: float       # the interval had to lie wholly outside 1 ± margin
    basis: TimingBasis


def control_deviation(control: RatioEstimate | None) -> float:
    """How far from 1 the A/A control (the baseline against itself) reaches: the farther end of its
    interval. A difference no larger than this is one the baseline shows against itself."""
    if control is None:
        return 0.0
    return max(abs(control.ci_low - 1), abs(control.ci_high - 1), abs(control.ratio - 1))


def decide(est: RatioEstimate, noise: float = DEFAULT_NOISE, control: RatioEstimate | None = None,
           same_code: bool = False, alpha: float = ALPHA, drift: RatioEstimate | None = None) -> Decision:
    """'slower' or 'faster' only when p < alpha and the whole interval lies outside 1 ± margin, the
    margin being the larger of the noise band and the A/A control's deviation, compounded (across runs) with
    `drift`'s: drift moves kernels by unlike amounts, so a change must clear the band beyond it. Two variants
    whose timed pass runs identical compiled code differ by measurement alone: never faster or slower."""
    aa, moved = control_deviation(control), control_deviation(drift)
    margin, basis = max((noise, TimingBasis.NOISE_BAND), (aa, TimingBasis.AA_CONTROL), key=lambda m: m[0])
    if moved > 0:   # the basis names the larger part of the compounded margin
        margin, basis = (1 + margin) * (1 + moved) - 1, TimingBasis.DRIFT if moved > margin else basis
    if same_code:
        return Decision(NO_DIFFERENCE, margin, TimingBasis.IDENTICAL_TIMED_CODE)
    if est.p_value < alpha and est.ci_low > 1 + margin:
        return Decision(TimingVerdict.SLOWER, margin, basis)
    if est.p_value < alpha and est.ci_high < 1 - margin:
        return Decision(TimingVerdict.FASTER, margin, basis)
    return Decision(NO_DIFFERENCE, margin, basis)


def judged(record: type, variant: str, est: RatioEstimate, decision: Decision, **more):
    """`record` (a compare.model.results.RatioVerdict) for `variant`, filled from an estimate and its decision;
    `more`: the record's own fields."""
    return record(variant, decision.verdict, ratio=est.ratio, ci_low=est.ci_low, ci_high=est.ci_high,
                  p_value=est.p_value, margin=decision.margin, basis=decision.basis, **more)


def verdict(est: RatioEstimate, noise: float = DEFAULT_NOISE, alpha: float = ALPHA,
            control: RatioEstimate | None = None, same_code: bool = False) -> TimingVerdict:
    """The verdict of `decide`."""
    return decide(est, noise, control, same_code, alpha).verdict


def in_rounds(samples, per_round: int, rounds: int) -> list[list[float]]:
    """A variant's samples, as a report keeps them, regrouped into its rounds (`per_round` consecutive each)."""
    return [list(samples[i:i + per_round]) for i in range(0, per_round * rounds, per_round)]


def quantiles(samples: list[float], qs=(0.2, 0.5, 0.8)) -> tuple[float, ...]:
    t = torch.tensor(samples, dtype=torch.float64)
    return tuple(float(torch.quantile(t, q)) for q in qs)
