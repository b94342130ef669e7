#!/usr/bin/env bash
# Proof by replay for one kind of suggestion on clean GEMMs generated for their platform (each
# case "PLATFORM M N K": configs/PLATFORM.yaml, xpu_tracegen gemm --m M --n N --k K):
#  - a suggestion of KIND is verified and measures at least MIN% of the run's headroom over its
#    bound;
#  - xpu_analyze --apply of it, re-simulated on OUT/platform.yaml, saves exactly what the
#    verification measured (within 1 ns);
#  - analysing the patched run does not propose KIND again (fixed point).
# Used for pipeline_store (the GEMM's whole result stored at once after its last row block: the
# store is the run's tail) and defer_dma (the prologue's prefetches sharing the HBM with the
# first step's loads).
# usage: bash kind_verified.sh BUILD_DIR SOURCE_DIR KIND MIN_PERCENT CASE...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# >= 5)) || { echo "usage: $0 BUILD_DIR SOURCE_DIR KIND MIN_PERCENT 'PLATFORM M N K'..." >&2; exit 2; }
BUILD_DIR=$1 SOURCE_DIR=$2 KIND=$3 MIN=$4
shift 4
e2e_tools "$BUILD_DIR"
e2e_workdir "$KIND"

for case in "$@"; do
    read -r plat m n k <<< "$case"
    name="$plat-${m}x${n}x${k}"
    "$GEN" gemm --m "$m" --n "$n" --k "$k" --platform "$SOURCE_DIR/configs/$plat.yaml" -o "$WORK/$name.bin" > /dev/null
    "$SIM" --platform "$SOURCE_DIR/configs/$plat.yaml" --trace "$WORK/$name.bin" --out "$WORK/$name" -q || fail "$name: sim_main failed"
    rank=$(e2e_verified_rank "$WORK/$name" "$MIN" "$KIND") || fail "$name: $KIND not verified or below $MIN% of the headroom"
    e2e_apply_reproduces "$WORK/$name" "$rank"
    "$PY" - "$WORK/$name-patched" "$KIND" <<'PYEOF' || fail "$name: fixed point"
import json, sys
again = [x["kind"] for x in json.load(open(sys.argv[1] + "/analysis.json"))["suggestions"]]
assert sys.argv[2] not in again, "the patched run proposes %s again" % sys.argv[2]
print("the patched run proposes: %s" % (", ".join(again) or "nothing"))
PYEOF
    pass "$name: $KIND verified, reproduced by --apply, not proposed again"
done
echo "ok - $KIND"
