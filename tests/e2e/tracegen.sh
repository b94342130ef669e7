#!/usr/bin/env bash
# End-to-end: xpu_tracegen's commands on the real binaries. Usage errors exit 2 with a message;
# every command prints what it generated and writes a trace that validates; each planted
# inefficiency simulates slower than the same computation without it; the checked-in samples
# are what scripts/gen_samples.sh generates today (byte for byte).
set -euo pipefail
BUILD_DIR=$1
SOURCE_DIR=$2
GEN="$BUILD_DIR/traces/xpu_tracegen"
TRACE="$BUILD_DIR/traces/xpu_trace"
SIM="$BUILD_DIR/platform/sim_main"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
checks=0
pass() { checks=$((checks + 1)); echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; echo "$checks passed, 1 failed"; exit 1; }

# ---- usage errors ---------------------------------------------------------------------------
expect_usage() {
    local pattern=$1; shift
    set +e; "$GEN" "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?; set -e
    [[ $rc -eq 2 ]] || fail "xpu_tracegen $*: exit $rc, expected 2"
    grep -q -- "$pattern" "$WORK/err" || { cat "$WORK/err"; fail "xpu_tracegen $*: message lacks '$pattern'"; }
    pass "usage error '$*' -> exit 2: $(head -n1 "$WORK/err")"
}
expect_usage "unknown workload" frobnicate -o "$WORK/x.bin"
expect_usage "--m" gemm --n 4 --k 4 -o "$WORK/x.bin"
expect_usage "--dtype" gemm --m 8 --n 8 --k 8 --dtype f64 -o "$WORK/x.bin"
expect_usage "--model" transformer --model gpt5 --phase decode --batch 1 --seq 8 -o "$WORK/x.bin"
expect_usage "--phase" transformer --model llama2-7b --phase train --batch 1 --seq 8 -o "$WORK/x.bin"
expect_usage "--tp" transformer --model llama2-7b --phase decode --batch 1 --seq 8 --tp 3 -o "$WORK/x.bin"
expect_usage "--dims" collective --op all-gather --chips 4 --bytes 4096 --algo torus2d --dims 3x3 -o "$WORK/x.bin"
expect_usage "--bytes" collective --op all-gather --chips 4 --bytes 1002 --algo ring -o "$WORK/x.bin"
expect_usage "--serial-collective" collective --op all-reduce --chips 4 --bytes 8192 --algo direct --serial-collective -o "$WORK/x.bin"
expect_usage "--collective" transformer --model llama2-7b --phase decode --batch 1 --seq 8 --tp 2 --collective star -o "$WORK/x.bin"
[[ ! -e "$WORK/x.bin" ]] || fail "a failed generation left $WORK/x.bin"
pass "no output file after usage errors"

# ---- every command: summary printed, trace valid ---------------------------------------------
gen_ok() {
    local name=$1; shift
    "$GEN" "$@" -o "$WORK/$name.bin" >"$WORK/$name.txt" || fail "xpu_tracegen $* failed"
    grep -q "wrote $WORK/$name.bin" "$WORK/$name.txt" || fail "$name: no summary"
    grep -q "instructions" "$WORK/$name.txt" || fail "$name: summary lacks instruction counts"
    "$TRACE" validate "$WORK/$name.bin" >/dev/null || fail "$name: trace does not validate"
    pass "$name: generated, summary printed, validates ($(grep -o '[0-9]* instructions' "$WORK/$name.txt" | head -n1))"
}
gen_ok gemm gemm --m 1024 --n 2048 --k 1024
gen_ok decode transformer --model llama2-7b --phase decode --batch 1 --seq 256 --layers 1
gen_ok prefill transformer --model custom --hidden 1024 --heads 8 --kv-heads 2 --ffn 2816 --layers 1 --phase prefill --batch 1 --seq 256
gen_ok tp2 transformer --model llama2-7b --phase decode --batch 1 --seq 128 --layers 1 --tp 2
gen_ok allgather collective --op all-gather --chips 4 --bytes 1048576 --algo ring --chunks 2
gen_ok allreduce collective --op all-reduce --chips 16 --bytes 1048576 --algo torus2d --dims 4x4
"$TRACE" info "$WORK/tp2.bin" | grep -q "streams: 2" || fail "tp2: expected 2 streams"
pass "--tp 2 writes one stream per chip"
grep -q "layer0/attn/qk_matmul" <("$TRACE" dis "$WORK/decode.bin") || fail "decode: no layer0/attn/qk_matmul annotation"
pass "decode instructions carry layer/op annotations"

# ---- planted inefficiencies cost simulated time -------------------------------------------------
sim_ns() {
    "$SIM" --quiet --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$1" --out "$WORK/simout" || fail "sim_main on $1"
    /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["simulated_time_ns"])' "$WORK/simout/stats.json"
}
"$GEN" transformer --model llama2-7b --phase decode --batch 1 --seq 256 --layers 1 -o "$WORK/clean.bin" >/dev/null
clean=$(sim_ns "$WORK/clean.bin")
for planted in --late-dma --no-double-buffer --false-dep --bad-order; do
    "$GEN" transformer --model llama2-7b --phase decode --batch 1 --seq 256 --layers 1 "$planted" -o "$WORK/p.bin" >/dev/null
    t=$(sim_ns "$WORK/p.bin")
    /usr/bin/python3 -c "import sys; sys.exit(0 if $t > $clean else 1)" || fail "$planted: $t ns is not slower than clean $clean ns"
    pass "$planted: $t ns > clean $clean ns"
done

# ---- checked-in samples are up to date --------------------------------------------------------
mkdir -p "$WORK/samples"
bash "$SOURCE_DIR/scripts/gen_samples.sh" "$BUILD_DIR" "$WORK/samples"
for f in "$WORK"/samples/*.bin; do
    cmp -s "$f" "$SOURCE_DIR/traces/samples/$(basename "$f")" ||
        fail "traces/samples/$(basename "$f") differs from what scripts/gen_samples.sh generates: regenerate it"
done
total=$(du -cb "$SOURCE_DIR"/traces/samples/* | tail -n1 | cut -f1)
[[ $total -lt 2000000 ]] || fail "traces/samples/ holds $total bytes (limit 2 MB)"
pass "samples regenerate byte for byte, $total bytes in all"

echo "$checks passed, 0 failed"
