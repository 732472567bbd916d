"""Does the timing comparison tell the truth? (GPU; writes a Markdown report.)

A/A: a variant against itself, N times: at most one verdict other than "no difference beyond noise".
Planted slowdown: the same variant plus a small extra copy (about 3% more time): "slower" N of N times.
Interval width: on the seed's 512-channel shape, the 95% interval of explicit_offset / pointer_mutation
and the measurement seconds per pair.

    python3 benchmarks/timing_validation.py --repeats 20 --out reports/timing_validation.md
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compare.backend import configure  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--slow-fraction", type=float, default=0.025,
                   help="fraction of x the planted slowdown copies once more per call")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    backend = configure("cuda")
    import torch
    from compare import timing
    from compare.environment import collect
    from variants import registry
    from variants.group_norm import FAMILY, PRESETS

    reg = registry()
    shape = PRESETS["seed512"].shapes[0]
    dtype = torch.float32
    inputs = FAMILY.make_inputs(shape, dtype, "cuda", 0)
    nbytes = FAMILY.bytes_moved(shape, dtype, "forward")
    copy_gbs = timing.copy_bandwidth_gbs()
    config = timing.TimingConfig(rounds=60, calls_per_round=5, max_seconds=10.0, graph="on")
    base = reg.get("explicit_offset")
    n_extra = int(shape.numel * args.slow_fraction)
    scratch = torch.empty(n_extra, dtype=dtype, device="cuda")
    flat_x = inputs.x.reshape(-1)[:n_extra]

    def slow_call():
        fn = FAMILY.bench_call(base, inputs, shape, "forward")

        def run():
            fn()
            scratch.copy_(flat_x)
        return run

    lines = ["# Timing validation", "", f"Shape {shape.label}, float32, forward, CUDA graph replay; "
             f"{config.rounds} rounds x {config.calls_per_round} calls, cap {config.max_seconds:g} s per pair.", ""]
    results = {}
    for label, make_b in (("A/A (explicit_offset vs itself)", lambda: FAMILY.bench_call(base, inputs, shape, "forward")),
                          (f"planted slowdown (explicit_offset + copy of {args.slow_fraction:.1%} of x)", slow_call)):
        verdicts, widths, ratios, seconds = [], [], [], []
        for i in range(args.repeats):
            calls = {"A": FAMILY.bench_call(base, inputs, shape, "forward"), "B": make_b()}
            case = timing.time_case(calls, nbytes, copy_gbs, shape.label, "forward",
                                    dataclasses.replace(config, seed=i))
            c = case.comparisons[0]
            verdicts.append(c.verdict)
            widths.append((c.ci_high - c.ci_low) / 2 * 100)
            ratios.append((c.ratio - 1) * 100)
            seconds.append(case.seconds)
            print(f"{label} run {i}: {c.verdict}, {ratios[-1]:+.2f}% [{(c.ci_low - 1) * 100:+.2f}%, "
                  f"{(c.ci_high - 1) * 100:+.2f}%], p={c.p_value:.3g}, {case.seconds:.1f} s", flush=True)
        counts = {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}
        results[label] = counts
        lines += [f"## {label}", "", "| run | verdict | ratio | interval half-width | seconds |", "|---|---|---|---|---|"]
        lines += [f"| {i} | {v} | {r:+.2f}% | ±{w:.2f}% | {s:.1f} |"
                  for i, (v, r, w, s) in enumerate(zip(verdicts, ratios, widths, seconds))]
        lines += ["", f"Verdicts: {counts}; widest half-interval ±{max(widths):.2f}%; longest {max(seconds):.1f} s.", ""]

    pm = reg.get("pointer_mutation")
    calls = {"pointer_mutation": FAMILY.bench_call(pm, inputs, shape, "forward"),
             "explicit_offset": FAMILY.bench_call(base, inputs, shape, "forward")}
    case = timing.time_case(calls, nbytes, copy_gbs, shape.label, "forward", timing.TimingConfig(max_seconds=10.0))
    c = case.comparisons[0]
    lines += ["## The seed's pair on its 512-channel shape (eager launches, default settings)", "",
              f"explicit_offset / pointer_mutation = {(c.ratio - 1) * 100:+.2f}%, 95% interval "
              f"[{(c.ci_low - 1) * 100:+.2f}%, {(c.ci_high - 1) * 100:+.2f}%] (half-width "
              f"±{(c.ci_high - c.ci_low) / 2 * 100:.2f}%), p={c.p_value:.3g}, verdict: {c.verdict}, "
              f"{case.seconds:.1f} s of measurement.", ""]
    lines += ["## Environment", "", *(f"- {x}" for x in environment_lines_of(collect(backend)))]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-12:]))
    return 0


def environment_lines_of(env) -> list[str]:
    from compare.render.tables import environment_lines
    from compare.results import Report
    return environment_lines(Report("group_norm", "seed512", "float32", "", (), env))


if __name__ == "__main__":
    sys.exit(main())
