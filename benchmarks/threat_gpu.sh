#!/usr/bin/env bash
# The timing defences' GPU evidence in one device call (docs/threat-model.md): the timing validation (one
# kernel under three names at the seed preset, the planted 2.5% slowdown, the seed's pair), then the
# per-call exploit table of each family in FAMILIES (default group_norm; reports/exploits/README.md), one
# step each within the part's budget (BUDGET_S, default 560 s). Packed into $OUT/threat.tgz. VALIDATION=0
# leaves the timing validation out (the tables of several families in a second call).
#   FAMILIES="group_norm swiglu" bash benchmarks/threat_gpu.sh
set -uo pipefail
source "$(dirname "$0")/steps.sh"
start_part
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$W/gpu.txt" 2>&1
[ "${VALIDATION:-1}" = 0 ] || step timing_validation 240 python3 benchmarks/timing_validation.py --out "$W/timing_validation.md" \
    --json "$W/timing_validation.json"
for family in ${FAMILIES:-group_norm}; do
    step "exploits_$family" 300 python3 benchmarks/exploits_table.py --gpu --families "$family" \
        --out "$W/gpu_$family.md"
done
pack threat
