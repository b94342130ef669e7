#!/usr/bin/env bash
# Proof by replay for one kind of suggestion on clean traces generated for their platform (each
# case "PLATFORM M N K": configs/PLATFORM.yaml, xpu_tracegen gemm --m M --n N --k K; or
# "PLATFORM decode MODEL BATCH SEQ LAYERS TP": xpu_tracegen transformer, a decode step
# tensor-parallel over TP chips; or "PLATFORM -- WORKLOAD ARGS...": xpu_tracegen WORKLOAD ARGS
# --platform configs/PLATFORM.yaml, a file argument relative to SOURCE_DIR):
#  - a suggestion of KIND is verified and measures at least MIN% of the run's headroom over its
#    bound;
#  - xpu_analyze --apply of it, re-simulated on OUT/platform.yaml, saves exactly what the
#    verification measured (within 1 ns);
#  - analysing the patched run does not propose KIND again (fixed point);
#  - for spread_matmuls, every matmul of the patched trace multiplies by the weight tile it did
#    in the original (check_weight_tiles.py: a moved matmul by the push issued to its new unit).
# Used for pipeline_store (the GEMM's whole result stored at once after its last row block: the
# store is the run's tail), defer_dma (the prologue's prefetches sharing the HBM with the
# first step's loads) and direct_collective (a decode's all-reduces, rings of latency-bound steps).
# usage: bash kind_verified.sh BUILD_DIR SOURCE_DIR KIND MIN_PERCENT CASE...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# >= 5)) || { echo "usage: $0 BUILD_DIR SOURCE_DIR KIND MIN_PERCENT 'PLATFORM M N K' | 'PLATFORM decode MODEL BATCH SEQ LAYERS TP' | 'PLATFORM -- WORKLOAD ARGS...'..." >&2; exit 2; }
BUILD_DIR=$1 SOURCE_DIR=$2 KIND=$3 MIN=$4
shift 4
e2e_tools "$BUILD_DIR"
e2e_workdir "$KIND"

for case in "$@"; do
    read -r plat m n k layers tp <<< "$case"
    if [[ $m == -- ]]; then  # -- WORKLOAD ARGS...
        read -r plat _ args <<< "$case"
        read -r -a words <<< "$args"
        name="$plat-${words[0]}"
        for i in "${!words[@]}"; do  # a file of the source tree, named after it
            if [[ ${words[$i]} == */* && -e $SOURCE_DIR/${words[$i]} ]]; then
                [[ $name == "$plat-${words[0]}" ]] && name+="-$(basename "${words[$i]%.*}")"
                words[i]=$SOURCE_DIR/${words[$i]}
            fi
        done
        "$GEN" "${words[@]}" --platform "$SOURCE_DIR/configs/$plat.yaml" -o "$WORK/$name.bin" > /dev/null
    elif [[ $m == decode ]]; then  # decode MODEL BATCH SEQ LAYERS TP
        read -r plat _ model batch seq layers tp <<< "$case"
        name="$plat-$model-b$batch-s$seq-L$layers-tp$tp"
        "$GEN" transformer --model "$model" --phase decode --batch "$batch" --seq "$seq" --layers "$layers" --tp "$tp" \
            -o "$WORK/$name.bin" > /dev/null
    else
        name="$plat-${m}x${n}x${k}"
        "$GEN" gemm --m "$m" --n "$n" --k "$k" --platform "$SOURCE_DIR/configs/$plat.yaml" -o "$WORK/$name.bin" > /dev/null
    fi
    "$SIM" --platform "$SOURCE_DIR/configs/$plat.yaml" --trace "$WORK/$name.bin" --out "$WORK/$name" -q || fail "$name: sim_main failed"
    rank=$(e2e_verified_rank "$WORK/$name" "$MIN" "$KIND") || fail "$name: $KIND not verified or below $MIN% of the headroom"
    e2e_apply_reproduces "$WORK/$name" "$rank"
    if [[ $KIND == spread_matmuls ]]; then  # each matmul keeps its weight tile on its new unit
        "$TOOL" dis "$WORK/$name.bin" -o "$WORK/$name.xtr"
        "$TOOL" dis "$WORK/$name-patched.bin" -o "$WORK/$name-patched.xtr"
        "$PY" "$(dirname "${BASH_SOURCE[0]}")/check_weight_tiles.py" "$WORK/$name.xtr" "$WORK/$name-patched.xtr" ||
            fail "$name: a matmul of the patched trace multiplies by another tile"
    fi
    "$PY" - "$WORK/$name-patched" "$KIND" <<'PYEOF' || fail "$name: fixed point"
import json, sys
again = [x["kind"] for x in json.load(open(sys.argv[1] + "/analysis.json"))["suggestions"]]
assert sys.argv[2] not in again, "the patched run proposes %s again" % sys.argv[2]
print("the patched run proposes: %s" % (", ".join(again) or "nothing"))
PYEOF
    pass "$name: $KIND verified, reproduced by --apply, not proposed again"
done
echo "ok - $KIND"
