"""The process-wide cases of tests/test_process_guard.py as a table: each act, what the report said of the culprit,
its failure kind, the exit code under its check's gate, and whether every other variant's results equal those of a
run without it. `--check timing` (a GPU) runs the act in the timing processes, `--jobs 2` in task workers.

    python3 benchmarks/process_guard_table.py --out reports/exploits/process_wide_cpu.md
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GATES = {"numerics": ("--fail-on-numerics",), "timing": ("--fail-if-slower", "1.5", "--modes", "forward",
                                                         "--max-seconds", "1")}


def _run(folder: Path, check: str, extra: list[str], bad: Path | None) -> tuple:
    from tests.test_process_guard import OK, SHAPE
    (folder / "ok.py").write_text(OK)
    out = folder / "r.json"
    variants = ["--variant", f"ok={folder / 'ok.py'}::op"] + (["--variant", f"bad={bad}::op"] if bad else [])
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "compare", "explicit_offset", *variants, *extra,
                        "--shape", SHAPE, "--check", check, "--inputs", "normal", "--trials", "1", "--quiet",
                        "--json", str(out), *GATES[check]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return r, json.loads(out.read_text()) if out.exists() else None


def _others(report: dict | None, check: str):
    """What must not move: the numerics cases whole; of timing, whether each other variant was compared in each
    case (its verdict itself may move from run to run within the noise)."""
    if report is None:
        return None
    if check == "numerics":
        return report["numerics"]["cases"]
    cases = (report.get("timing") or {}).get("cases", [])
    return [[(c["variant"], c["verdict"] != "n/a") for c in case["comparisons"] if c["variant"] != "bad"]
            for case in cases]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--check", choices=sorted(GATES), default="numerics")
    p.add_argument("--jobs", type=int, default=0, help="run the cases as tasks in N worker processes")
    p.add_argument("--acts", default="", help="comma list of the acts to run (default: every one)")
    args = p.parse_args()
    from tests.test_process_guard import ACTS, SHAPE, _hostile
    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    acts = [a for a in ACTS if not args.acts or a[0] in args.acts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        r, clean = _run(Path(tmp), args.check, extra, None)
        rows = []
        for number, (name, act, when, _) in enumerate(acts, 1):
            folder = Path(tmp, name)
            folder.mkdir()
            start = time.monotonic()
            r, report = _run(folder, args.check, extra, _hostile(folder, act, when))
            bad = next((v for v in (report or {}).get("variants", ()) if v["name"] == "bad"), {})
            same = report is not None and _others(report, args.check) == _others(clean, args.check)
            print(f"[{number}/{len(acts)}] {name}: exit {r.returncode}, {bad.get('failure', '')}, "
                  f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
            act_text = " ".join(act.split())
            rows.append(f"| {name} | at {when}: `{act_text[:70]}{'...' if len(act_text) > 70 else ''}` | "
                        f"{bad.get('error', '(no report)').replace(tmp + '/', '').replace('|', '/')} | "
                        f"{bad.get('failure', '')} | {r.returncode} | {'yes' if same else 'NO'} |")
    command = " ".join(["python3 benchmarks/process_guard_table.py", *sys.argv[1:]])
    lines = [f"# Process-wide acts, each beside explicit_offset and a correct op (group_norm {SHAPE}, {args.check})", "",
             f"Command: `{command}`; each row is `" + " ".join(["main.py compare explicit_offset --variant ok=OK::op "
                                                                "--variant bad=BAD::op", *extra, "--shape", SHAPE,
                                                                "--check", args.check, "--inputs normal --trials 1",
                                                                *GATES[args.check]]) + "` (tests/test_process_guard.py).",
             "",
             "| act | what the variant does | what the report says of it | kind | exit | others unchanged |",
             "|---|---|---|---|---|---|", *rows, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
