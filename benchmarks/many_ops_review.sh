#!/usr/bin/env bash
# A pull request of many ops reviewed within its time budget: tests/budget_library.py's `make_many` builds
# `normlib` whose pull request changes COUNT ops (default 30), each its own kernel; `review v1 v2` runs at the
# default budget (50 s on a GPU, 900 s on the CPU; BUDGET=N passes --budget N). steps.txt holds the wall time
# and exit code; many_ops.json the report (every op compared, stopped, or listed as left out: summary.txt).
#   bash benchmarks/many_ops_review.sh [COUNT]
set -uo pipefail
count=${1:-30}
source "$(dirname "$0")/steps.sh"
start_part
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$W/gpu.txt" 2>&1
python3 -c "import sys; from pathlib import Path; from tests import budget_library
budget_library.make_many(Path(sys.argv[1]), int(sys.argv[2]))" "$W" "$count" || exit 2
extra=()
[ -n "${BUDGET:-}" ] && extra=(--budget "$BUDGET")
step many_ops 300 python3 main.py review v1 v2 --repo "$W/normlib" --json "$W/many_ops.json" \
    --markdown "$W/many_ops.md" "${extra[@]}"
python3 - "$W/many_ops.json" "$count" > "$W/summary.txt" <<'PY'
import json, sys
data, count = json.load(open(sys.argv[1])), int(sys.argv[2])
done = [c["label"] for c in data["compared"] if not c["stopped"]]
stopped = [c["label"] for c in data["compared"] if c["stopped"]]
left = [c["label"] for c in data["left_out"]]
print(f"{count} ops changed: {len(done)} compared, {len(stopped)} stopped, {len(left)} left out; "
      f"every op accounted for: {len(done) + len(stopped) + len(left) == count}; budget: {data['budget']}")
PY
cat "$W/summary.txt"
rm -rf "$W/normlib"
pack many_ops
