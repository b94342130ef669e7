#!/usr/bin/env bash
# Hardware sensitivity, measured (analysis/sensitivity.h): each major resource of the platform
# made twice as capable, the trace replayed. The reference is the run's own bound (analysis.json
# bounds, a closed form of bytes and streaming time): a run near its HBM bound speeds up most with
# HBM bandwidth and hardly with matrix throughput; a compute-bound GEMM the other way round.
#  - the llama2-7b decode layer sample (batch 1: every weight read once, a few % above its HBM
#    bound): HBM bandwidth is the top line, > 1.5x (measured 1.60x; it cannot reach 2x: the
#    matrix units' weight loads and the per-step latencies set a floor); matrix units (rows
#    streamed per cycle) < 1.05x;
#  - a 2048^3 GEMM (compute bound): the chip clock (every on-chip unit, the matrix units'
#    fill and drain included) > 1.5x, matrix units > 1.5x (measured 1.55x: 2048 rows per K step
#    stream in half the cycles, fill, drain and the step's DMA wait do not); HBM bandwidth < 1.05x;
#  - each line's --set reproduces its simulated time exactly (a separate sim_main run).
# usage: bash sensitivity.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2
e2e_tools "$BUILD_DIR"
e2e_workdir sensitivity

"$GEN" gemm --m 2048 --n 2048 --k 2048 -o "$WORK/gemm.bin" > /dev/null
"$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$SOURCE_DIR/traces/samples/decode-layer.bin" --out "$WORK/decode" -q --no-verify
"$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$WORK/gemm.bin" --out "$WORK/gemm" -q --no-verify
for r in decode gemm; do
    "$ANA" "$WORK/$r" --sensitivity --no-verify -q || fail "xpu_analyze --sensitivity on $r"
done
pass "xpu_analyze --sensitivity ran on a decode layer and a GEMM"

"$PY" - "$WORK" > "$WORK/lines.txt" <<'PYEOF' || fail "sensitivity against the bounds"
import json, sys
w = sys.argv[1]
def lines(r):
    a = json.load(open("%s/%s/analysis.json" % (w, r)))
    s = a["sensitivity"]
    assert s and all(l["speedup"] is not None for l in s), "%s: not every line measured: %s" % (r, s)
    return a, {l["resource"].split(" (")[0]: l for l in s}
d, dl = lines("decode")
g, gl = lines("gemm")
print("decode: " + ", ".join("%s %.3fx" % (k, l["speedup"]) for k, l in dl.items()), file=sys.stderr)
print("gemm:   " + ", ".join("%s %.3fx" % (k, l["speedup"]) for k, l in gl.items()), file=sys.stderr)
assert d["bounds"]["resources"][0]["name"] == "HBM"
assert d["sensitivity"][0]["resource"] == "HBM bandwidth", "decode: top line %s" % d["sensitivity"][0]["resource"]
assert dl["HBM bandwidth"]["speedup"] > 1.5
assert dl["matrix units"]["speedup"] < 1.05
assert gl["chip clock"]["speedup"] > 1.5
assert gl["matrix units"]["speedup"] > 1.5
assert gl["HBM bandwidth"]["speedup"] < 1.05
for r, ls in (("decode", dl), ("gemm", gl)):
    for k in ("HBM bandwidth", "matrix units"):
        print(r, ls[k]["simulated_time_ns"], " ".join("--set " + s for s in ls[k]["sets"]))
PYEOF
pass "the top lines follow the bounds: HBM for the decode layer, the clock and matrix units for the GEMM"

n=0
while read -r r t sets; do
    trace="$SOURCE_DIR/traces/samples/decode-layer.bin"
    [[ $r == gemm ]] && trace="$WORK/gemm.bin"
    # shellcheck disable=SC2086
    "$SIM" --platform "$WORK/$r/platform.yaml" --trace "$trace" --out "$WORK/check$n" -q --no-txlog $sets || fail "sim_main $sets"
    got=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["simulated_time_ns"])' "$WORK/check$n/stats.json")
    "$PY" -c 'import sys; assert abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-3, sys.argv[1:]' "$got" "$t" || fail "$r: $sets gives $got ns, the table says $t"
    n=$((n + 1))
done < "$WORK/lines.txt"
pass "$n lines reproduced by their --set"
echo "$checks passed, 0 failed"
