#!/usr/bin/env bash
# A first look on the GPU: the test suite (GPU tests included) and two short comparisons.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
python3 -m pytest -q -rs -x tests 2>&1 | tee "$OUT/pytest.log"
python3 main.py compare pointer_mutation explicit_offset flat torch inductor --preset seed512 --max-seconds 5 \
    --json "$OUT/seed512.json" 2>&1 | tee "$OUT/seed512.txt"
