"""Does the timing verdict tell the truth? The evidence, on a GPU; writes a Markdown summary (and JSON).

An A/A of one kernel under three names, a planted ~3% slowdown that must be "slower" every time, and the
seed's pair, all through kernel-ab's own path; `--aa VARIANT` runs an A/A of a registered variant alone,
`--between` compares two runs. What each part checks and how to run it: benchmarks/README.md."""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compare.checks import stats  # noqa: E402
from compare.model.results import TimingCase, TimingComparison  # noqa: E402

KERNEL = "variants/group_norm/explicit_offset.py::group_norm_forward"
NO_DIFFERENCE = stats.NO_DIFFERENCE


def interval_only_verdict(case: TimingCase, c: TimingComparison, noise: float) -> str:
    """The verdict the interval gives against the noise band and the A/A control, ignoring whether the
    two variants run the same compiled code."""
    est = stats.RatioEstimate(c.ratio, c.ci_low, c.ci_high, c.p_value, c.rounds)
    control = None
    if case.control is not None and case.control.verdict != "n/a":
        k = case.control
        control = stats.RatioEstimate(k.ratio, k.ci_low, k.ci_high, k.p_value, k.rounds)
    return stats.decide(est, noise, control).verdict


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.2f}%"


def rows_of(cases, noise: float) -> list[dict]:
    rows = []
    for case in cases:
        aa = case.control
        fouled = {f.variant for f in case.fouls}
        for c in case.comparisons:
            rows.append({"fouled": bool({c.variant, c.baseline} & fouled), "reason": c.reason, "shape": case.shape, "dtype": case.dtype, "mode": case.mode, "graph": case.graph, "variant": c.variant,
                         "baseline": c.baseline, "verdict": c.verdict, "basis": c.basis, "ratio": c.ratio,
                         "ci_low": c.ci_low, "ci_high": c.ci_high, "p": c.p_value, "margin": c.margin,
                         "interval_only": interval_only_verdict(case, c, noise) if c.verdict != "n/a" else "n/a",
                         "aa_ratio": aa.ratio if aa else 0.0, "aa_reach": aa.reach if aa else 0.0,
                         "launch_bound": list(case.launch_bound), "seconds": case.seconds})
    return rows


def table(rows: list[dict]) -> list[str]:
    out = ["| shape | mode | variant | ratio | 95% interval | p | verdict | basis | interval alone | A/A | graph |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['shape']} | {r['mode']} | {r['variant']} vs {r['baseline']} | {_pct(r['ratio'])} | "
                   f"[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}] | {r['p']:.3g} | {r['verdict']}{' (' + r['reason'] + ')' if r.get('fouled') else ''} | {r['basis']} | "
                   f"{r['interval_only']} | {_pct(r['aa_ratio'])} (±{r['aa_reach'] * 100:.2f}%) | "
                   f"{'yes' if r['graph'] else 'no'}{' (launch-bound)' if r['launch_bound'] else ''} |")
    return out


def flagged(rows: list[dict], key: str = "verdict") -> int:
    """Comparisons that said more than "no difference": a verdict, or none because the audit fouled a side
    (on one kernel under several names, either is a false alarm)."""
    return sum(r[key] not in (NO_DIFFERENCE, "n/a") or r.get("fouled", False) for r in rows)


def sweep(variants: tuple[str, ...], external: tuple[str, ...], modes: tuple[str, ...], backend, registry,
          preset: str = "seed", dtype: str = "float32"):
    """The timing cases of `preset` through the pipeline, as `main.py compare` runs them."""
    from compare.comparison import pipeline
    from compare.checks.timing import TimingConfig
    request = pipeline.Request(variants, preset=preset, dtype=dtype, checks=("timing",),
                               timing=TimingConfig(modes=modes), external=external)
    with pipeline.loaded(request, registry) as (request, reg, failed):
        report = pipeline.run(request, reg, backend, failed=failed)
    return report.timing


def under_other_names(registry, subject: str, names: tuple[str, ...]):
    """`registry` with `subject` registered again under each of `names` (the same variant, other names):
    the A/A of a variant that --variant cannot load (one with its own launcher)."""
    variant = registry.get(subject)
    by_family = {f: dict(vs) for f, vs in registry.by_family.items()}
    by_family[variant.family].update({n: dataclasses.replace(variant, name=n) for n in names})
    return dataclasses.replace(registry, by_family=by_family)


