#!/usr/bin/env bash
# End-to-end check of --timeline full|summary|off (sim_main and xpu_analyze; docs/outputs.md):
#   - the three values on the sample GEMM: without the option a run this small is full, byte for
#     byte what --timeline full writes; summary is a valid trace-event file (check_timeline.py:
#     what Perfetto's JSON importer needs) that says it is one; off writes none and says so;
#     xpu_analyze switches an existing folder between them;
#   - bad values: exit 2 (as every other bad option) with one message naming the option and the
#     values it takes, and nothing written or removed;
#   - the size bound: llama2-7b decode runs of 2 and 4 layers with --timeline summary: at most
#     40,000 slices and 16 MiB, not growing with the layers (<= 10% more for twice the layers);
#     the folder extrapolated to 32 layers (everything else grows linearly with the layers, the
#     summary is at most 16 MiB) stays under the 200 MB target; and 32 layers have more than
#     1,000,000 instructions (so more events), so that a run without --timeline writes the summary.
# usage: bash timeline_modes.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1
SOURCE_DIR=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
e2e_tools "$BUILD_DIR"
e2e_workdir timeline_modes
PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
GEMM="$SOURCE_DIR/traces/samples/gemm-1k-late-dma.bin"
checks=0

meta() {  # meta FILE KEY: a metadata field of a timeline.json, "" if absent
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"].get(sys.argv[2], ""))' "$1" "$2"
}
sim() {  # sim OUT ARGS...
    local out=$1
    shift
    "$SIM" --platform "$PLATFORM" --trace "$GEMM" --out "$WORK/$out" --no-verify "$@" >"$WORK/$out.log" 2>&1
}

# --- the three values ---
sim default || fail "sim_main without --timeline: $(cat "$WORK/default.log")"
sim full --timeline full || fail "sim_main --timeline full: $(cat "$WORK/full.log")"
cmp -s "$WORK/default/timeline.json" "$WORK/full/timeline.json" || fail "a small run without --timeline is not full"
[[ -z "$(meta "$WORK/full/timeline.json" timeline)" ]] || fail "a full timeline says it is a summary"
"$PY" "$HERE/check_timeline.py" "$WORK/full/timeline.json" >/dev/null || fail "--timeline full: not a valid trace-event file"
pass "--timeline full: every slice, the same bytes as a small run without the option"

sim summary --timeline summary || fail "sim_main --timeline summary: $(cat "$WORK/summary.log")"
"$PY" "$HERE/check_timeline.py" "$WORK/summary/timeline.json" >/dev/null || fail "--timeline summary: not a valid trace-event file"
[[ "$(meta "$WORK/summary/timeline.json" timeline)" == summary ]] || fail "--timeline summary: metadata.timeline is not 'summary'"
[[ "$(meta "$WORK/summary/timeline.json" summary)" == *"merged"* ]] || fail "--timeline summary: metadata.summary does not say what was merged"
for f in report.txt analysis.json; do
    cmp -s "$WORK/default/$f" "$WORK/summary/$f" || fail "--timeline summary changed $f"
done
pass "--timeline summary: a valid trace-event file that says it is a summary and what it merges; the reports unchanged"

sim off --timeline off || fail "sim_main --timeline off: $(cat "$WORK/off.log")"
[[ ! -e "$WORK/off/timeline.json" ]] || fail "--timeline off wrote timeline.json"
[[ -s "$WORK/off/report.txt" && -s "$WORK/off/analysis.json" && -s "$WORK/off/report.html" ]] || fail "--timeline off: reports missing"
grep -q "report.html}" "$WORK/off.log" && ! grep -q "timeline.json" "$WORK/off.log" || fail "--timeline off: the summary names timeline.json"
pass "--timeline off: no timeline.json, the reports written, none named that is not there"

"$ANA" "$WORK/off" --no-verify -q --timeline full || fail "xpu_analyze --timeline full"
cmp -s "$WORK/off/timeline.json" "$WORK/full/timeline.json" || fail "xpu_analyze --timeline full differs from sim_main's"
"$ANA" "$WORK/off" --no-verify -q --timeline off || fail "xpu_analyze --timeline off"
[[ ! -e "$WORK/off/timeline.json" ]] || fail "xpu_analyze --timeline off left the old timeline.json"
"$ANA" "$WORK/off" --no-verify -q --timeline summary || fail "xpu_analyze --timeline summary"
cmp -s "$WORK/off/timeline.json" "$WORK/summary/timeline.json" || fail "xpu_analyze --timeline summary differs from sim_main's"
pass "xpu_analyze --timeline full|off|summary rewrites a folder's timeline as sim_main writes it"

