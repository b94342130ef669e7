#!/usr/bin/env bash
# Proof by replay for pipeline_collective on clean torus2d all-reduces (analysis/suggest/
# pipeline_collective.cpp): xpu_tracegen's lowering holds a piece of one direction behind the
# waits for the other direction's pieces, and sends a phase's first pieces after the whole
# previous phase; each piece can go once its own data is there (its hoist point, placed above a
# wait: it issues when the core reaches the wait, Stream::placed_issue).
#  - pipeline_collective is verified and measures at least MIN% of the run's headroom over its
#    link bound (analysis/bounds.cpp: wire bytes and the last hop);
#  - xpu_analyze --apply of it, re-simulated on OUT/platform.yaml, saves exactly what the
#    verification measured (within 1 ns);
#  - a fixed point, up to a remainder: every piece of every phase of the collective moves in one
#    suggestion (every_piece), each up to its hoist point in the original order; a piece held below
#    another piece that moves goes no higher than that one's old place, so the patched run may
#    propose a pipeline_collective again, measuring under 15% of the first's saving (measured: 7.2%
#    on the 4x4 torus, none on the 8x8).
# usage: bash pipeline_collective.sh BUILD_DIR SOURCE_DIR MIN_PERCENT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 3 "BUILD_DIR SOURCE_DIR MIN_PERCENT" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 MIN=$3
e2e_tools "$BUILD_DIR"
e2e_workdir pipeline_collective

for case in "torus4x4 16 4x4 4194304" "torus8x8 64 8x8 16777216"; do
    read -r plat chips dims bytes <<< "$case"
    name="torus2d-$dims"
    "$GEN" collective --op all-reduce --algo torus2d --chips "$chips" --dims "$dims" --bytes "$bytes" --chunks 4 \
        -o "$WORK/$name.bin" > /dev/null
    "$SIM" --platform "$SOURCE_DIR/configs/xpu-$plat.yaml" --trace "$WORK/$name.bin" --out "$WORK/$name" -q || fail "$name: sim_main failed"
    rank=$(e2e_verified_rank "$WORK/$name" "$MIN" pipeline_collective) || fail "$name: pipeline_collective not verified or below $MIN% of the headroom"
    e2e_apply_reproduces "$WORK/$name" "$rank"
    "$PY" - "$WORK/$name" "$WORK/$name-patched" "$rank" <<'PYEOF' || fail "$name: fixed point"
import json, sys
first = json.load(open(sys.argv[1] + "/analysis.json"))["suggestions"][int(sys.argv[3]) - 1]["measured_saving_ns"]
again = [x["measured_saving_ns"] for x in json.load(open(sys.argv[2] + "/analysis.json"))["suggestions"]
         if x["kind"] == "pipeline_collective" and x["status"] == "verified"]
left = again[0] if again else 0.0
print("pipeline_collective again on the patched run: %.1f ns measured (%.1f%% of the first's %.1f ns)" % (left, 100 * left / first, first))
assert left <= 0.15 * first, "more than a remainder"
PYEOF
    pass "$name: pipeline_collective verified, reproduced by --apply, only a remainder after it"
done
echo "ok - pipeline_collective"
