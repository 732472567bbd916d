#!/usr/bin/env bash
# Every pull request of a corpus bundle reviewed on this machine as a reviewer types it (no GPU: Triton's
# CPU interpreter): `python3 main.py review <pr>_base <pr>_head --repo CLONE --json F --markdown F`.
#   bash benchmarks/review_corpus_cpu.sh BUNDLE OUTDIR [PR...]   (default: every <pr>_base tag of BUNDLE)
# OUTDIR gets each review's JSON, Markdown and log, and steps.txt: per review its exit code, wall time and
# whether its log holds a traceback. Each review stops at STEP_S seconds (default 900).
set -uo pipefail
bundle=${1:?BUNDLE}; out=${2:?OUTDIR}; shift 2
mkdir -p "$out"
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
git clone -q "$bundle" "$lib/lib" || { echo "no corpus bundle at $bundle"; exit 2; }
prs=("$@")
[ ${#prs[@]} -gt 0 ] || mapfile -t prs < <(git -C "$lib/lib" tag --list '*_base' | sed 's/_base$//')
here=$(cd "$(dirname "$0")/.." && pwd)
echo "kernel-ab $(git -C "$here" rev-parse --short HEAD), $(nproc) cores, $(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')" > "$out/steps.txt"
for pr in "${prs[@]}"; do
    start=$(date +%s)
    timeout "${STEP_S:-900}" python3 "$here/main.py" review "${pr}_base" "${pr}_head" --repo "$lib/lib" --quiet \
        --json "$out/$pr.json" --markdown "$out/$pr.md" > "$out/$pr.log" 2>&1
    rc=$?
    tb=$(grep -c '^Traceback' "$out/$pr.log")
    echo "$pr: rc=$rc, $(( $(date +%s) - start )) s, tracebacks in its log: $tb" | tee -a "$out/steps.txt"
done