# --- bad values ---
for bad in bogus "" FULL; do
    set +e
    "$SIM" --platform "$PLATFORM" --trace "$GEMM" --out "$WORK/bad" --timeline "$bad" >"$WORK/bad.out" 2>"$WORK/bad.err"
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || fail "sim_main --timeline '$bad': exit $rc, expected 2"
    grep -qF -- "--timeline '$bad': expected full, summary or off" "$WORK/bad.err" || fail "sim_main --timeline '$bad': $(cat "$WORK/bad.err")"
    [[ $(wc -l <"$WORK/bad.err") -eq 1 ]] || fail "sim_main --timeline '$bad': more than one line: $(cat "$WORK/bad.err")"
    [[ ! -e "$WORK/bad" ]] || fail "sim_main --timeline '$bad' created its output folder"
    before=$(cd "$WORK/full" && sha256sum ./*)
    set +e
    "$ANA" "$WORK/full" --no-verify --timeline "$bad" >"$WORK/bad.out" 2>"$WORK/bad.err"
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || fail "xpu_analyze --timeline '$bad': exit $rc, expected 2"
    grep -qF -- "--timeline '$bad': expected full, summary or off" "$WORK/bad.err" || fail "xpu_analyze --timeline '$bad': $(cat "$WORK/bad.err")"
    [[ "$(cd "$WORK/full" && sha256sum ./*)" == "$before" ]] || fail "xpu_analyze --timeline '$bad' changed the folder"
done
pass "a bad --timeline value: exit 2, one line naming the values, nothing written or removed"

# --- the size bound, from 2 and 4 decode layers ---
declare -A rest tl instr slices
for layers in 2 4; do
    "$GEN" transformer --model llama2-7b --phase decode --batch 1 --seq 2048 --layers "$layers" -o "$WORK/d$layers.bin" >/dev/null
    "$SIM" --platform "$PLATFORM" --trace "$WORK/d$layers.bin" --out "$WORK/d$layers" --no-verify --timeline summary -q ||
        fail "decode, $layers layers"
    "$PY" "$HERE/check_timeline.py" "$WORK/d$layers/timeline.json" >"$WORK/check$layers.json" ||
        fail "decode, $layers layers: not a valid trace-event file"
    slices[$layers]=$("$PY" -c 'import json,sys; print(sum(json.load(open(sys.argv[1]))["slices"].values()))' "$WORK/check$layers.json")
    tl[$layers]=$(stat -c %s "$WORK/d$layers/timeline.json")
    all=$(du -sb "$WORK/d$layers" | cut -f1)
    rest[$layers]=$((all - ${tl[$layers]}))
    instr[$layers]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["instructions_retired"])' "$WORK/d$layers/stats.json")
done
verdict=$("$PY" - "${tl[2]}" "${tl[4]}" "${slices[2]}" "${slices[4]}" "${rest[2]}" "${rest[4]}" "${instr[2]}" "${instr[4]}" <<'EOF'
import sys
t2, t4, s2, s4, r2, r4, i2, i4 = map(int, sys.argv[1:])
cap = 16 << 20  # the summary's size, whatever the trace (40,000 slices of at most ~400 bytes)
per_layer = (r4 - r2) / 2  # everything but the timeline grows with the layers
folder32 = r4 + 28 * per_layer + cap
instr32 = i4 + 28 * (i4 - i2) / 2
ok = max(s2, s4) <= 40000 and max(t2, t4) <= cap and t4 <= t2 * 1.1 and folder32 <= 200e6 and instr32 > 1000000
print("%s summary %d -> %d bytes (%d -> %d slices) for 2 -> 4 layers; 32 layers extrapolated: folder <= %.0f MB "
      "(%.1f MB a layer + the summary's 16 MiB), %d instructions"
      % ("ok" if ok else "FAIL", t2, t4, s2, s4, folder32 / 1e6, per_layer / 1e6, instr32))
EOF
)
[[ $verdict == ok* ]] || fail "size bound: $verdict"
pass "size bound: ${verdict#ok }"
