#!/usr/bin/env bash
# spread_matmuls keeps every matmul's weight tile and every accumulation on one unit
# (check_weight_tiles.py) on GEMMs whose accumulators live many times over (row chunks x column
# passes), whether or not the move gains: 2500x3500x700 on xpu (3.5 column passes over 8 units,
# each register reused chunk after chunk), 1000x2560x512 (registers reused pass after pass).
# usage: bash spread_legal.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
SOURCE_DIR=$2
e2e_workdir spread_legal
for shape in "2500 3500 700" "1000 2560 512"; do
    read -r m n k <<< "$shape"
    name="gemm-${m}x${n}x${k}"
    "$GEN" gemm --m "$m" --n "$n" --k "$k" -o "$WORK/$name.bin" > /dev/null
    "$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$WORK/$name.bin" --out "$WORK/$name" -q --no-verify || fail "$name: sim_main failed"
    rank=$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))["suggestions"]; print(next(x["rank"] for x in s if x["kind"]=="spread_matmuls"))' \
        "$WORK/$name/analysis.json") || fail "$name: no spread_matmuls suggestion"
    "$ANA" "$WORK/$name" --apply "$rank" -o "$WORK/$name-patched.bin" > /dev/null || fail "$name: --apply $rank failed"
    "$TOOL" dis "$WORK/$name.bin" -o "$WORK/$name.xtr"
    "$TOOL" dis "$WORK/$name-patched.bin" -o "$WORK/$name-patched.xtr"
    "$PY" "$(dirname "${BASH_SOURCE[0]}")/check_weight_tiles.py" "$WORK/$name.xtr" "$WORK/$name-patched.xtr" ||
        fail "$name: the patched trace breaks a tile or an accumulation"
    pass "$name: spread_matmuls (#$rank) keeps every tile and accumulation"
done
echo "ok - spread_matmuls legal"
