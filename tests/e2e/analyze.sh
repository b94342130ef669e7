#!/usr/bin/env bash
# End-to-end test of the analysis' command line on real runs: sim_main writes the transaction
# log and the analysis outputs (and --no-analysis / --no-txlog do not), xpu_analyze on a
# finished folder gives the same bytes as sim_main did (determinism), --timing, --compare, --apply's
# errors, and bad logs (missing, truncated, corrupt, no trace copy): one message naming the
# file, exit 4, nothing half-written left behind.
# usage: bash analyze.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2
e2e_tools "$BUILD_DIR"
PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
TRACE="$SOURCE_DIR/traces/samples/gemm-1k.bin"
e2e_workdir analyze
checks=0
run_rc() {  # run_rc VAR CMD...: exit code into VAR, output in $WORK/out.txt, $WORK/err.txt
    local __v=$1; shift
    set +e; "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"; local __rc=$?; set -e
    printf -v "$__v" '%s' "$__rc"
}
outputs="report.txt analysis.json report.html timeline.json"

"$SIM" --platform "$PLATFORM" --trace "$TRACE" --out "$WORK/a" --deterministic > "$WORK/sim.txt"
for f in txlog.bin txlog.trace.bin $outputs; do [[ -s "$WORK/a/$f" ]] || fail "sim_main did not write $f"; done
grep -q "== stall analysis" "$WORK/sim.txt" || fail "sim_main printed no analysis"
grep -q "^suggestions" "$WORK/sim.txt" || fail "the report has no suggestions section"
cmp -s "$TRACE" "$WORK/a/txlog.trace.bin" || fail "txlog.trace.bin is not a copy of the trace"
pass "sim_main writes the log, the trace copy and the four analysis outputs"

mkdir "$WORK/b"
for f in $outputs; do cp "$WORK/a/$f" "$WORK/b/"; done
"$ANA" "$WORK/a" -q
for f in $outputs; do cmp -s "$WORK/a/$f" "$WORK/b/$f" || fail "xpu_analyze's $f differs from sim_main's"; done
pass "xpu_analyze on the folder reproduces sim_main's outputs byte for byte"

run_rc rc "$ANA" "$WORK/a" -q --timing
[[ $rc == 0 && ! -s "$WORK/out.txt" ]] || fail "--timing -q: exit $rc, stdout: $(cat "$WORK/out.txt")"
for key in load analyze report.txt analysis.json report.html timeline.json records peak_rss; do
    grep -Eq "^xpu_analyze timing: $key [0-9.]+ " "$WORK/err.txt" || fail "--timing printed no '$key' line: $(cat "$WORK/err.txt")"
done
for f in $outputs; do cmp -s "$WORK/a/$f" "$WORK/b/$f" || fail "--timing changed $f"; done
pass "--timing: seconds per phase, records and peak RSS on stderr; the same outputs"

"$SIM" --platform "$PLATFORM" --trace "$TRACE" --out "$WORK/c" -q --no-analysis
[[ -s "$WORK/c/txlog.bin" ]] || fail "--no-analysis must still write the log"
for f in $outputs; do [[ ! -e "$WORK/c/$f" ]] || fail "--no-analysis wrote $f"; done
"$SIM" --platform "$PLATFORM" --trace "$TRACE" --out "$WORK/d" -q --no-txlog
for f in txlog.bin txlog.trace.bin $outputs; do [[ ! -e "$WORK/d/$f" ]] || fail "--no-txlog wrote $f"; done
pass "--no-analysis and --no-txlog"

"$SIM" --platform "$PLATFORM" --trace "$TRACE" --out "$WORK/e" -q --no-analysis --set chip.modules.hbm.channel_bandwidth_gbps=18.75
run_rc rc "$ANA" --compare "$WORK/c" "$WORK/e"
[[ $rc == 0 ]] || fail "--compare exit $rc: $(cat "$WORK/err.txt")"
grep -q "simulated time" "$WORK/out.txt" && grep -q "HBM bandwidth/queueing" "$WORK/out.txt" || fail "--compare output: $(cat "$WORK/out.txt")"
"$PY" - "$WORK/out.txt" <<'PYEOF' || fail "--compare: half the HBM bandwidth must be slower"
import re, sys
line = [l for l in open(sys.argv[1]) if l.strip().startswith("simulated time")][0]
ratio = float(re.findall(r"([0-9.]+)x", line)[0])
assert ratio > 1.0, line
PYEOF
pass "--compare puts two configs side by side"

run_rc rc "$ANA" "$WORK/a" --apply 99 -o "$WORK/p.bin"
[[ $rc == 2 ]] && grep -q "suggestions" "$WORK/err.txt" || fail "--apply 99: exit $rc, $(cat "$WORK/err.txt")"
run_rc rc "$ANA" "$WORK/a" --apply 1
[[ $rc == 2 ]] || fail "--apply without -o: exit $rc"
[[ ! -e "$WORK/p.bin" ]] || fail "a failed --apply left a file"
pass "--apply errors"

bad() {  # bad NAME: the folder $WORK/bad must fail with exit 4 and name the log or trace
    run_rc rc "$ANA" "$WORK/bad" -q
    [[ $rc == 4 ]] || fail "$1: exit $rc, expected 4 ($(cat "$WORK/err.txt"))"
    [[ $(wc -l < "$WORK/err.txt") == 1 ]] || fail "$1: expected one line of message: $(cat "$WORK/err.txt")"
    grep -q "$WORK/bad/txlog" "$WORK/err.txt" || fail "$1: the message does not name the file: $(cat "$WORK/err.txt")"
    for f in $outputs; do [[ ! -e "$WORK/bad/$f" ]] || fail "$1: left $f behind"; done
    pass "bad log: $1 -> $(cut -c1-150 "$WORK/err.txt")"
}
reset_bad() { rm -rf "$WORK/bad"; mkdir "$WORK/bad"; cp "$WORK/a/txlog.bin" "$WORK/a/txlog.trace.bin" "$WORK/bad/"; }
reset_bad; rm "$WORK/bad/txlog.bin"; bad "missing log"
reset_bad; rm "$WORK/bad/txlog.trace.bin"; bad "missing trace copy"
reset_bad; head -c 5000 "$WORK/a/txlog.bin" > "$WORK/bad/txlog.bin"; bad "truncated log"
reset_bad; "$PY" -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x10; open(p,'wb').write(b)" "$WORK/bad/txlog.bin"; bad "flipped byte"
reset_bad; printf 'not a log' > "$WORK/bad/txlog.bin"; bad "not a log"
# A log of format version 2 (its version field; the reader looks no further): refused, both
# versions named.
reset_bad; "$PY" -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[8:12]=(2).to_bytes(4,'little'); open(p,'wb').write(b)" "$WORK/bad/txlog.bin"
bad "older format"
grep -q "byte 8: transaction log format version 2, expected version 3" "$WORK/err.txt" || fail "older format: $(cat "$WORK/err.txt")"
echo "$checks passed"
