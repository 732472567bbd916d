#!/usr/bin/env bash
# The GPU evidence behind reports/ (each part fits one 10-minute device call; where each part's output is
# committed: 3 -> reports/timing_validation/; 4 -> reports/roofline_group_norm/forward_*,
# reports/numerics_single_read_coop/seed512; 5 -> reports/roofline_group_norm/backward_*,
# reports/numerics_single_read_coop/image_N16C320, reports/gpu_tests/; 6 -> reports/timing_plan/):
#   bash benchmarks/gpu_reports.sh 1   the whole test suite on the GPU
#   bash benchmarks/gpu_reports.sh 2   the seed comparison (--out), every input kind and dtype, the timing
#                                      validation, and the tests that exercise the GPU paths
#   bash benchmarks/gpu_reports.sh 3   the timing validation twice in fresh processes and the two runs side
#                                      by side; single_read_coop against itself under three names on the seed
#                                      and image presets (float32 and bfloat16, forward and backward); the
#                                      timed seed sweep (7 variants, 3 modes) (about 6 minutes; each step
#                                      stops by the deadline: BUDGET_S, default 400)
#   bash benchmarks/gpu_reports.sh 4   the roofline forward evidence for single_read_coop: timing against the seed's
#                                      kernel, flat, single_read_tiled, torch and inductor on the seed and image
#                                      presets in float32 and bfloat16 (and single_read_coop_reread on the
#                                      image preset, whose groups it splits); numerics and backward numerics against
#                                      pointer_mutation and torch on every input kind and dtype (seed512)
#   bash benchmarks/gpu_reports.sh 5   the roofline backward evidence: single_read_coop's own backward timed against
#                                      the shared backward, torch and inductor (seed and image presets); numerics
#                                      and backward numerics of a split image shape; tests/test_gpu.py
#                                      (parts 4 and 5: BUDGET_S, default 540)
#   bash benchmarks/gpu_reports.sh 6   the plain command on an op whose backward kernel alone changed; the
#                                      image preset's timing with both dtypes in one command (each timed in a
#                                      process of its own) against bfloat16 alone; the sealed-inputs GPU tests
# Everything lands in a scratch folder and is packed into $OUT/gpu_reports_<part>.tgz. Set
# KERNEL_AB_GIT_COMMIT to the commit the tree was copied from (the copy has no .git).
set -uo pipefail
part=${1:?part 1, 2, 3, 4, 5 or 6}
OUT=${OUT:-out}
W=$(mktemp -d); mkdir -p "$OUT"   # packed into $OUT at the end (few files may come back from $OUT)
export PYTHONUNBUFFERED=1
T0=$(date +%s)
case "$part" in 3) BUDGET_S=${BUDGET_S:-400} ;; 4|5|6) BUDGET_S=${BUDGET_S:-540} ;; *) BUDGET_S=${BUDGET_S:-100000} ;; esac
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
elif [ "$part" = 4 ]; then  # the roofline kernel's forward timing against the others, then numerics
    ROOF="pointer_mutation flat single_read_tiled single_read_coop torch inductor"
    # one process per dtype: in one process, after torch and inductor had run the float32 image cases, the
    # kernels that lean on L2 ran slower in the bfloat16 ones (pointer_mutation 2.2x, slices read again
    # 22%), and not in a process of their own (reports/timing_order_effect/README.md)
    for dtype in float32 bfloat16; do
        step roofline_seed_$dtype 110 python3 main.py compare $ROOF --preset seed --dtype $dtype --modes forward \
            --check timing --max-seconds 2 --out "$W/roofline_seed_$dtype"
        step roofline_image_$dtype 130 python3 main.py compare $ROOF single_read_coop_reread --preset image --dtype $dtype \
            --modes forward --check timing --max-seconds 2 --rounds 12 --out "$W/roofline_image_$dtype"
    done
    step numerics_seed512 150 python3 main.py compare pointer_mutation single_read_coop torch --check numerics \
        --check backward --inputs all --dtype all --trials 1 --preset seed512 --out "$W/numerics_seed512"
elif [ "$part" = 5 ]; then  # the roofline kernel's own backward timing, the numerics of a split shape, GPU tests
    BACK="pointer_mutation single_read_coop torch inductor"
    for dtype in float32 bfloat16; do   # one process per dtype, as in part 4
        step backward_seed_$dtype 90 python3 main.py compare $BACK --preset seed --dtype $dtype --modes backward \
            --check timing --max-seconds 2 --out "$W/backward_seed_$dtype"
        step backward_image_$dtype 80 python3 main.py compare $BACK --preset image --dtype $dtype --modes backward \
            --check timing --max-seconds 2 --rounds 12 --out "$W/backward_image_$dtype"
    done
    step numerics_image 160 python3 main.py compare pointer_mutation single_read_coop single_read_coop_reread torch --check numerics \
        --check backward --inputs all --dtype all --trials 1 --shape 16,320,32,64x64 --out "$W/numerics_image_N16C320"
    step pytest_gpu 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py
elif [ "$part" = 3 ]; then  # the timing validation, twice in fresh processes, then the timed seed sweep
    for run in 1 2; do
        step timing_validation_run$run 115 python3 benchmarks/timing_validation.py --out "$W/timing_validation_run$run.md" \
            --json "$W/timing_validation_run$run.json"
    done
    step timing_validation_between 20 python3 benchmarks/timing_validation.py --between "$W/timing_validation_run1.json" \
        "$W/timing_validation_run2.json" --out "$W/timing_validation_between.md"
    for preset in seed image; do   # the A/A behind single_read_coop's published timings
        step aa_single_read_coop_$preset 100 python3 benchmarks/timing_validation.py --aa single_read_coop \
            --preset $preset --dtype float32,bfloat16 --modes forward,backward --out "$W/aa_single_read_coop_$preset.md" \
            --json "$W/aa_single_read_coop_$preset.json"
    done
    step seed_timing 110 python3 main.py compare $ALL --preset seed --check timing --modes forward,backward,full \
        --json "$W/seed_timing.json"
elif [ "$part" = 6 ]; then  # the plain command on a backward-only change; timing isolated per dtype; sealed inputs
    REPO=$(python3 -c "import sys; from pathlib import Path; from tests.op_package import make_repo; print(make_repo(Path(sys.argv[1])))" "$(mktemp -d)")
    # an op at two revisions whose backward kernel alone differs, compared as the plain command does (no --modes)
    step backward_only_op 150 python3 main.py compare --repo "$REPO" \
        --variant old=git:HEAD~1:normlib/norm.py::GroupNormFunction.apply \
        --variant new=git:HEAD:normlib/norm.py::GroupNormFunction.apply --out "$W/backward_only_op"
    # the order effect: both dtypes in one command (each now timed in a process of its own), then bfloat16 alone
    step order_both 200 python3 main.py compare pointer_mutation single_read_coop torch inductor --preset image \
        --dtype float32,bfloat16 --check timing --modes forward --json "$W/order_both.json"
    step order_bf16 120 python3 main.py compare pointer_mutation single_read_coop torch inductor --preset image \
        --dtype bfloat16 --check timing --modes forward --json "$W/order_bf16.json"
    step pytest_sealed 100 python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py -k "op_writing or captured"
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
