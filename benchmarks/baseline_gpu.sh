#!/usr/bin/env bash
# A run against a saved one on a GPU (docs/reports-and-gates.md, "A run against a saved one"): group_norm's
# torch op as a --variant named `mine` beside pointer_mutation at the seed512 preset, timed and saved; then
# the same code again with --baseline (no verdict across runs expected), then `mine` with a planted
# slowdown (the same op plus a copy of a twentieth of x per call) with --baseline (expected "slower").
# Packed into $OUT/baseline.tgz.   bash benchmarks/baseline_gpu.sh
set -uo pipefail
source "$(dirname "$0")/steps.sh"
start_part
cat > "$W/honest.py" <<'PY'
"""group_norm as torch computes it: the op a reviewer saves a run of."""
import torch


def mine(X, W, B, num_channels, num_groups, eps):
    return torch.nn.functional.group_norm(X, num_groups, W, B, eps)
PY
cat > "$W/planted.py" <<'PY'
"""The same op plus a copy of a twentieth of x per call: a planted slowdown."""
import torch

_SCRATCH = {}


def mine(X, W, B, num_channels, num_groups, eps):
    n = X.numel() // 20
    scratch = _SCRATCH.setdefault((n, X.dtype), torch.empty(n, dtype=X.dtype, device=X.device))
    scratch.copy_(X.reshape(-1)[:n])
    return torch.nn.functional.group_norm(X, num_groups, W, B, eps)
PY
run=(python3 main.py compare pointer_mutation --family group_norm --preset seed512 --check timing)
step saved 150 "${run[@]}" --variant "mine=$W/honest.py::mine" --json "$W/saved.json"
step same 150 "${run[@]}" --variant "mine=$W/honest.py::mine" --json "$W/same.json" --baseline "$W/saved.json"
step planted 150 "${run[@]}" --variant "mine=$W/planted.py::mine" --json "$W/planted.json" --baseline "$W/saved.json"
step diff 60 python3 main.py diff "$W/saved.json" "$W/planted.json"
pack baseline
