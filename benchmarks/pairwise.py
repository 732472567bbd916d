"""Verdicts of one variant against others in a timed report, from the same interleaved rounds.

A report judges every variant against its baseline. Whether variant B is faster than another
non-baseline variant A follows from the same measurements: the variants of a case were timed in the
same shuffled rounds, so B's and A's samples pair by round. This recomputes the ratio, its interval and
p-value with compare.stats.ratio_with_interval and decides with compare.stats.decide under the case's
own A/A control and the report's noise band: the rule every report states.

    python3 benchmarks/pairwise.py REPORT.json B A [A ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compare.stats import RatioEstimate, decide, ratio_with_interval  # noqa: E402


def rounds_of(entry: dict) -> list[list[float]]:
    """A variant's samples regrouped into its rounds (calls_per_round consecutive samples each)."""
    per = entry["calls_per_round"]
    samples = entry["samples_ms"]
    return [samples[i:i + per] for i in range(0, per * entry["rounds"], per)]


def control_of(case: dict) -> RatioEstimate | None:
    c = case.get("control")
    if not c or c.get("ratio") is None:
        return None
    return RatioEstimate(c["ratio"], c["ci_low"], c["ci_high"], c["p_value"], c["rounds"])


def pairwise(report: dict, b: str, others: list[str]) -> list[dict]:
    """One row per (case, A): B against A, with the verdict the report's rule gives."""
    timing = report["timing"]
    rows = []
    for case in timing["cases"]:
        by = {v["variant"]: v for v in case["variants"] if v["status"] == "ok"}
        for a in others:
            if b not in by or a not in by:
                rows.append({"shape": case["shape"], "dtype": case.get("dtype"), "mode": case["mode"], "a": a,
                             "verdict": "not timed"})
                continue
            ra, rb = rounds_of(by[a]), rounds_of(by[b])
            n = min(len(ra), len(rb))
            est = ratio_with_interval(ra[:n], rb[:n], confidence=timing.get("confidence", 0.95))
            decision = decide(est, timing.get("noise", 0.01), control_of(case))
            rows.append({"shape": case["shape"], "dtype": case.get("dtype"), "mode": case["mode"], "a": a,
                         "ratio": est.ratio, "ci": (est.ci_low, est.ci_high), "p": est.p_value,
                         "verdict": decision.verdict, "margin": decision.margin, "basis": decision.basis})
    return rows


def render(rows: list[dict], b: str) -> str:
    lines = [f"| shape | dtype | mode | {b} against | ratio | 95% interval | p | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "ratio" not in r:
            lines.append(f"| {r['shape']} | {r['dtype']} | {r['mode']} | {r['a']} | - | - | - | {r['verdict']} |")
            continue
        lines.append(f"| {r['shape']} | {r['dtype']} | {r['mode']} | {r['a']} | {r['ratio']:.3f} | "
                     f"{r['ci'][0]:.3f}-{r['ci'][1]:.3f} | {r['p']:.4f} | {r['verdict']} "
                     f"({r['basis']} ±{100 * r['margin']:.2f}%) |")
    lines.append("")
    lines.append(f"ratio: median time of {b} over the other's, from the rounds both were timed in; faster/slower "
                 "only when p < 0.05 and the whole interval lies outside 1 ± the larger of the noise band and the "
                 "case's A/A control reach (compare.stats.decide)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("b")
    parser.add_argument("others", nargs="+")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text())
    except (OSError, ValueError) as exc:
        print(f"pairwise: cannot read {args.report}: {exc}", file=sys.stderr)
        return 2
    if not report.get("timing") or not report["timing"].get("cases"):
        print(f"pairwise: {args.report} has no timed cases; a report made with the timing check is needed",
              file=sys.stderr)
        return 2
    print(render(pairwise(report, args.b, args.others), args.b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
