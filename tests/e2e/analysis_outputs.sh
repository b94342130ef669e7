#!/usr/bin/env bash
# End-to-end check of the analysis' two rendered outputs, report.html and timeline.json
# (analysis/report_html.*, analysis/timeline_json.*), with Python's own parsers:
#   - the hand-built sample run (tests/analysis_sample.*): timeline.json is valid JSON in the
#     Chrome trace-event format (tests/e2e/check_timeline.py: every event has ph, pid, tid, ts;
#     slices have a name and dur >= 0; every track and process is named; slices of one track
#     never overlap, also at Perfetto's ns resolution) with the expected processes, tracks and
#     slice counts; report.html is well formed and self-contained (check_report_html.py);
#   - a long run (300,000 instructions, past the 200,000 slices-per-track cap): merged slices,
#     said so in the metadata, written in reasonable time;
#   - real runs, when sim_main analyses its runs (it has --no-analysis): the sample GEMM and the
#     4-chip all-gather (link tracks), both outputs checked the same way, and deterministic
#     (xpu_analyze again on the same folder gives the same bytes).
# usage: bash analysis_outputs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1
SOURCE_DIR=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SAMPLE="$BUILD_DIR/tests/analysis_sample"
e2e_tools "$BUILD_DIR"
e2e_workdir analysis_outputs
checks=0

[[ -x "$SAMPLE" ]] || fail "no executable at $SAMPLE"
[[ -x "$PY" ]] || fail "no $PY"

# timeline FILE ARGS...: check_timeline.py FILE ARGS, its summary in $WORK/timeline.json
timeline() {
    local f=$1
    shift
    "$PY" "$HERE/check_timeline.py" "$f" "$@" >"$WORK/summary.json" || return 1
}
# meta KEY: a metadata field of the last checked timeline
meta() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"][sys.argv[2]])' "$WORK/summary.json" "$1"
}
summary() {
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%d events, %d processes, %d tracks, %d counters, slices %s" % (d["events"], d["processes"], d["threads"], d["counters"], d["slices"]))' "$WORK/summary.json"
}

# --- the sample ---
"$SAMPLE" "$WORK/sample" || fail "analysis_sample failed"
timeline "$WORK/sample/timeline.json" --expect instr=14 --expect stall=11 --expect unit=4 --expect dma=3 --expect link=2 \
    --expect processes=3 --expect counters=4 --expect-process "chip 0" --expect-process "chip 1" --expect-process links \
    --expect-thread "core0 stalls" --expect-thread "core0 instructions" --expect-thread "core1 instructions" \
    --expect-thread "xpu.chip0.core0.mxu0" --expect-thread "xpu.chip0.core0.mxu0 (2)" --expect-thread "xpu.chip0.dma0" \
    --expect-thread "xpu.chip1.dma0" --expect-thread "xpu.links.chip0_xp" ||
    fail "sample: timeline.json is not the expected trace-event file"
pass "sample: timeline.json is valid trace-event JSON with the expected tracks ($(summary))"
"$PY" - "$WORK/sample/timeline.json" <<'EOF' || fail "sample: names and times in timeline.json"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["name"] for e in ev if e["ph"] == "X"}
want = {'<script>alert("x")</script> & \'q\'', "layer0/gemm/load_b", "layer1/allreduce/send", "HBM bandwidth/queueing",
        "bad utf8 \ufffd\ufffd end"}
assert want <= names, want - names
x = [e for e in ev if e["ph"] == "X" and e["cat"] == "dma" and e["name"] == "layer1/allreduce/send"]
assert len(x) == 1 and x[0]["ts"] == 0.02 and abs(x[0]["dur"] - 8.98) < 1e-9 and x[0]["args"]["bytes"] == 1 << 20, x
EOF
pass "sample: slices named by annotation (escaped strings round-trip) and cause, times in us"
"$PY" "$HERE/check_report_html.py" "$WORK/sample/report.html" --min-svg 10 \
    --expect-text '<script>alert("x")</script>' --reject-text '<script' --expect-text "20.00 us" \
    --expect-text "completed" >"$WORK/html.json" || fail "sample: report.html"
