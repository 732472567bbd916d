"""Exit-code gates for CI: which of the asked-for conditions a report breaks."""
from __future__ import annotations

from compare.results import Report


def failures(report: Report, fail_on_numerics: bool = False, fail_if_slower_pct: float | None = None) -> list[str]:
    """One line per broken gate; empty when every gate asked for holds.

    --fail-on-numerics: any variant that failed or crashed in a numerics check, or could not be loaded.
    --fail-if-slower PCT: any variant whose timing verdict is "slower" (significant, outside the noise
    band) by more than PCT percent; a non-significant difference never trips it."""
    broken = []
    if fail_on_numerics:
        broken += [f"variant {v.name} could not be loaded" for v in report.variants if v.status != "ok"]
        if report.numerics is not None:
            reference_point = report.numerics.added_reference   # joined unasked, judges nothing itself
            for case in report.numerics.cases:
                for v in case.variants:
                    if v.status in ("fail", "error") and v.variant != reference_point:
                        broken.append(f"numerics: {v.variant} {v.status} on {case.shape} {case.dtype} "
                                      f"{case.input_kind} {case.direction}")
    if fail_if_slower_pct is not None and report.timing is not None:
        for case in report.timing.cases:
            for c in case.comparisons:
                if c.verdict == "slower" and (c.ratio - 1) * 100 > fail_if_slower_pct:
                    broken.append(f"timing: {c.variant} is {(c.ratio - 1) * 100:.2f}% slower than {c.baseline} "
                                  f"on {case.shape} {case.mode} (limit {fail_if_slower_pct:g}%)")
    return broken
