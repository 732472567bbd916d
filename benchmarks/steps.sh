# Sourced by the GPU scripts: `step NAME SECONDS COMMAND...` runs COMMAND within the part's budget (BUDGET_S
# seconds from T0; SECONDS at most), logged to $W/NAME.log and recorded (rc, wall time) in $W/steps.txt; a
# step with under 20 s left is recorded as not run. `pack NAME` prints each log's tail and packs $W into
# $OUT/NAME.tgz, with steps.txt beside it as NAME_steps.txt. `start_part` sets W, OUT, T0 and BUDGET_S
# (default 560 s) and records the GPU in $W/gpu.txt; a caller that wants other defaults sets them itself.
# STEP_STAMP=1: each log line starts with the seconds since its step started (where a step's time goes).
start_part() {
    OUT=${OUT:-out}
    BUDGET_S=${BUDGET_S:-560}
    W=$(mktemp -d); mkdir -p "$OUT"
    export PYTHONUNBUFFERED=1
    T0=$(date +%s)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$W/gpu.txt" 2>&1
}
step() {
    local name=$1 limit=$2 start=$(date +%s); shift 2
    local left=$(( BUDGET_S - (start - T0) ))
    if [ "$left" -lt "$limit" ]; then limit=$left; fi
    if [ "$limit" -lt 20 ]; then echo "$name: not run (out of time): $*" | tee -a "$W/steps.txt"; return; fi
    local rc
    echo "\$ $*" > "$W/$name.log"
    if [ "${STEP_STAMP:-}" = 1 ]; then
        timeout "$limit" "$@" 2>&1 | python3 -u -c 'import sys, time
t = time.monotonic()
for line in sys.stdin:
    sys.stdout.write(f"{time.monotonic() - t:8.2f} {line}")' >> "$W/$name.log"
        rc=${PIPESTATUS[0]}
    else
        timeout "$limit" "$@" >> "$W/$name.log" 2>&1
        rc=$?
    fi
    echo "$name: rc=$rc, $(( $(date +%s) - start )) s: $*" | tee -a "$W/steps.txt"
}
pack() {
    local f
    for f in "$W"/*.log; do echo "== $f"; tail -n 3 "$f"; done
    tar czf "$OUT/$1.tgz" -C "$W" .
    cp "$W/steps.txt" "$OUT/$1_steps.txt" 2>/dev/null
}
