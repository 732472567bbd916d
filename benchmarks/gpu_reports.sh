#!/usr/bin/env bash
# The GPU evidence behind reports/, in two device calls (each under the 10-minute limit):
#   bash benchmarks/gpu_reports.sh 1   tests (GPU tests included) and the seed comparison (--out)
#   bash benchmarks/gpu_reports.sh 2   timing validation, every input kind and dtype, IR in float16
# Everything lands under $OUT/work and is packed into $OUT/gpu_reports_<part>.tgz. Set
# KERNEL_AB_GIT_COMMIT to the commit the tree was copied from (the copy has no .git).
set -uo pipefail
part=${1:?part 1 or 2}
OUT=${OUT:-out}
W="$OUT/work"; mkdir -p "$W"
export PYTHONUNBUFFERED=1
step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to $W/NAME.log, record command and wall time
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
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
if [ "$part" = 1 ]; then
    step pytest 300 python3 -m pytest -q -rs -p no:cacheprovider tests
    step seed 420 python3 main.py compare $ALL --preset seed --modes forward,backward,full --trials 2 --out "$W/seed"
else
    step timing_validation 240 python3 benchmarks/timing_validation.py --repeats 20 --out "$W/timing_validation.md"
    step numerics 300 python3 main.py compare pointer_mutation explicit_offset --check numerics --check backward \
        --inputs all --dtype all --out "$W/numerics"
    step ir_fp16 120 python3 main.py ir pointer_mutation explicit_offset --preset seed512 --dtype float16 --json "$W/ir_fp16.json" --markdown "$W/ir_fp16.md"
fi
tail -3 "$W"/*.log
tar czf "$OUT/gpu_reports_$part.tgz" -C "$W" .
