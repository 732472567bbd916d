#!/usr/bin/env bash
# The corpus pull requests whose ops no family fits, reviewed on a GPU as a reviewer types them: the ops'
# calls recorded from the library's own tests and replayed at both revisions (docs/review.md, "Any op, no
# family"), every op compared that the family reviews compare too.
#   bash benchmarks/replay_library.sh liger [BUNDLE]   Liger-Kernel's eight (BUNDLE: liger-kernel-prs.bundle)
#   bash benchmarks/replay_library.sh fla [BUNDLE]     flash-linear-attention's four (fla-prs.bundle)
# Each review's wall time and exit code land in steps.txt; its --json and --markdown beside it; the part packs
# into $OUT/replay_<part>.tgz, stopping its steps by BUDGET_S (default 560 s). PRS="a b" reviews those alone;
# REVIEW_BUDGET=S passes --budget S; VERBOSE=1 drops --quiet and, with STEP_STAMP=1, shows where the time goes.
set -uo pipefail
part=${1:?part: liger or fla}
corpus=${KERNEL_AB_CORPUS:-$(dirname "$0")/../../shared/corpus}
case "$part" in
    liger) bundle=${2:-$corpus/liger-kernel-prs.bundle}; prs="poly1018 farms1008 tvd1127 kl654 geglu986 rope804 dyt673 ce1329";;
    fla) bundle=${2:-$corpus/fla-prs.bundle}; prs="fla795 fla921 fla1095 fla745";;
    *) echo "part: liger or fla"; exit 2;;
esac
prs=${PRS:-$prs}
source "$(dirname "$0")/steps.sh"
start_part
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$W/gpu.txt" 2>&1
git clone -q "$bundle" "$W/lib" || { echo "no corpus bundle at $bundle"; exit 2; }
said=(--quiet); [ "${VERBOSE:-}" = 1 ] && said=()
[ -n "${REVIEW_BUDGET:-}" ] && said+=(--budget "$REVIEW_BUDGET")
for pr in $prs; do
    step "$pr" 240 python3 main.py review "${pr}_base" "${pr}_head" --repo "$W/lib" "${said[@]}" \
        --json "$W/$pr.json" --markdown "$W/$pr.md"
done
rm -rf "$W/lib"
pack "replay_$part"
