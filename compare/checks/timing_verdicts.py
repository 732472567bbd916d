"""What one timed case adds up to (compare/checks/timing.py times it): each variant's samples as a
TimingVariant, the hidden A/A control, and each variant against the baseline as a TimingComparison."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.checks import stats
from compare.checks.timing_config import CONTROL, TimingConfig
from compare.model.fouls import withheld
from compare.model.results import TimingComparison, TimingVariant
from compare.model.states import TimingStatus, TimingVerdict


@dataclasses.dataclass
class Warmed:
    """Every entry of a case after its warm-up: the ones to time, and what the others did instead."""

    timed: dict[str, list] = dataclasses.field(default_factory=dict)      # entry -> its timed calls, per placement
    failed: dict[str, str] = dataclasses.field(default_factory=dict)      # entry -> why it is not timed
    not_run: set[str] = dataclasses.field(default_factory=set)            # of the failed: not for this shape
    written: dict[str, tuple] = dataclasses.field(default_factory=dict)   # entry -> the inputs its calls wrote into
    memory: dict[str, int] = dataclasses.field(default_factory=dict)      # entry -> peak bytes of one call
    fouls: dict[str, list] = dataclasses.field(default_factory=dict)      # entry -> what it did to win (audit)


def same_code(a, b) -> bool:
    """Both timed passes run the same compiled code, as their bench calls say (None: not known)."""
    ka, kb = getattr(a, "timed_code", None), getattr(b, "timed_code", None)
    return ka is not None and ka == kb


def variants(names, warmed: Warmed, samples: dict, launch: dict, config: TimingConfig, bytes_moved: int,
             copy_gbs: float) -> list[TimingVariant]:
    """Each named entry's samples and what they add up to, or why it has none."""
    found = []
    for name in names:
        if name in warmed.failed:
            status = TimingStatus.NOT_RUN if name in warmed.not_run else TimingStatus.ERROR
            found.append(TimingVariant(variant=name, status=status, reason=warmed.failed[name]))
            continue
        flat = [s for r in samples[name] for s in r]
        p20, p50, p80 = stats.quantiles(flat)
        gbs = bytes_moved / (p50 * 1e-3) / 1e9 if p50 > 0 else float("inf")   # (no time: no bandwidth holds it)
        found.append(TimingVariant(
            variant=name, status=TimingStatus.OK, reason="", samples_ms=tuple(flat), rounds=len(samples[name]),
            calls_per_round=config.calls_per_round, p20_ms=p20, median_ms=p50, p80_ms=p80,
            peak_memory_bytes=warmed.memory[name], bytes_moved=bytes_moved, gbs=gbs,
            fraction_of_copy=gbs / copy_gbs if copy_gbs else 0.0, launch_cpu_ms=round(launch[name][0], 4),
            writes=warmed.written.get(name, ())))
    return found


def control(baseline: str, warmed: Warmed, samples: dict,
            config: TimingConfig) -> tuple[Optional[stats.RatioEstimate], TimingComparison]:
    """The baseline against itself timed again as the hidden entry: the A/A control a verdict must clear."""
    again = f"{baseline} again"
    if baseline in warmed.failed or CONTROL in warmed.failed:
        return None, TimingComparison(again, TimingVerdict.NA, baseline=baseline, reason="the baseline failed")
    est = stats.ratio_with_interval(samples[baseline], samples[CONTROL], seed=config.seed)
    return est, _comparison(baseline, again, est, stats.decide(est, config.noise))


def comparisons(names: list[str], entries: dict, warmed: Warmed, samples: dict, config: TimingConfig,
                control_est: Optional[stats.RatioEstimate]) -> list[TimingComparison]:
    """Each entry after the first (the baseline) against it; none where a foul withholds the verdict."""
    baseline, found = names[0], []
    for name in names[1:]:
        if baseline in warmed.failed or name in warmed.failed:
            which = baseline if baseline in warmed.failed else name
            found.append(TimingComparison(name, TimingVerdict.NA, baseline=baseline,
                                          reason=f"{which} {'not run' if which in warmed.not_run else 'failed'}"))
            continue
        est = stats.ratio_with_interval(samples[baseline], samples[name], seed=config.seed)
        same = same_code(entries[baseline][0], entries[name][0])
        found.append(_comparison(baseline, name, est, stats.decide(est, config.noise, control_est, same)))
    fouls = warmed.fouls
    return [withheld(c, fouls.get(c.variant) or fouls[baseline]) if c.variant in fouls or baseline in fouls else c
            for c in found]


def _comparison(baseline: str, name: str, est: stats.RatioEstimate, decision: stats.Decision) -> TimingComparison:
    return stats.judged(TimingComparison, name, est, decision, baseline=baseline, rounds=est.rounds)
