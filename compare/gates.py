"""Exit-code gates for CI: which of the asked-for conditions a report breaks.

They act on what a variant introduced against the baseline: a problem the baseline already has (and
so every pull request that leaves it alone would "fail" on) does not trip them."""
from __future__ import annotations

from compare.headline import gate_failures
from compare.results import Report


def failures(report: Report, fail_on_numerics: bool = False, fail_if_slower_pct: float | None = None) -> list[str]:
    """One line per broken gate; empty when every gate asked for holds.

    --fail-on-numerics: a variant that could not be loaded; or, against the baseline in the same case,
    a variant with a problem the baseline has not (crash, unwritten or non-finite-mismatched elements,
    errors beyond tolerance, less accurate than the reference point), or judged less accurate than the
    baseline (compare/headline.py). The reference point is a yardstick and never trips it. With one
    variant only, its own problems count.
    --fail-if-slower PCT: any variant whose timing verdict against the baseline is "slower" (significant,
    outside the noise band) by more than PCT percent; a non-significant difference never trips it."""
    broken = []
    if fail_on_numerics:
        broken += [f"variant {v.name} could not be loaded" for v in report.variants if v.status != "ok"]
        broken += gate_failures(report)
        if report.numerics is None:   # a gate never passes without the evidence it judges
            broken.append("--fail-on-numerics could not be judged: no numerics were run")
    if fail_if_slower_pct is not None and report.timing is None:
        why = next((s.removeprefix("timing: ") for s in report.skipped if s.startswith("timing:")), "not asked for")
        broken.append(f"--fail-if-slower could not be judged: timing was not measured ({why.split(' (')[0]})")
    if fail_if_slower_pct is not None and report.timing is not None:
        for case in report.timing.cases:
            for c in case.comparisons:
                if c.verdict == "slower" and (c.ratio - 1) * 100 > fail_if_slower_pct:
                    broken.append(f"timing: {c.variant} is {(c.ratio - 1) * 100:.2f}% slower than {c.baseline} "
                                  f"on {case.shape} {case.mode} (limit {fail_if_slower_pct:g}%)")
    return broken
