#!/usr/bin/env bash
# The cross_entropy family on a GPU (H200): does `online` (the row read twice) beat `two_pass` (three reads)
# on LLM vocabularies, at no cost in accuracy; and does the timing say "no difference" where there is none.
#   bash benchmarks/cross_entropy_gpu.sh pair   two_pass, online and torch at the llm preset's 8192 x 128256 and
#                                              4096 x 256000, float32 and bfloat16: numerics (normal inputs, forward
#                                              and backward) and timing (forward, full; one process per dtype);
#                                              then two_pass and online on every input kind at the same V on 1024
#                                              and 512 rows (rows are independent; V is what accuracy depends on,
#                                              and each case's float64 inputs are drawn on the host). Expected
#                                              about 7-8 minutes.
#   bash benchmarks/cross_entropy_gpu.sh ops    the same timing for the kernels as libraries ship them: in place over
#                                              the logits, no copy (variants/cross_entropy/inplace_op.py, loaded with
#                                              --variant as ops, timed as training calls them), with torch.
#                                              Expected about 5 minutes.
#   bash benchmarks/cross_entropy_gpu.sh aa     A/A: online, then two_pass, under three names (the same variant):
#                                              the default preset (forward, backward, full) and the llm preset
#                                              (forward; float32 and bfloat16). Expected about 8-9 minutes: the last
#                                              step (two_pass on llm) is the one the budget cuts if time runs out.
# Each part stops its steps by BUDGET_S (default 560 s) and packs everything into $OUT/cross_entropy_<part>.tgz
# (steps.txt, one log per step, each compare's report folder or JSON). Set KERNEL_AB_GIT_COMMIT to the commit
# the tree was copied from (the copy has no .git).
set -uo pipefail
part=${1:?part: pair, ops or aa}
source "$(dirname "$0")/steps.sh"
start_part
CE="python3 main.py compare --family cross_entropy"
if [ "$part" = pair ]; then
    # at the llm shapes: numerics (normal inputs, forward and backward) and timing, forward and full (forward:
    # each kernel with the copy of X into x_grad the protocol's overwrite asks for, the same for both; full:
    # forward and the shared backward; torch: F.cross_entropy's forward and backward for an upstream 1)
    for shape in 8192,128256 4096,256000; do
        step llm_${shape/,/x} 200 $CE two_pass online torch --shape $shape --check numerics --check backward \
            --check timing --inputs normal --trials 1 --modes forward,full --dtype float32,bfloat16 --max-seconds 5 \
            --out "$W/llm_${shape/,/x}"
    done
    # every input kind at the same V on fewer rows (rows are independent; the float64 inputs are drawn on the host)
    step numerics_V128256 100 $CE two_pass online --shape 1024,128256 --check numerics --check backward \
        --inputs all --dtype float32,bfloat16 --trials 1 --out "$W/numerics_V128256"
    step numerics_V256000 100 $CE two_pass online --shape 512,256000 --check numerics --check backward \
        --inputs all --dtype float32,bfloat16 --trials 1 --out "$W/numerics_V256000"
elif [ "$part" = ops ]; then
    OPS=variants/cross_entropy/inplace_op.py
    for shape in 8192,128256 4096,256000; do
        step ops_${shape/,/x} 200 $CE two_pass_op online_op torch --variant online_op=$OPS::online_cross_entropy \
            --variant two_pass_op=$OPS::two_pass_cross_entropy --shape $shape --check timing \
            --modes forward,full --dtype float32,bfloat16 --max-seconds 5 --out "$W/ops_${shape/,/x}"
    done
elif [ "$part" = aa ]; then
    for v in online two_pass; do
        step aa_${v}_default 60 python3 benchmarks/timing_validation.py --aa $v --preset default \
            --dtype float32,bfloat16 --modes forward,backward,full --out "$W/aa_${v}_default.md" --json "$W/aa_${v}_default.json"
        step aa_${v}_llm 200 python3 benchmarks/timing_validation.py --aa $v --preset llm \
            --dtype float32,bfloat16 --modes forward --out "$W/aa_${v}_llm.md" --json "$W/aa_${v}_llm.json"
    done
else
    echo "kernel-ab: error: unknown part '$part'; parts: pair, ops, aa" >&2; exit 2
fi
pack "cross_entropy_$part"
