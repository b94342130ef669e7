#!/usr/bin/env bash
# Proof by replay for pipeline_store (analysis/suggest/pipeline_store.cpp) on clean GEMMs that
# end with their whole result stored at once (one row block: the store is the run's tail), on
# two platforms and shapes (each tiled for its platform):
#  - pipeline_store is verified and measures at least MIN% of the run's headroom over its bound;
#  - xpu_analyze --apply of it, re-simulated on OUT/platform.yaml, saves exactly what the
#    verification measured (within 1 ns);
#  - analysing the patched run does not propose it again (fixed point: a piece is never split).
# usage: bash pipeline_store.sh BUILD_DIR SOURCE_DIR MIN_PERCENT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 3 "BUILD_DIR SOURCE_DIR MIN_PERCENT" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 MIN=$3
e2e_tools "$BUILD_DIR"
e2e_workdir pipeline_store

for case in "xpu 1000 1000 1000" "tpu-v6e-4 777 1000 1300"; do
    read -r plat m n k <<< "$case"
    name="$plat-${m}x${n}x${k}"
    "$GEN" gemm --m "$m" --n "$n" --k "$k" --platform "$SOURCE_DIR/configs/$plat.yaml" -o "$WORK/$name.bin" > /dev/null
    "$SIM" --platform "$SOURCE_DIR/configs/$plat.yaml" --trace "$WORK/$name.bin" --out "$WORK/$name" -q || fail "$name: sim_main failed"
    rank=$(e2e_verified_rank "$WORK/$name" "$MIN" pipeline_store) || fail "$name: pipeline_store not verified or below $MIN% of the headroom"
    e2e_apply_reproduces "$WORK/$name" "$rank"
    "$PY" - "$WORK/$name" "$WORK/$name-patched" "$rank" <<'PYEOF' || fail "$name: fixed point"
import json, sys
patched = sys.argv[2]
again = [x["kind"] for x in json.load(open(patched + "/analysis.json"))["suggestions"]]
assert "pipeline_store" not in again, "the patched run proposes pipeline_store again"
print("the patched run proposes: %s" % (", ".join(again) or "nothing"))
PYEOF
    pass "$name: pipeline_store verified, reproduced by --apply, not proposed again"
done
echo "ok - pipeline_store"
