#!/usr/bin/env bash
# End-to-end: SIGINT (and SIGTERM, SIGHUP) during a long run. sim_main must stop promptly, exit
# 130 (143, 129), say "interrupted" ("terminated", "hung up"), write nothing and leave the earlier
# run's outputs as they were: its own go to a staging folder beside OUT (removed), no *.tmp.
# The long run: four 16 MiB DMAs cut into 1-byte chunks (--set chunk_bytes=1), tens of millions
# of memory transactions from a 6-instruction trace. The signal is sent once sim_main reports
# progress (so the run loop is running, whatever the machine's speed).
# usage: bash interrupt.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
SIM="$BUILD_DIR/platform/sim_main"
TOOL="$BUILD_DIR/traces/xpu_trace"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/interrupt_e2e.XXXXXX")
pid=
cleanup() {
    [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

checks=0
fail() {
    echo "FAIL: $*" >&2
    echo "$checks passed, 1 failed" >&2
    exit 1
}
pass() {
    checks=$((checks + 1))
    echo "ok $checks - $*"
}
for exe in "$SIM" "$TOOL"; do
    [[ -x "$exe" ]] || fail "no executable at $exe"
done

cat >"$WORK/long.xtr" <<'EOF'
.xtr 1.0
.stream chip=0 core=0
dma src=hbm:0x0 dst=vmem:0x0 bytes=16777216 flag=1
dma src=hbm:0x1000000 dst=vmem:0x0 bytes=16777216 flag=1
dma src=hbm:0x2000000 dst=vmem:0x0 bytes=16777216 flag=1
dma src=hbm:0x3000000 dst=vmem:0x0 bytes=16777216 flag=1
swait flag=1 cond=ge val=4
halt
EOF
"$TOOL" asm "$WORK/long.xtr" -o "$WORK/long.bin"

# interrupt SIGNAL EXIT WORD: starts the long run over a stale stats.json, sends SIGNAL after
# the first progress report, checks the exit, the message and the output folder.
interrupt() {
    local sig=$1 want=$2 word=$3
    local out="$WORK/out-$sig"
    # Each run its own stderr: the parent may poll before the child has truncated a shared one
    # and see the previous run's progress line.
    mkdir -p "$out"
    echo '{"schema": "xpusim.stats/1", "completed": true}' >"$out/stats.json"  # stale, looks complete
    echo 'stale' >"$out/waves.vcd"
    "$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$WORK/long.bin" --out "$out" \
        --vcd "$out/waves.vcd" --vcd-signals '*.scalar.*' \
        --set chip.modules.dma0.chunk_bytes=1 >"$WORK/stdout-$sig" 2>"$WORK/stderr-$sig" &
    pid=$!
    local waited=0
    until grep -q 'instructions retired' "$WORK/stderr-$sig"; do
        kill -0 "$pid" 2>/dev/null || fail "$sig: sim_main ended before reporting progress: $(cat "$WORK/stderr-$sig")"
        sleep 0.2
        waited=$((waited + 1))
        [[ $waited -lt 600 ]] || fail "$sig: no progress report within 120 s"
    done
    [[ -n "$(ls -d "$WORK"/.out-$sig.staging-* 2>/dev/null)" ]] || fail "$sig: no staging folder beside $out while the run goes on"
    local t0 t1 rc
    t0=$(date +%s%N)
    kill -s "$sig" "$pid"
    set +e
    wait "$pid"
    rc=$?
    set -e
    pid=
    t1=$(date +%s%N)
    local ms=$(((t1 - t0) / 1000000))
    [[ $rc -eq $want ]] || { cat "$WORK/stderr-$sig" >&2; fail "$sig: exit $rc, expected $want"; }
    [[ $ms -lt 5000 ]] || fail "$sig: took $ms ms to stop, expected < 5 s"
    grep -Eq "^sim_main: $word \(SIG$sig\) at [0-9.]+ us simulated, [0-9]+ of 6 instructions retired; no outputs written$" "$WORK/stderr-$sig" ||
        { cat "$WORK/stderr-$sig" >&2; fail "$sig: no '$word' message"; }
    grep -q '^  xpu\.chip0\.core0\.scalar (chip 0, core 0): ' "$WORK/stderr-$sig" || fail "$sig: the message does not say where the core was"
    [[ "$(cat "$out/stats.json")" == '{"schema": "xpusim.stats/1", "completed": true}' && "$(cat "$out/waves.vcd")" == stale ]] ||
        fail "$sig: the earlier run's outputs in $out were changed by the interrupted run"
    [[ "$(ls -A "$out" | tr '\n' ' ')" == "stats.json waves.vcd " ]] || fail "$sig: files left in $out: $(ls -A "$out")"
    [[ -z "$(ls -A "$WORK" | grep -E '^\.out-.*\.(staging-|lock)')" ]] || fail "$sig: staging folder or lock left: $(ls -A "$WORK")"
    [[ ! -s $WORK/stdout-$sig ]] || fail "$sig: a summary was printed for an interrupted run"
    pass "SIG$sig after the first progress report: exit $want in $ms ms, '$word', the earlier outputs untouched"
}

interrupt INT 130 interrupted
interrupt TERM 143 terminated
interrupt HUP 129 'hung up'

echo "$checks passed, 0 failed"
