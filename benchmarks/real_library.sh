#!/usr/bin/env bash
# The real library's pull requests of ../shared/corpus (Liger-Kernel, seven of them) reviewed on a GPU as a
# reviewer types them: `python3 main.py review <pr>_base <pr>_head --repo LIGER --out DIR`, each op at its
# family's GPU preset (`review`), every check. ce1329 (a bfloat16/float16 gradient fix) adds --dtype
# float32,bfloat16.
#   bash benchmarks/real_library.sh reviews [BUNDLE]   the seven reviews, each timed (wall s in steps.txt)
#   bash benchmarks/real_library.sh aa [BUNDLE]        the same seven with --aa --check timing: each op's BASE
#                                                      timed against itself at the same presets
# BUNDLE: the corpus bundle (default $KERNEL_AB_CORPUS/liger-kernel-prs.bundle, else ../shared/corpus/...).
# Each part stops its steps by BUDGET_S (default 560 s) and packs into $OUT/real_library_<part>.tgz; PRS="a b"
# reviews those alone.
set -uo pipefail
part=${1:?part: reviews or aa}
corpus=${KERNEL_AB_CORPUS:-$(dirname "$0")/../../shared/corpus}
bundle=${2:-$corpus/liger-kernel-prs.bundle}
source "$(dirname "$0")/steps.sh"
start_part
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$W/gpu.txt" 2>&1
git clone -q "$bundle" "$W/liger" || { echo "no corpus bundle at $bundle"; exit 2; }
extra=()
[ "$part" = aa ] && extra=(--aa --check timing)
[ "$part" = reviews ] || [ "$part" = aa ] || { echo "part: reviews or aa"; exit 2; }
for pr in ${PRS:-gn999 gn1112 rms1000 ln1006 ln945 ce1329 sw1271}; do
    more=()
    [ "$pr" = ce1329 ] && more=(--dtype float32,bfloat16)
    step "$pr" 150 python3 main.py review "${pr}_base" "${pr}_head" --repo "$W/liger" --out "$W/$pr" \
        --json "$W/$pr.json" "${more[@]}" "${extra[@]}"
done
rm -rf "$W/liger"
pack "real_library_$part"
