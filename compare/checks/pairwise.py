"""`pairwise REPORT.json B A [A ...]`: B against variants other than the baseline, from a timed report.

The variants of a case were timed in the same shuffled rounds, so B's and A's samples pair by round:
the ratio, interval and p-value come from compare.checks.stats.ratio_with_interval and the verdict from
compare.checks.stats.decide under the case's A/A control and the report's noise band, the rule every report states.
"""
from __future__ import annotations

import json
from pathlib import Path

from compare.checks.stats import CONFIDENCE, RatioEstimate, decide, in_rounds, ratio_with_interval
from compare.model.errors import UsageError


def add_parser(sub) -> None:
    """Register the subcommand on main.py's subparsers."""
    p = sub.add_parser("pairwise", help="judge a variant against others (not the baseline) in a timed "
                                        "report.json, from the rounds they shared")
    p.add_argument("file", type=Path, help="a report.json written by compare with the timing check")
    p.add_argument("b", metavar="B", help="the variant judged")
    p.add_argument("others", nargs="+", metavar="A", help="the variants B is judged against")
    p.set_defaults(alone=run)


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
            row = {"shape": case["shape"], "dtype": case.get("dtype"), "mode": case["mode"], "a": a}
            if b not in by or a not in by:
                rows.append({**row, "verdict": "not timed"})
                continue
            ra, rb = (in_rounds(x["samples_ms"], x["calls_per_round"], x["rounds"]) for x in (by[a], by[b]))
            n = min(len(ra), len(rb))
            est = ratio_with_interval(ra[:n], rb[:n], confidence=timing.get("confidence", CONFIDENCE))
            decision = decide(est, timing.get("noise", 0.01), control_of(case))
            rows.append({**row, "ratio": est.ratio, "ci": (est.ci_low, est.ci_high), "p": est.p_value,
                         "verdict": decision.verdict, "margin": decision.margin, "basis": decision.basis})
    return rows


def render(rows: list[dict], b: str) -> str:
    lines = [f"| shape | dtype | mode | {b} against | ratio | 95% interval | p | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        case = f"| {r['shape']} | {r['dtype']} | {r['mode']} | {r['a']} |"
        lines.append(f"{case} - | - | - | {r['verdict']} |" if "ratio" not in r else
                     f"{case} {r['ratio']:.3f} | {r['ci'][0]:.3f}-{r['ci'][1]:.3f} | {r['p']:.4f} | {r['verdict']} "
                     f"({r['basis']} ±{100 * r['margin']:.2f}%) |")
    lines += ["", f"ratio: median time of {b} over the other's, from the rounds both were timed in; faster/slower "
                  "only when p < 0.05 and the whole interval lies outside 1 ± the larger of the noise band and the "
                  "case's A/A control reach (compare.checks.stats.decide)"]
    return "\n".join(lines)


def _timed_names(report: dict, file: Path) -> set[str]:
    """The variants timed in some case; UsageError when the file holds no timed cases."""
    timing = report.get("timing") if isinstance(report, dict) else None
    cases = timing.get("cases") if isinstance(timing, dict) else None
    if not cases or not isinstance(cases, list):
        raise UsageError(f"{file} has no timed cases; give a report.json made with --check timing (on a GPU)")
    try:
        return {v["variant"] for case in cases for v in case["variants"] if v["status"] == "ok"}
    except (KeyError, TypeError) as exc:
        raise UsageError(f"{file} is not a kernel-ab report (its timed cases lack {exc}); "
                         "give a report.json written by compare") from None


def run(args, text: str) -> int:
    """The subcommand on `text`, the report file's (compare.command_line.usage.report_text: a file that is
    missing, not regular, unreadable, refused): prints the Markdown table; bad input is a UsageError."""
    try:
        report = json.loads(text)
    except (RecursionError, ValueError) as exc:
        raise UsageError(f"cannot read {args.file} as JSON ({exc}); give a report.json written by compare") from None
    timed = _timed_names(report, args.file)
    unknown = [name for name in (args.b, *args.others) if name not in timed]
    if unknown:
        raise UsageError(f"{', '.join(unknown)} not timed in {args.file}; its timed variants: "
                         f"{', '.join(sorted(timed)) or 'none'}")
    try:
        rows = pairwise(report, args.b, args.others)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise UsageError(f"{args.file}: its timed cases cannot be read ({exc!r}); give a report.json written "
                         "by compare") from None
    print(render(rows, args.b))
    return 0
