#!/usr/bin/env bash
# End-to-end: the checked-in ONNX models through xpu_tracegen onnx and sim_main (onnx_models.py
# says what is checked), then the command's errors: an unsupported op names the op, the node and
# the supported ops, exits 2 and leaves no output; --unsupported=skip warns with a count.
set -euo pipefail
BUILD_DIR=$1
SOURCE_DIR=$2
python3 "$SOURCE_DIR/tests/e2e/onnx_models.py" "$BUILD_DIR" "$SOURCE_DIR"
GEN="$BUILD_DIR/traces/xpu_tracegen"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A model with an op no lowering knows: the GPT-2 block with its Softmax renamed (the op type is
# a length-prefixed string in the protobuf: same length, so the file stays well-formed).
python3 - "$SOURCE_DIR/tests/data/models/gpt2_block.onnx" "$WORK/bad.onnx" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
assert data.count(b"\x22\x07Softmax") == 1, "expected one Softmax op_type field"
open(sys.argv[2], "wb").write(data.replace(b"\x22\x07Softmax", b"\x22\x07Softmix"))
PY
set +e; "$GEN" onnx "$WORK/bad.onnx" --seq 16 -o "$WORK/bad.bin" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "unsupported op: exit $rc, expected 2"
for want in "$WORK/bad.onnx" "Softmix" "Softmax" "Conv" "--unsupported=skip"; do
    grep -q -- "$want" "$WORK/err" || { cat "$WORK/err"; fail "unsupported op: the message lacks '$want'"; }
done
[[ ! -e "$WORK/bad.bin" && ! -e "$WORK/bad.bin.tmp" ]] || fail "unsupported op: output left behind"
echo "ok: unsupported op -> exit 2: $(cat "$WORK/err" | cut -c1-160)..."
"$GEN" onnx "$WORK/bad.onnx" --seq 16 --unsupported=skip -o "$WORK/skip.bin" >"$WORK/out" 2>"$WORK/err" \
    || fail "--unsupported=skip failed: $(cat "$WORK/err")"
grep -q "left out 1 node(s).*Softmix x1" "$WORK/err" || { cat "$WORK/err"; fail "--unsupported=skip: no warning with the count"; }
echo "ok: --unsupported=skip: $(cat "$WORK/err")"

# Determinism: the same model and options give the same bytes.
"$GEN" onnx "$SOURCE_DIR/tests/data/models/mobilenetv2.onnx" -o "$WORK/a.bin" >/dev/null
"$GEN" onnx "$SOURCE_DIR/tests/data/models/mobilenetv2.onnx" -o "$WORK/b.bin" >/dev/null
cmp -s "$WORK/a.bin" "$WORK/b.bin" || fail "two generations of mobilenetv2 differ"
echo "ok: generation is deterministic"

# Bad inputs: not a model; a symbolic dim without its option.
set +e; "$GEN" onnx "$SOURCE_DIR/README.md" -o "$WORK/x.bin" 2>"$WORK/err"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q "README.md: not an ONNX model" "$WORK/err" || fail "not a model: exit $rc: $(cat "$WORK/err")"
set +e; "$GEN" onnx "$SOURCE_DIR/tests/data/models/gpt2_block.onnx" -o "$WORK/x.bin" 2>"$WORK/err"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q -- "--seq" "$WORK/err" || fail "missing --seq: exit $rc: $(cat "$WORK/err")"
set +e; "$GEN" onnx "$SOURCE_DIR/tests/data/models/resnet50.onnx" --tp 0 -o "$WORK/x.bin" 2>"$WORK/err"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q -- "--tp 0: expected 1..1024" "$WORK/err" || fail "--tp 0: exit $rc: $(cat "$WORK/err")"
[[ ! -e "$WORK/x.bin" ]] || fail "a failed generation left output"
echo "ok: bad inputs -> exit 2 with the file and what was expected"

# --tp that does not divide a split dim: uneven shards and a warning naming the count, not an error.
"$GEN" onnx "$SOURCE_DIR/tests/data/models/gpt2_block.onnx" --seq 16 --tp 5 -o "$WORK/tp5.bin" >"$WORK/out" 2>"$WORK/err" \
    || fail "--tp 5 failed: $(cat "$WORK/err")"
grep -q "warning: --tp 5 does not divide a split dim of [0-9]* node(s)" "$WORK/err" || { cat "$WORK/err"; fail "--tp 5: no warning"; }
grep -q "5 streams" "$WORK/out" || fail "--tp 5: not 5 streams: $(cat "$WORK/out")"
echo "ok: --tp 5: $(cat "$WORK/err" | cut -c1-120)..."
