"""The process-wide cases of tests/test_process_guard.py as a table: each act, what the report said of the
culprit, its failure kind, the exit code under --fail-on-numerics, and whether every other variant's numbers
equal those of a run without it. Writes Markdown (CPU: the interpreter; on a GPU: compiled kernels).

    python3 benchmarks/process_guard_table.py --out reports/exploits/process_wide_cpu.md
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    from tests.test_process_guard import ACTS, SHAPE, _compare, _hostile
    with tempfile.TemporaryDirectory() as tmp:
        r, clean = _compare(Path(tmp))
        rows = []
        for name, act, when, _ in ACTS:
            folder = Path(tmp, name)
            folder.mkdir()
            r, report = _compare(folder, "--variant", f"bad={_hostile(folder, act, when)}::op")
            bad = next((v for v in (report or {}).get("variants", ()) if v["name"] == "bad"), {})
            same = report is not None and report["numerics"]["cases"] == clean["numerics"]["cases"]
            act_text = " ".join(act.split())
            rows.append(f"| {name} | at {when}: `{act_text[:70]}{'...' if len(act_text) > 70 else ''}` | "
                        f"{bad.get('error', '(no report)').replace(tmp + '/', '').replace('|', '/')} | "
                        f"{bad.get('failure', '')} | "
                        f"{r.returncode} | {'yes' if same else 'NO'} |")
    lines = [f"# Process-wide acts, each beside explicit_offset and a correct op (group_norm {SHAPE}, numerics)", "",
             "Command: `python3 benchmarks/process_guard_table.py --out " + str(args.out) + "`; each row is "
             "`main.py compare explicit_offset --variant ok=OK::op --variant bad=BAD::op --shape " + SHAPE +
             " --check numerics --inputs normal --trials 1 --fail-on-numerics` (tests/test_process_guard.py).", "",
             "| act | what the variant does | what the report says of it | kind | exit | others unchanged |",
             "|---|---|---|---|---|---|", *rows, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