def aa_only(args, backend, reg) -> int:
    """`--aa VARIANT`: that variant against itself under two other names over one preset, dtypes and modes."""
    names = ("a1", "a2", "a3")
    started = time.perf_counter()
    # the three names live in this process's registry only: a fresh timing process could not find them
    os.environ["KERNEL_AB_TIMING_IN_PROCESS"] = "1"
    section = sweep(names, (), tuple(args.modes.split(",")), backend, under_other_names(reg, args.aa, names),
                    args.preset, args.dtype)
    if section is None:
        raise SystemExit("kernel-ab: error: the A/A gave no timing section (no GPU, or every variant failed)")
    rows = rows_of(section.cases, section.noise)
    seconds = time.perf_counter() - started
    lines = ["# Timing validation: one variant under three names", "",
             f"`{args.aa}` registered as a1, a2 and a3 (the same variant object, so the comparisons also say "
             "\"identical timed code\"; the column \"by the interval alone\" is the statistics' own verdict), "
             f"preset {args.preset}, {args.dtype}, {args.modes}, the tool's default timing settings, every dtype "
             "timed in this one process. "
             f"{seconds:.0f} s in all.", "", f"Timing method: {section.method}.", "",
             "| dtype | mode | comparisons | not \"no difference beyond noise\" | by the interval alone | "
             "largest ratio off 1 |", "|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["dtype"], r["mode"]) for r in rows):
        sub = [r for r in rows if (r["dtype"], r["mode"]) == key]
        worst = max(abs(r["ratio"] - 1) for r in sub) * 100
        lines.append(f"| {key[0]} | {key[1]} | {len(sub)} | {flagged(sub)} | {flagged(sub, 'interval_only')} | "
                     f"{worst:.2f}% |")
    lines += ["", *table(rows)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"aa": rows, "seconds": seconds}, indent=1))
    print("\n".join(lines[:12 + len(rows)]))
    return 0


def planted(repeats: int, fraction: float, registry) -> tuple[list[dict], str]:
    """explicit_offset against itself plus one copy of `fraction` of x, on the 512-channel shape."""
    import torch
    from compare.checks import harness, timing
    from variants.group_norm import FAMILY, PRESETS
    base = registry.get("explicit_offset")
    shape = PRESETS["seed512"].shapes[0]
    inputs = FAMILY.make_inputs(shape, torch.float32, "cuda", 0)
    n_extra = int(shape.numel * fraction)
    scratch = torch.empty(n_extra, dtype=torch.float32, device="cuda")

    def run(inputs_, outputs, shape_):
        base.run(inputs_, outputs, shape_)
        scratch.copy_(inputs_.x.reshape(-1)[:n_extra])
    slow = dataclasses.replace(base, name="planted_slow", why="explicit_offset plus an extra copy", run=run,
                               origin="planted")
    config = timing.TimingConfig()
    copy_gbs = timing.copy_bandwidth_gbs()
    cases = []
    for i in range(repeats):
        calls, control = timing.case_calls(functools.partial(harness.bench_call, FAMILY), [base, slow], inputs, shape,
                                           "forward", config.placements)
        cases.append(timing.time_case(calls, FAMILY.bytes_moved(shape, torch.float32, "forward"), copy_gbs,
                                      shape.label, "forward", dataclasses.replace(config, seed=i), control=control))
    return rows_of(cases, config.noise), shape.label


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--repeats", type=int, default=20, help="runs of the planted slowdown")
    p.add_argument("--slow-fraction", type=float, default=0.025,
                   help="fraction of x the planted slowdown copies once more per call")
    p.add_argument("--out", type=Path, required=True, help="the Markdown summary")
    p.add_argument("--json", type=Path, help="every comparison, for --between")
    p.add_argument("--between", type=Path, nargs=2, metavar="RUN.json", help="compare two earlier runs instead")
    p.add_argument("--aa", metavar="VARIANT", help="only the A/A, of this registered variant under three names")
    p.add_argument("--preset", default="seed", help="with --aa: the preset (default seed)")
    p.add_argument("--dtype", default="float32", help="with --aa: dtypes, comma-separated (default float32)")
    p.add_argument("--modes", default="forward,backward,full", help="with --aa: modes, comma-separated")
    return p


