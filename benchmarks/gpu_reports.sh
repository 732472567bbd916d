#!/usr/bin/env bash
# The GPU evidence behind reports/ (each part fits one 10-minute device call):
#   bash benchmarks/gpu_reports.sh 1   the whole test suite on the GPU
#   bash benchmarks/gpu_reports.sh 2   the seed comparison (--out), every input kind and dtype, the timing
#                                      validation, and the tests that exercise the GPU paths
#   bash benchmarks/gpu_reports.sh 3   the timing validation twice in fresh processes and the two runs side
#                                      by side, the timed seed sweep (7 variants, 3 modes), tests/test_gpu.py
#                                      (about 5 minutes; each step stops by the deadline: BUDGET_S, default 290)
# Everything lands in a scratch folder and is packed into $OUT/gpu_reports_<part>.tgz. Set
# KERNEL_AB_GIT_COMMIT to the commit the tree was copied from (the copy has no .git).
set -uo pipefail
part=${1:?part 1, 2 or 3}
OUT=${OUT:-out}
W=$(mktemp -d); mkdir -p "$OUT"   # packed into $OUT at the end (few files may come back from $OUT)
export PYTHONUNBUFFERED=1
T0=$(date +%s)
if [ "$part" = 3 ]; then BUDGET_S=${BUDGET_S:-290}; else BUDGET_S=${BUDGET_S:-100000}; fi
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $W/NAME.log, record command and wall time
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    local left=$(( BUDGET_S - (start - T0) ))
    if [ "$left" -lt "$limit" ]; then limit=$left; fi
    if [ "$limit" -lt 20 ]; then echo "$name: not run (out of time): $*" | tee -a "$W/steps.txt"; return; fi
    echo "\$ $*" > "$W/$name.log"
    timeout "$limit" "$@" >> "$W/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc, $(( $(date +%s) - start )) s: $*" | tee -a "$W/steps.txt"
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -c "import torch, triton, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"
} > "$W/gpu.txt" 2>&1
cat "$W/gpu.txt"
ALL="pointer_mutation explicit_offset explicit_offset_range pointer_mutation_tlrange flat torch inductor"
if [ "$part" = 1 ]; then   # everything tests/ holds, GPU tests included (slow: the CLI tests time on the GPU)
    step pytest 580 python3 -m pytest -q -rs -p no:cacheprovider tests
elif [ "$part" = 3 ]; then  # the timing validation, twice in fresh processes, then the timed seed sweep
    for run in 1 2; do
        step timing_validation_run$run 115 python3 benchmarks/timing_validation.py --out "$W/timing_validation_run$run.md" \
            --json "$W/timing_validation_run$run.json"
    done
    step timing_validation_between 20 python3 benchmarks/timing_validation.py --between "$W/timing_validation_run1.json" \
        "$W/timing_validation_run2.json" --out "$W/timing_validation_between.md"
    step seed_timing 110 python3 main.py compare $ALL --preset seed --check timing --modes forward,backward,full \
        --json "$W/seed_timing.json"
    step pytest_gpu 90 python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py
else                       # the reports, then the tests that exercise the GPU paths
    step seed 200 python3 main.py compare $ALL --preset seed --modes forward,backward,full --trials 2 --out "$W/seed"
    step numerics 150 python3 main.py compare pointer_mutation explicit_offset --check numerics --check backward \
        --inputs all --dtype all --out "$W/numerics"
    step timing_validation 110 python3 benchmarks/timing_validation.py --repeats 20 --out "$W/timing_validation.md"
    step pytest_gpu 120 python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py tests/test_ir_gpu.py \
        tests/test_backward.py tests/test_numerics.py tests/test_interpreter_dtypes.py tests/test_numerics_inputs.py
fi
for f in "$W"/*.log; do echo "== $f"; tail -n 3 "$f"; done
tar czf "$OUT/gpu_reports_$part.tgz" -C "$W" .
cp "$W/steps.txt" "$OUT/" 2>/dev/null
