#!/usr/bin/env bash
# The GPU evidence for the row-normalization families, one 10-minute device call each:
#   bash benchmarks/row_reports.sh layer_norm
#   bash benchmarks/row_reports.sh rms_norm
# Per family: the llm preset with every variant, numerics + backward + timing (forward, backward, full) +
# IR (--out llm); the default pair on every input kind and dtype, forward and backward (--out numerics;
# rms_norm also with gemma casting and offset 1: numerics_gemma); the family's tests on the GPU.
# Everything is packed into $OUT/row_reports_<family>.tgz; commit llm/ and numerics/ as
# reports/row_families/<family>_llm/ and <family>_numerics/ (report.md and report.json).
# Set KERNEL_AB_GIT_COMMIT to the commit the tree was copied from (the copy has no .git).
set -uo pipefail
family=${1:?layer_norm or rms_norm}
OUT=${OUT:-out}
W=$(mktemp -d); mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
case "$family" in
    layer_norm) ALL="bwd_pointer_mutation bwd_explicit_offset bwd_atomic torch inductor";
                PAIR="bwd_pointer_mutation bwd_explicit_offset";;
    rms_norm)   ALL="pointer_mutation explicit_offset torch inductor"; PAIR="pointer_mutation explicit_offset";;
    *) echo "row_reports.sh: unknown family $family (layer_norm or rms_norm)" >&2; exit 2;;
esac
T0=$(date +%s); BUDGET_S=${BUDGET_S:-540}   # every step stops by the deadline
run() {  # run NAME SECONDS COMMAND...: with a time limit, logged to $W/NAME.log, recorded in $W/steps.txt
    local name=$1 limit=$2 start=$(date +%s); shift 2
    local left=$(( BUDGET_S - (start - T0) ))
    if [ "$left" -lt "$limit" ]; then limit=$left; fi
    if [ "$limit" -lt 20 ]; then echo "$name: not run (out of time): $*" | tee -a "$W/steps.txt"; return; fi
    echo "\$ $*" > "$W/$name.log"
    timeout "$limit" "$@" >> "$W/$name.log" 2>&1
    echo "$name: rc=$?, $(( $(date +%s) - start )) s: $*" | tee -a "$W/steps.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$W/gpu.txt" 2>&1
run llm 330 python3 main.py compare --family "$family" $ALL --preset llm --modes forward,backward,full --trials 2 \
    --max-seconds 4 --out "$W/llm"
run numerics 100 python3 main.py compare --family "$family" $PAIR --check numerics --check backward --inputs all \
    --dtype all --out "$W/numerics"
if [ "$family" = rms_norm ]; then
    run numerics_gemma 80 python3 main.py compare --family rms_norm $PAIR --preset default_gemma --check numerics \
        --check backward --inputs all --dtype all --out "$W/numerics_gemma"
fi
run pytest 50 python3 -m pytest -q -rs -p no:cacheprovider tests/test_row_families.py
for f in "$W"/*.log; do echo "== $f"; tail -n 3 "$f"; done
tar czf "$OUT/row_reports_$family.tgz" -C "$W" .
cp "$W/steps.txt" "$OUT/" 2>/dev/null
