#!/usr/bin/env bash
# Hostile ops beside an honest pair, timed on a GPU (docs/threat-model.md; the simulated-device tests are
# tests/test_timing_isolation.py): group_norm's pointer_mutation and explicit_offset at the seed512 preset,
# timed alone (run "honest") and again beside op variants that return one persistent output buffer, return a
# cached answer, abort their process in the timed rounds, or keep the GPU busy from a thread their module's
# import starts (run "hostile"); each run twice, so the honest
# pair's numbers are read against their own run-to-run spread (RUNS=1: once). steps.txt holds exit codes and
# wall times.
#   bash benchmarks/timing_isolation_gpu.sh
set -uo pipefail
source "$(dirname "$0")/steps.sh"
start_part
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$W/gpu.txt" 2>&1
mkdir -p "$W/ops"
cat > "$W/ops/hostile.py" <<'PY'
"""Group-norm ops, each right in its numbers and hostile to the measurement (kernel-ab's timing isolation)."""
import os
import time

import torch

_BUFFERS, _CACHE, _CALLS = {}, {}, [0]


def _y(X, W, B, num_channels, num_groups, eps):
    return torch.nn.functional.group_norm(X, num_groups, W, B, eps)


def persistent(X, W, B, num_channels, num_groups, eps):
    """Writes every answer into one buffer per shape and returns it (a reused workspace)."""
    y = _y(X, W, B, num_channels, num_groups, eps)
    out = _BUFFERS.setdefault(tuple(y.shape), torch.empty_like(y).detach())
    return out.copy_(y)


def cached(X, W, B, num_channels, num_groups, eps):
    """Keeps its answer keyed by the input's address and returns it again."""
    key = (X.data_ptr(), tuple(X.shape))
    if key not in _CACHE:
        _CACHE[key] = _y(X, W, B, num_channels, num_groups, eps)
    return _CACHE[key]


def aborting(X, W, B, num_channels, num_groups, eps):
    """Right for its first seconds in a process, then aborts it (SIGABRT), as a crashing extension would: the
    timed rounds replay few Python calls (CUDA graphs), so a count of calls would not reach them."""
    _CALLS[0] = _CALLS[0] or time.monotonic()
    if time.monotonic() - _CALLS[0] > 3.0:
        os.abort()
    return _y(X, W, B, num_channels, num_groups, eps)
PY
cat > "$W/ops/busy.py" <<'PY'
"""A group-norm op right in its numbers whose module, when imported, starts a daemon thread that launches work on
a side stream in a loop: the GPU is busy between its calls (kernel-ab names it for that)."""
import threading

import torch


def _keep_busy():
    x = torch.ones(64 << 20, device="cuda")   # 256 MB: each launch reads and writes it
    with torch.cuda.stream(torch.cuda.Stream()):
        while True:
            x.mul_(1.0000001)


threading.Thread(target=_keep_busy, name="keeps the GPU busy", daemon=True).start()


def busy(X, W, B, num_channels, num_groups, eps):
    return torch.nn.functional.group_norm(X, num_groups, W, B, eps)
PY
base=(python3 main.py compare pointer_mutation explicit_offset --family group_norm --preset seed512 --check timing)
hostile=(--variant "persistent=$W/ops/hostile.py::persistent" --variant "cached=$W/ops/hostile.py::cached"
         --variant "aborting=$W/ops/hostile.py::aborting" --variant "busy=$W/ops/busy.py::busy")
for n in $(seq 1 "${RUNS:-2}"); do
    step "honest_$n" 120 "${base[@]}" --json "$W/honest_$n.json"
    step "hostile_$n" 300 "${base[@]}" "${hostile[@]}" --json "$W/hostile_$n.json"   # busy: run again without it
done
python3 - "$W" > "$W/summary.txt" <<'PY'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    data = json.loads(path.read_text())
    print(f"== {path.stem}")
    for v in data.get("variants", []):
        if v.get("status") == "failed":
            print(f"   failed {v['name']}: {v.get('error', '')[:200]}")
    for v in data.get("verdicts", []):
        print(f"   {v['check']} {v['variant']} vs {v.get('against')}: {v['verdict']} ({v.get('amount', '')})")
    for case in (data.get("timing") or {}).get("cases", []):
        print(f"   {case['shape']} {case['mode']} {case['dtype']}: " + "; ".join(
            f"{v['variant']} {v['status']} {v['median_ms']:.4f} ms {v['reason'][:80]}" for v in case["variants"]))
        for c in case["comparisons"]:
            print(f"     {c['variant']}/{c['baseline']}: {c['verdict']} {c['ratio']:.4f} [{c['ci_low']:.4f}, {c['ci_high']:.4f}]")
        for f in case.get("fouls", []):
            print(f"     foul: {str(f)[:200]}")
    for s in data.get("skipped", []):
        print(f"   skipped: {str(s)[:200]}")
PY
cat "$W/summary.txt"
pack timing_isolation