pass "sample: report.html is well formed, self-contained, escapes data strings"
"$SAMPLE" "$WORK/sample2" || fail "analysis_sample failed"
cmp -s "$WORK/sample/report.html" "$WORK/sample2/report.html" && cmp -s "$WORK/sample/timeline.json" "$WORK/sample2/timeline.json" ||
    fail "sample: outputs differ between two runs"
pass "sample: both outputs are deterministic"

# --- past the cap ---
start=$(date +%s.%N)
"$SAMPLE" "$WORK/long" --long 300000 || fail "analysis_sample --long failed"
secs=$("$PY" -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
timeline "$WORK/long/timeline.json" --expect instr=30000 --expect unit=30000 --expect stall=29999 ||
    fail "long: timeline.json past the cap"
merged=$(meta merged)
[[ "$merged" == *"core0 instructions: 300000 slices, more than the cap of 200000, merged into 30000"* ]] ||
    fail "long: the metadata does not say what was merged: $merged"
pass "long: 300000 instructions past the 200000 cap merged into 30000 slices per annotation run, said in the metadata (${secs}s, $(wc -c <"$WORK/long/timeline.json") bytes)"

# --- real runs ---
if [[ -x "$SIM" ]] && "$SIM" --help 2>&1 | grep -q -- '--no-analysis'; then
    run_sim() {  # NAME PLATFORM TRACE
        local rc=0
        "$SIM" --platform "$SOURCE_DIR/configs/$2" --trace "$SOURCE_DIR/traces/samples/$3" --out "$WORK/$1" \
            --deterministic --quiet >"$WORK/sim.txt" 2>&1 || rc=$?
        [[ $rc -eq 0 ]] || { cat "$WORK/sim.txt" >&2; fail "$1: sim_main exited $rc"; }
        [[ -s "$WORK/$1/report.html" && -s "$WORK/$1/timeline.json" ]] || fail "$1: sim_main wrote no report.html or timeline.json"
    }
    run_sim gemm xpu.yaml gemm-1k.bin
    timeline "$WORK/gemm/timeline.json" --min instr=1000 --min unit=100 --min dma=1 --min stall=1 --expect-process "chip 0" \
        --expect-thread "core0 instructions" --expect-thread "core0 stalls" || fail "gemm: timeline.json"
    pass "gemm: timeline.json is valid trace-event JSON ($(summary))"
    "$PY" "$HERE/check_report_html.py" "$WORK/gemm/report.html" >/dev/null || fail "gemm: report.html"
    pass "gemm: report.html is well formed and self-contained ($(wc -c <"$WORK/gemm/report.html") bytes)"
    run_sim allgather xpu-ring4.yaml allgather-4.bin
    timeline "$WORK/allgather/timeline.json" --min instr=4 --min link=4 --expect-process "chip 3" --expect-process links ||
        fail "allgather: timeline.json"
    pass "allgather on 4 chips: a process per chip, link tracks ($(summary))"
    "$PY" "$HERE/check_report_html.py" "$WORK/allgather/report.html" >/dev/null || fail "allgather: report.html"
    pass "allgather: report.html is well formed and self-contained"
    if [[ -x "$ANA" ]]; then
        for f in report.html timeline.json; do cp "$WORK/gemm/$f" "$WORK/gemm-first-$f"; done
        "$ANA" "$WORK/gemm" >/dev/null 2>"$WORK/analyze.txt" || { cat "$WORK/analyze.txt" >&2; fail "xpu_analyze failed"; }
        for f in report.html timeline.json; do
            cmp -s "$WORK/gemm/$f" "$WORK/gemm-first-$f" || fail "gemm: $f differs between sim_main's analysis and xpu_analyze's"
        done
        pass "gemm: xpu_analyze writes the same report.html and timeline.json again (deterministic)"
    fi
else
    echo "note: $SIM does not analyse its runs yet (no --no-analysis option): real runs not checked"
fi

echo "$checks passed, 0 failed"
