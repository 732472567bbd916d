"""Spread sweeps, measured: one comparison in one process, with --jobs N and through --scheduler (a local Dask
cluster started here), each timed; every report.json must equal the first (host, command and timings
aside). Writes results.json, report.md and jobs.png into --report-dir. `--gpu` (one GPU): the A/A (one
kernel loaded three times, seed preset, every pass) and the seed pair, each the three ways, and whether
every timing verdict is the one process's. Commands: benchmarks/README.md."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # the Dask workers started here import kernel-ab's modules from this tree
KERNEL = "variants/group_norm/explicit_offset.py::group_norm_forward"
AA = [f"--variant=a{i}={KERNEL}" for i in (1, 2, 3)]
# the environment as it came: a LocalCluster sets OMP_NUM_THREADS=1 in this process, and torch's CPU
# reductions (the reference's backward) sum in an order that depends on the thread count
ENV = dict(os.environ)


def _kept(report: dict) -> dict:
    """The report less what may differ between runs of one comparison: host, command, times, timings."""
    kept = {k: v for k, v in report.items() if k not in ("environment", "timing", "headline")}
    headline = report.get("headline") or {}   # its timing lines quote the measured ratios
    kept["headline"] = {**headline, "pairs": [{**p, "lines": [ln for ln in p.get("lines", []) if ln.get("topic") != "timing"]}
                                              for p in headline.get("pairs", [])]}
    return kept


def verdicts(report: dict) -> list:
    """Every timing case's verdicts (and the A/A control's), in the report's order."""
    cases = (report.get("timing") or {}).get("cases", [])
    # the hidden A/A control's own statistic calibrates the band; it is no verdict the report gives
    return [(c["dtype"], c["shape"], c["mode"], [(x["variant"], x["verdict"]) for x in c["comparisons"]])
            for c in cases]


def run(name: str, args: list[str], out: Path) -> dict:
    """One `main.py compare` run: its wall time and report."""
    path = out / f"{name}.json"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "compare", *args, "--quiet", "--json", str(path),
                           "--force"], cwd=ROOT, env=ENV, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return {"name": name, "args": args, "wall_s": round(wall, 2), "report": json.loads(path.read_text()),
            "stderr": proc.stderr.strip().splitlines()[-3:]}


def configs(jobs: list[int], dask_workers: int, gpu: bool):
    """(name, extra args, Dask cluster arguments or None) of every run after the one-process one."""
    for n in jobs:
        yield f"jobs{n}", ["--jobs", str(n)], None
    if dask_workers:
        cluster = {"n_workers": dask_workers, "threads_per_worker": 1}
        if gpu:
            cluster["resources"] = {"GPU": 1}
        yield f"dask{dask_workers}", None, cluster


def sweep(label: str, base: list[str], jobs: list[int], dask_workers: int, gpu: bool, out: Path) -> dict:
    runs = [run(f"{label}-one-process", base, out)]
    for name, extra, cluster in configs(jobs, dask_workers, gpu):
        if cluster is None:
            runs.append(run(f"{label}-{name}", base + extra, out))
            continue
        from distributed import LocalCluster
        with LocalCluster(processes=True, dashboard_address=":0", **cluster) as c:
            runs.append(run(f"{label}-{name}", base + ["--scheduler", c.scheduler_address], out))
    first = runs[0]["report"]
    for r in runs:
        r["same_report"] = _kept(r["report"]) == _kept(first)
        r["same_verdicts"] = verdicts(r["report"]) == verdicts(first)
        r["verdicts"] = verdicts(r["report"])
        r["ran_on"] = sorted({c.get("ran_on", "") for c in (r["report"].get("timing") or {}).get("cases", [])})
        r["incidents"] = r["report"].get("incidents", [])
        del r["report"]
    return {"label": label, "command": "main.py compare " + " ".join(base), "runs": runs}


def markdown(results: dict) -> str:
    lines = [f"# Spread sweeps: {results['what']}", "", f"Host: {results['host']}", ""]
    for s in results["sweeps"]:
        lines += [f"## {s['label']}", "", f"`{s['command']}`", "",
                  "| run | wall (s) | report equal to one process | timing verdicts equal | timed on |",
                  "|---|---:|---|---|---|"]
        for r in s["runs"]:
            lines.append(f"| {r['name']} | {r['wall_s']:.1f} | {'yes' if r['same_report'] else 'NO'} | "
                         f"{'yes' if r['same_verdicts'] else 'NO'} | {'; '.join(r['ran_on']) or '-'} |")
        lines.append("")
    return "\n".join(lines)


def figure(results: dict, path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    runs = [r for s in results["sweeps"] for r in s["runs"]]
    fig, ax = plt.subplots(figsize=(max(4, len(runs) * 1.2), 3))
    ax.bar([r["name"] for r in runs], [r["wall_s"] for r in runs])
    ax.set_ylabel("wall time (s)")
    ax.set_title(results["what"])
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--report-dir", required=True, type=Path)
    p.add_argument("--shape", help="one shape instead of the preset (a quick check)")
    p.add_argument("--jobs", default="1,2", help="comma list of --jobs values (default 1,2)")
    p.add_argument("--dask-workers", type=int, default=2, help="LocalCluster workers (0: no Dask run; --gpu: 1)")
    p.add_argument("--gpu", action="store_true", help="the GPU part: A/A and the seed pair on one GPU")
    p.add_argument("--part", choices=("aa", "seed", "both"), default="both", help="--gpu: which comparison")
    p.add_argument("--max-seconds", help="passed to compare: measurement time cap per timing case")
    args = p.parse_args(argv)
    out = args.report_dir
    out.mkdir(parents=True, exist_ok=True)
    jobs = [int(j) for j in args.jobs.split(",") if j]
    shape = ["--shape", args.shape] if args.shape else []
    cap = ["--max-seconds", args.max_seconds] if args.max_seconds else []
    if args.gpu:
        dask = 1 if args.dask_workers else 0
        aa = AA + (shape or ["--preset", "seed"]) + cap + ["--check", "timing", "--modes", "forward,backward,full"]
        seed = (shape or ["--preset", "seed"]) + cap
        sweeps = ([sweep("aa", aa, jobs, dask, True, out)] if args.part in ("aa", "both") else []) + \
            ([sweep("seed-pair", seed, jobs, dask, True, out)] if args.part in ("seed", "both") else [])
        what = "A/A and the seed pair on one GPU"
    else:
        base = ["--inputs", "all", "--dtype", "all", "--device", "cpu"] + shape
        sweeps = [sweep("cpu", base, jobs, args.dask_workers, False, out)]
        what = "`compare --inputs all --dtype all` on the CPU" + (f", shape {args.shape}" if args.shape else "")
    import platform
    results = {"what": what, "host": f"{platform.node()}, {os.cpu_count()} CPU cores, {platform.platform()}",
               "sweeps": sweeps}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "report.md").write_text(markdown(results))
    drew = figure(results, out / "jobs.png")
    print(markdown(results))
    print(f"wrote {out}/results.json, report.md{', jobs.png' if drew else ''}")
    return 0 if all(r["same_report"] for s in sweeps for r in s["runs"]) else 1   # verdicts: timings may differ


if __name__ == "__main__":
    sys.exit(main())
