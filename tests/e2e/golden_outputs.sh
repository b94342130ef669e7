#!/usr/bin/env bash
# Behaviour is unchanged: the outputs of a fixed set of runs (scripts/golden_outputs.sh: samples,
# planted cases, multi-chip, waveforms, patched traces, xpu_analyze's own outputs) hash to the
# manifest checked in at tests/data/golden/outputs.sha256, byte for byte.
# A change that means to change an output regenerates the manifest and says why in its commit:
#   scripts/golden_outputs.sh build /tmp/golden && cp /tmp/golden/outputs.sha256 tests/data/golden/
# usage: bash golden_outputs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2
e2e_workdir golden
bash "$SOURCE_DIR/scripts/golden_outputs.sh" "$BUILD_DIR" "$WORK" 2> "$WORK/log.txt" || { cat "$WORK/log.txt" >&2; fail "a golden run failed"; }
want="$SOURCE_DIR/tests/data/golden/outputs.sha256"
if ! diff "$want" "$WORK/outputs.sha256" > "$WORK/diff.txt"; then
    echo "outputs that differ from $want (< expected, > now):" >&2
    cat "$WORK/diff.txt" >&2
    fail "outputs changed"
fi
pass "$(wc -l < "$want") output files byte-identical to the manifest"
echo "1 passed, 0 failed"
