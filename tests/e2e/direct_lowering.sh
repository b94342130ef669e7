#!/usr/bin/env bash
# direct_collective against an independent reference: the generator's own direct lowering
# (xpu_tracegen collective --algo direct, traces/gen/collective.cpp), written apart from the
# analysis's rewrite (analysis/suggest/direct_collective.cpp). On ring all-reduces of small
# tensors (and on a reduce-scatter or an all-gather alone), the rewrite of the ring that the
# analysis verifies must save exactly what the
# generator's direct lowering saves over the ring, simulated on the same platform (within 1 ns:
# the two lowerings move the same pieces, from the nearest chip out, each owner's shard
# differently placed; by the ring's symmetry every chip waits as long).
# Each case: "PLATFORM OP CHIPS BYTES CHUNKS [--set KEY=VALUE...]" (xpu_tracegen collective --op OP), or
# "PLATFORM decode MODEL BATCH SEQ LAYERS TP [--set KEY=VALUE...]" (xpu_tracegen transformer, its
# all-reduces as rings or, with --collective direct, direct).
# usage: bash direct_lowering.sh BUILD_DIR SOURCE_DIR CASE...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# >= 3)) || { echo "usage: $0 BUILD_DIR SOURCE_DIR 'PLATFORM OP CHIPS BYTES CHUNKS [--set K=V...]'..." >&2; exit 2; }
BUILD_DIR=$1 SOURCE_DIR=$2
shift 2
e2e_tools "$BUILD_DIR"
e2e_workdir direct_lowering

for case in "$@"; do
    read -r plat op chips bytes chunks sets <<< "$case"
    if [[ $op == decode ]]; then
        read -r plat _ model batch seq layers tp sets <<< "$case"
        name="$plat-$model-b$batch-s$seq-L$layers-tp$tp"
        for algo in ring direct; do
            "$GEN" transformer --model "$model" --phase decode --batch "$batch" --seq "$seq" --layers "$layers" --tp "$tp" \
                --collective "$algo" -o "$WORK/$name-$algo.bin" > /dev/null
        done
    else
        name="$plat-$op-$chips-$bytes-c$chunks"
        for algo in ring direct; do
            "$GEN" collective --op "$op" --chips "$chips" --bytes "$bytes" --chunks "$chunks" --algo "$algo" \
                -o "$WORK/$name-$algo.bin" > /dev/null
        done
    fi
    # shellcheck disable=SC2206 # the sets are words: --set key=value ...
    extra=($sets)
    # Every candidate replayed (--verify 20): what is compared is the rewrite, not its rank.
    "$SIM" --platform "$SOURCE_DIR/configs/$plat.yaml" "${extra[@]}" --trace "$WORK/$name-ring.bin" --out "$WORK/$name-ring" -q \
        --verify 20 || fail "$name: sim_main on the ring failed"
    "$SIM" --platform "$SOURCE_DIR/configs/$plat.yaml" "${extra[@]}" --trace "$WORK/$name-direct.bin" --out "$WORK/$name-direct" \
        -q --no-analysis || fail "$name: sim_main on the direct lowering failed"
    "$PY" - "$WORK/$name-ring" "$WORK/$name-direct" <<'PYEOF' || fail "$name: the rewrite is not the direct lowering"
import json, sys
ring, direct = (json.load(open(d + "/stats.json"))["simulated_time_ns"] for d in sys.argv[1:3])
s = [x for x in json.load(open(sys.argv[1] + "/analysis.json"))["suggestions"] if x["kind"] == "direct_collective"]
assert s, "no direct_collective on the ring"
assert s[0]["status"] == "verified", "direct_collective is %s" % s[0]["status"]
m = s[0]["measured_saving_ns"]
print("ring %.3f us, the generator's direct lowering %.3f us (%.3f us less), direct_collective measured %.3f us"
      % (ring / 1e3, direct / 1e3, (ring - direct) / 1e3, m / 1e3))
assert abs(m - (ring - direct)) <= 1.0, "the rewrite saves %.3f ns, the direct lowering %.3f ns" % (m, ring - direct)
PYEOF
    pass "$name: direct_collective saves what the generator's direct lowering does"
done
echo "ok - direct_lowering"