def _markdown(slow_fraction: float, seconds: float, method: str, aa: list, planted_rows: tuple, pair: list,
              env) -> list[str]:
    """The Markdown summary: the counts per part, then each part's table and the environment."""
    from compare.model.results import Report
    from compare.render.tables import environment_lines
    slow, slow_shape = planted_rows
    lines = ["# Timing validation", "",
             f"Three copies of `{KERNEL}` (a1, a2, a3, loaded as `--variant` loads them), the planted slowdown "
             f"({slow_fraction:.1%} of x copied once more per call) and the seed's pair, all with the "
             f"tool's default timing settings. {seconds:.0f} s in all.", "",
             f"Timing method: {method}.", "",
             "## Summary", "",
             "| part | comparisons | not \"no difference beyond noise\" (a verdict, or a foul) | by the interval alone |", "|---|---|---|---|",
             f"| A/A, seed preset, forward/backward/full | {len(aa)} | {flagged(aa)} | {flagged(aa, 'interval_only')} |"]
    for mode in ("forward", "backward", "full"):
        sub = [r for r in aa if r["mode"] == mode]
        lines.append(f"| A/A, {mode} | {len(sub)} | {flagged(sub)} | {flagged(sub, 'interval_only')} |")
    n_slow = sum(r["verdict"] == "slower" for r in slow)
    lines.append(f"| planted slowdown, {slow_shape}, forward: \"slower\" | {len(slow)} | {n_slow} slower | "
                 f"{sum(r['interval_only'] == 'slower' for r in slow)} slower |")
    for mode in ("forward", "backward"):
        sub = [r for r in pair if r["mode"] == mode]
        verdicts = ", ".join(f"{v} {sum(r['verdict'] == v for r in sub)}" for v in dict.fromkeys(r["verdict"] for r in sub))
        lines.append(f"| seed pair, {mode} | {len(sub)} | {verdicts} | {flagged(sub, 'interval_only')} |")
    lines += ["", "\"by the interval alone\": the verdict without the identical-timed-code rule (every Triton variant's "
              "backward runs the one shared backward kernel), so the statistics are seen to hold on their own.", ""]
    slow_ratios = [(r["ratio"] - 1) * 100 for r in slow]
    lines += [f"Planted slowdown: ratio {min(slow_ratios):+.2f}% to {max(slow_ratios):+.2f}%.", ""]
    lines += ["## A/A: a1, a2, a3 (one kernel, three names)", "", *table(aa), "",
              "## Planted slowdown", "", *table(slow), "",
              "## The seed's pair", "", *table(pair), "",
              "## Environment", "", *(f"- {x}" for x in environment_lines(Report("group_norm", "seed", "float32", "", (), env)))]
    return lines


def main() -> int:
    args = _parser().parse_args()
    if args.between:
        args.out.write_text("\n".join(between(*(json.loads(f.read_text()) for f in args.between))) + "\n")
        print(args.out.read_text())
        return 0
    from compare.runtime.backend import configure
    from compare.comparison.environment import collect
    from variants import registry
    backend = configure("cuda")
    reg = registry()
    if args.aa:
        return aa_only(args, backend, reg)
    started = time.perf_counter()
    specs = tuple(f"{n}={KERNEL}" for n in ("a1", "a2", "a3"))
    aa_section = sweep(("a1", "a2", "a3"), specs, ("forward", "backward", "full"), backend, reg)
    aa = rows_of(aa_section.cases, aa_section.noise)
    slow, slow_shape = planted(args.repeats, args.slow_fraction, reg)
    pair_section = sweep(("pointer_mutation", "explicit_offset"), (), ("forward", "backward"), backend, reg)
    pair = rows_of(pair_section.cases, pair_section.noise)
    seconds = time.perf_counter() - started
    env = collect(backend)
    result = {"aa": aa, "planted": slow, "pair": pair, "seconds": seconds, "environment": dataclasses.asdict(env)}
    lines = _markdown(args.slow_fraction, seconds, aa_section.method, aa, (slow, slow_shape), pair, env)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print("\n".join(lines[:20]))
    return 0


def between(run1: dict, run2: dict) -> list[str]:
    """The two runs side by side: verdict counts, and each seed-pair ratio's move between the runs."""
    lines = ["# Timing validation: two runs in fresh processes", "",
             "| part | run 1: not \"no difference\" | run 2: not \"no difference\" |", "|---|---|---|",
             f"| A/A ({len(run1['aa'])} comparisons) | {flagged(run1['aa'])} | {flagged(run2['aa'])} |",
             f"| A/A by the interval alone | {flagged(run1['aa'], 'interval_only')} | {flagged(run2['aa'], 'interval_only')} |",
             f"| planted slowdown: \"slower\" | {sum(r['verdict'] == 'slower' for r in run1['planted'])} of "
             f"{len(run1['planted'])} | {sum(r['verdict'] == 'slower' for r in run2['planted'])} of {len(run2['planted'])} |",
             "", "## The seed's pair in both runs", "",
             "| shape | mode | run 1 ratio | verdict | run 2 ratio | verdict | difference (pp) |", "|---|---|---|---|---|---|---|"]
    worst = {}
    for a, b in zip(run1["pair"], run2["pair"]):
        d = (b["ratio"] - a["ratio"]) * 100
        worst[a["mode"]] = max(worst.get(a["mode"], 0.0), abs(d))
        lines.append(f"| {a['shape']} | {a['mode']} | {_pct(a['ratio'])} | {a['verdict']} | {_pct(b['ratio'])} | "
                     f"{b['verdict']} | {d:+.2f} |")
    lines.append("")
    for mode, w in worst.items():
        n1 = sum(r["verdict"] == "slower" for r in run1["pair"] if r["mode"] == mode)
        n2 = sum(r["verdict"] == "slower" for r in run2["pair"] if r["mode"] == mode)
        nd = [sum(r["verdict"] == NO_DIFFERENCE for r in run["pair"] if r["mode"] == mode) for run in (run1, run2)]
        lines.append(f"- {mode}: \"slower\" on {n1} and {n2} shapes, \"no difference beyond noise\" on {nd[0]} and "
                     f"{nd[1]}; ratios moved at most {w:.2f} percentage points between the runs")
    return lines


if __name__ == "__main__":
    sys.exit(main())
