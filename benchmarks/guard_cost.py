"""What the process guard (compare/runtime/process_guard.py) costs: one comparison run in this process, the
time its snapshots took in all and per launch, and a snapshot and comparison of an unchanged process timed
alone (the fastest of 50).

    python3 benchmarks/guard_cost.py                      # the CPU's: the seed pair, a tiny shape
    python3 benchmarks/guard_cost.py --preset default     # on a GPU: the default compare's numerics
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", help="a preset of the group_norm family (default: --shape)")
    p.add_argument("--shape", default="2,8,2,16")
    args = p.parse_args()
    from compare.runtime.backend import configure
    backend = configure("auto")
    from compare.comparison import pipeline
    from compare.runtime import process_guard
    from variants import registry
    shape = {"preset": args.preset} if args.preset else {"shape": args.shape, "inputs": "all", "trials": 3}
    request = pipeline.Request(variants=("pointer_mutation", "explicit_offset", "torch"),
                               checks=("numerics", "backward"), **shape)
    start = time.perf_counter()
    with pipeline.loaded(request, registry()) as (request, reg, failed):
        pipeline.run(request, reg, backend, failed=failed)
    total = time.perf_counter() - start
    guard = process_guard.active()
    runs = []
    for _ in range(50):
        t = time.perf_counter()
        guard.undo(guard.take())
        runs.append(time.perf_counter() - t)
    print(f"{backend.device}: {guard.count} launches in {total:.1f} s; the guard {guard.seconds * 1e3:.0f} ms "
          f"({guard.seconds / total * 100:.1f}%, {guard.seconds / max(guard.count, 1) * 1e3:.2f} ms per launch); "
          f"an unchanged process: {min(runs) * 1e3:.2f} ms ({len(guard.watches)} watches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
