#!/usr/bin/env bash
# End-to-end test of the waveforms (docs/waveforms.md) with the real GTKWave, headless under
# xvfb-run: the test driver vcd_dump writes the waveforms of the sample GEMM and decode layer;
# GTKWave loads each VCD without a complaint; it loads the GTKWave save file with every signal
# displayed, in order, and shows opcodes and stall causes by name (Tcl interface). Also: the
# signal selection and the window restrict the file, HBM channels and VMEM bytes_allocated read
# back the same through GTKWave and under a selection, files are deterministic, bad options are
# usage errors, an unwritable output is an error.
# usage: bash vcd.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
DUMP="$BUILD_DIR/tests/vcd_dump"
PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
GEMM="$SOURCE_DIR/traces/samples/gemm-1k.bin"
DECODE="$SOURCE_DIR/traces/samples/decode-layer.bin"
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vcd_e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# No accessibility bus under xvfb: keeps GTK from warning about it.
export NO_AT_BRIDGE=1

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

[[ -x "$DUMP" ]] || fail "no executable at $DUMP"
[[ -x "$PY" ]] || fail "no $PY"
for tool in gtkwave xvfb-run; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh installs gtkwave, xvfb, xauth)"
done

# gtkwave_load VCD: GTKWave reads the whole file (-x: exit once loaded) and says nothing bad.
gtkwave_load() {
    local out="$WORK/gtkwave-load.txt" rc=0
    xvfb-run -a gtkwave -x "$1" >"$out" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { cat "$out" >&2; return 1; }
    if grep -Eiq 'near byte|time backtracking|error|warning' "$out"; then
        cat "$out" >&2
        return 1
    fi
    grep -q 'end time' "$out" || { cat "$out" >&2; return 1; }
}

# gtkwave_tcl GTKW SCRIPT: loads the save file (and its dump file) and runs SCRIPT; its
# output lines starting with "XPU " go to $WORK/tcl.txt.
gtkwave_tcl() {
    local out="$WORK/gtkwave-tcl.txt" rc=0
    { cat "$2"; echo "gtkwave::/File/Quit"; } >"$WORK/script.tcl"
    xvfb-run -a gtkwave -S "$WORK/script.tcl" "$1" >"$out" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { cat "$out" >&2; return 1; }
    if grep -Eiq 'near byte|time backtracking|error|warning' "$out"; then
        cat "$out" >&2
        return 1
    fi
    grep '^XPU ' "$out" >"$WORK/tcl.txt" || true
}

cat >"$WORK/list.tcl" <<'EOF'
puts "XPU facs [gtkwave::getNumFacs]"
foreach s [gtkwave::getDisplayedSignals] { puts "XPU shown $s" }
EOF

# first_time VCD SIGNAL VALUE: the first time SIGNAL (full name, no range) takes VALUE.
first_time() {
    "$PY" - "$@" <<'EOF'
import sys
path, name, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids, scope, t = {}, [], 0
for line in open(path):
    w = line.split()
    if not w:
        continue
    if w[0] == '$scope': scope.append(w[2])
    elif w[0] == '$upscope': scope.pop()
    elif w[0] == '$var': ids[w[3]] = '.'.join(scope + [w[4]])
    elif line[0] == '#': t = int(line[1:])
    elif line[0] == 'b' and ids.get(w[1]) == name and int(w[0][1:], 2) == value:
        print(t); sys.exit(0)
    elif line[0] in '01' and len(w) == 1 and ids.get(line[1:].strip()) == name and int(line[0]) == value:
        print(t); sys.exit(0)
sys.exit(1)
EOF
}

# changes_of VCD SIGNAL: "TIME VALUE" per change of SIGNAL (full name, no range), the
# $dumpvars value first.
changes_of() {
    "$PY" - "$@" <<'EOF'
import sys
path, name = sys.argv[1], sys.argv[2]
ids, scope, t = {}, [], 0
for line in open(path):
    w = line.split()
    if not w:
        continue
    if w[0] == '$scope': scope.append(w[2])
    elif w[0] == '$upscope': scope.pop()
    elif w[0] == '$var': ids[w[3]] = '.'.join(scope + [w[4]])
    elif line[0] == '#': t = int(line[1:])
    elif line[0] == 'b' and ids.get(w[1]) == name: print(t, int(w[0][1:], 2))
    elif line[0] in '01' and len(w) == 1 and ids.get(line[1:].strip()) == name: print(t, int(line[0]))
EOF
}

# 0. The load check catches a broken file (a check of the check).
printf '$timescale 1ps $end\n$scope module a $end\n$var wire 1 ! x $end\n$upscope $end\n$enddefinitions $end\n#10\n$dumpvars\n0!\n$end\n#5\n1"\n' \
    >"$WORK/broken.vcd"
if gtkwave_load "$WORK/broken.vcd" 2>/dev/null; then fail "the GTKWave load check accepts a broken VCD"; fi
pass "a broken VCD makes GTKWave complain, and the check notices"

# 1. The GEMM sample: all signals.
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/gemm.vcd" >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt" >&2; fail "vcd_dump gemm"; }
grep -q "98 of 98 signals" "$WORK/out.txt" || fail "vcd_dump: $(cat "$WORK/out.txt")"
for f in gemm.vcd gemm.gtkw gemm.opcodes.txt gemm.stalls.txt; do [[ -s "$WORK/$f" ]] || fail "no $f"; done
ls "$WORK" | grep -q '\.tmp$' && fail "temporary files left: $(ls "$WORK")"
pass "vcd_dump writes the VCD, the save file and the two filter files"

gtkwave_load "$WORK/gemm.vcd" || fail "GTKWave does not load gemm.vcd cleanly"
pass "GTKWave loads the GEMM's VCD without a complaint"

gtkwave_tcl "$WORK/gemm.gtkw" "$WORK/list.tcl" || fail "GTKWave does not load gemm.gtkw cleanly"
grep -qx "XPU facs 98" "$WORK/tcl.txt" || fail "facilities: $(grep facs "$WORK/tcl.txt")"
[[ $(grep -c '^XPU shown ' "$WORK/tcl.txt") -eq 98 ]] || fail "displayed: $(cat "$WORK/tcl.txt")"
[[ $(grep -m1 '^XPU shown ' "$WORK/tcl.txt") == "XPU shown xpu.chip0.core0.scalar.opcode[7:0]" ]] ||
    fail "first displayed signal: $(grep -m1 '^XPU shown ' "$WORK/tcl.txt")"
for s in 'xpu.chip0.core0.scalar.stall[2:0]' 'xpu.chip0.core0.scalar.iq_depth[15:0]' 'xpu.chip0.core0.vpu0.busy' \
         'xpu.chip0.core0.mxu7.op[7:0]' 'xpu.chip0.dma3.inflight_bytes[63:0]' 'xpu.chip0.hbm.bytes_served[63:0]' \
         'xpu.chip0.core0.vmem.requests[31:0]' 'xpu.chip0.hbm.ch00.requests[31:0]' 'xpu.chip0.hbm.ch07.bytes_served[63:0]' \
         'xpu.chip0.hbm.ch31.bytes_served[63:0]' 'xpu.chip0.core0.vmem.bytes_allocated[63:0]'; do
    grep -qxF "XPU shown $s" "$WORK/tcl.txt" || fail "$s not displayed"
done
# Display order: core (scalar, units), DMA, memories (the HBM's channels in its group).
order=$(grep '^XPU shown ' "$WORK/tcl.txt" | sed 's/^XPU shown xpu\.chip0\.//; s/\.[^.]*$//' | uniq | tr '\n' ' ')
channels=$(for k in $(seq -w 0 31); do printf 'hbm.ch%s ' "$k"; done)
[[ "$order" == "core0.scalar core0.vpu0 core0.mxu0 core0.mxu1 core0.mxu2 core0.mxu3 core0.mxu4 core0.mxu5 core0.mxu6 core0.mxu7 dma0 dma1 dma2 dma3 hbm ${channels}core0.vmem " ]] ||
    fail "display order: $order"
grep -A1 -x '@c00200' "$WORK/gemm.gtkw" | grep -qx -- '-chip0.hbm.channels' || fail "the HBM channels are not a closed group in gemm.gtkw"
pass "GTKWave loads the save file: 98 signals displayed, core first, then DMA, then memories (HBM channels in a closed group)"

# Opcodes and stall causes show by name: read back at times taken from the VCD.
t_mm=$(first_time "$WORK/gemm.vcd" xpu.chip0.core0.mxu0.op 33) || fail "mxu0 never runs a matmul (0x21)"
t_dep=$(first_time "$WORK/gemm.vcd" xpu.chip0.core0.scalar.stall 2) || fail "no dependency stall in the GEMM"
cat >"$WORK/values.tcl" <<EOF
gtkwave::setMarker $t_mm
puts "XPU op [gtkwave::getTraceValueAtMarkerFromName {xpu.chip0.core0.mxu0.op[7:0]}]"
puts "XPU busy [gtkwave::getTraceValueAtMarkerFromName {xpu.chip0.core0.mxu0.busy}]"
gtkwave::setMarker $t_dep
puts "XPU stall [gtkwave::getTraceValueAtMarkerFromName {xpu.chip0.core0.scalar.stall[2:0]}]"
EOF
gtkwave_tcl "$WORK/gemm.gtkw" "$WORK/values.tcl" || fail "GTKWave values script"
grep -qx "XPU op matmul" "$WORK/tcl.txt" || fail "mxu0.op at $t_mm ps: $(cat "$WORK/tcl.txt")"
grep -qx "XPU busy 1" "$WORK/tcl.txt" || fail "mxu0.busy at $t_mm ps: $(cat "$WORK/tcl.txt")"
grep -qx "XPU stall dependency" "$WORK/tcl.txt" || fail "stall at $t_dep ps: $(cat "$WORK/tcl.txt")"
pass "GTKWave shows mxu0.op as 'matmul' and the stall as 'dependency' (translate filters)"

# The new signals read back through GTKWave: at the end of the run a channel's bytes_served is
# its total in the VCD, and VMEM bytes_allocated is back to 0.
t_end=$(grep '^#' "$WORK/gemm.vcd" | tail -1 | tr -d '#')
ch7=$(changes_of "$WORK/gemm.vcd" xpu.chip0.hbm.ch07.bytes_served | tail -1 | cut -d' ' -f2)
alloc_max=$(changes_of "$WORK/gemm.vcd" xpu.chip0.core0.vmem.bytes_allocated | cut -d' ' -f2 | sort -n | tail -1)
[[ -n "$ch7" && -n "$alloc_max" && $ch7 -gt 0 && $alloc_max -gt 0 ]] || fail "hbm.ch07 served '$ch7' bytes, VMEM high-water '$alloc_max'"
# (GTKWave computes values of displayed traces only, not of those in the closed channel group:
# the script takes everything off and displays the channel on its own, in hex by default.)
cat >"$WORK/new.tcl" <<EOF
gtkwave::setMarker $t_end
puts "XPU alloc [gtkwave::getTraceValueAtMarkerFromName {xpu.chip0.core0.vmem.bytes_allocated[63:0]}]"
gtkwave::/Edit/Highlight_All
gtkwave::/Edit/Cut
gtkwave::addSignalsFromList {xpu.chip0.hbm.ch07.bytes_served}
gtkwave::setMarker $t_end
puts "XPU ch7 [gtkwave::getTraceValueAtMarkerFromName {xpu.chip0.hbm.ch07.bytes_served[63:0]}]"
EOF
gtkwave_tcl "$WORK/gemm.gtkw" "$WORK/new.tcl" || fail "GTKWave new-signals script"
grep -qx "XPU ch7 $(printf '%016X' "$ch7")" "$WORK/tcl.txt" || fail "hbm.ch07.bytes_served at $t_end ps: $(cat "$WORK/tcl.txt"), VCD says $ch7"
grep -qx "XPU alloc 0" "$WORK/tcl.txt" || fail "vmem.bytes_allocated at $t_end ps: $(cat "$WORK/tcl.txt")"
pass "GTKWave reads hbm.ch07.bytes_served ($ch7 bytes) and vmem.bytes_allocated (0 at the end, high-water $alloc_max bytes)"

# 2. Deterministic: the same run, the same bytes.
cp "$WORK/gemm.vcd" "$WORK/first.vcd"
cp "$WORK/gemm.gtkw" "$WORK/first.gtkw"
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/gemm.vcd" >/dev/null 2>&1 || fail "vcd_dump gemm (again)"
cmp -s "$WORK/first.vcd" "$WORK/gemm.vcd" || fail "two runs give different VCD files"
cmp -s "$WORK/first.gtkw" "$WORK/gemm.gtkw" || fail "two runs give different save files"
pass "two runs write identical files"

# 3. Selection and window.
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/sel.vcd" --signals '*.mxu0.*,xpu.chip0.hbm.requests' --window 2000:6000 \
    >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt" >&2; fail "vcd_dump --signals --window"; }
gtkwave_load "$WORK/sel.vcd" || fail "GTKWave does not load sel.vcd cleanly"
gtkwave_tcl "$WORK/sel.gtkw" "$WORK/list.tcl" || fail "GTKWave does not load sel.gtkw cleanly"
grep -qx "XPU facs 3" "$WORK/tcl.txt" || fail "selection: $(cat "$WORK/tcl.txt")"
[[ "$(grep '^XPU shown ' "$WORK/tcl.txt" | tr '\n' ' ')" == "XPU shown xpu.chip0.core0.mxu0.busy XPU shown xpu.chip0.core0.mxu0.op[7:0] XPU shown xpu.chip0.hbm.requests[31:0] " ]] ||
    fail "selection displayed: $(cat "$WORK/tcl.txt")"
first=$(grep -m1 '^#' "$WORK/sel.vcd")
last=$(grep '^#' "$WORK/sel.vcd" | tail -1)
[[ "$first" == "#2000000" && "$last" == "#6000000" ]] || fail "window: timestamps $first .. $last"
[[ $(stat -c %s "$WORK/sel.vcd") -lt $(($(stat -c %s "$WORK/gemm.vcd") / 10)) ]] || fail "the selection is not much smaller"
pass "--signals and --window restrict the file (3 signals, 2000..6000 ns)"

# A selection of channels, and bytes_allocated without its core's or DMA engines' signals (the
# writer then listens to them all the same): the same waveforms as in the full file.
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/ch.vcd" --signals 'xpu.chip0.hbm.ch0?.*,*.vmem.bytes_allocated' \
    >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt" >&2; fail "vcd_dump --signals channels"; }
grep -q "21 of 98 signals" "$WORK/out.txt" || fail "channel selection: $(cat "$WORK/out.txt")"
gtkwave_load "$WORK/ch.vcd" || fail "GTKWave does not load ch.vcd cleanly"
gtkwave_tcl "$WORK/ch.gtkw" "$WORK/list.tcl" || fail "GTKWave does not load ch.gtkw cleanly"
grep -qx "XPU facs 21" "$WORK/tcl.txt" || fail "channel selection facilities: $(cat "$WORK/tcl.txt")"
[[ $(grep -c '^XPU shown ' "$WORK/tcl.txt") -eq 21 ]] || fail "channel selection displayed: $(cat "$WORK/tcl.txt")"
for s in xpu.chip0.core0.vmem.bytes_allocated xpu.chip0.hbm.ch05.bytes_served xpu.chip0.hbm.ch09.requests; do
    changes_of "$WORK/ch.vcd" $s >"$WORK/a.txt"
    changes_of "$WORK/gemm.vcd" $s >"$WORK/b.txt"
    [[ $(wc -l <"$WORK/a.txt") -gt 2 ]] && cmp -s "$WORK/a.txt" "$WORK/b.txt" || fail "$s differs between the selection and the full file"
done
pass "a selection of HBM channels and bytes_allocated: 21 signals, each the same waveform as in the full file"

# 4. The decode layer (the screenshot of docs/waveforms.md).
"$DUMP" "$PLATFORM" "$DECODE" "$WORK/decode.vcd" >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt" >&2; fail "vcd_dump decode"; }
gtkwave_load "$WORK/decode.vcd" || fail "GTKWave does not load decode.vcd cleanly"
gtkwave_tcl "$WORK/decode.gtkw" "$WORK/list.tcl" || fail "GTKWave does not load decode.gtkw cleanly"
[[ $(grep -c '^XPU shown ' "$WORK/tcl.txt") -eq 98 ]] || fail "decode displayed: $(cat "$WORK/tcl.txt")"
pass "GTKWave loads the decode layer's VCD and save file"

# 5. Errors.
rc=0
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/x.vcd" --signals '*.mxu9.*' >"$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "'\*.mxu9.\*' matches no signal" "$WORK/out.txt" || fail "glob matching nothing: rc $rc, $(cat "$WORK/out.txt")"
rc=0
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/x.vcd" --window 5:1 >"$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "empty window" "$WORK/out.txt" || fail "empty window: rc $rc, $(cat "$WORK/out.txt")"
rc=0
"$DUMP" "$PLATFORM" "$GEMM" "$WORK/no/such/dir/x.vcd" >"$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot write" "$WORK/out.txt" || fail "unwritable output: rc $rc, $(cat "$WORK/out.txt")"
[[ ! -e "$WORK/x.vcd" ]] || fail "a file was written despite the errors"
pass "a glob matching nothing and an empty window are usage errors (2); an unwritable path is an error (1)"

# 6. The same through sim_main's options.
SIM="$BUILD_DIR/platform/sim_main"
"$SIM" --quiet --platform "$PLATFORM" --trace "$GEMM" --out "$WORK/simout" --vcd "$WORK/simout/wave.vcd" \
    --vcd-signals '*.mxu0.*,*.scalar.*' --vcd-window 0:5000 || fail "sim_main --vcd failed"
for f in wave.vcd wave.gtkw wave.opcodes.txt wave.stalls.txt stats.json; do
    [[ -s "$WORK/simout/$f" ]] || fail "sim_main --vcd did not write $f"
done
gtkwave_load "$WORK/simout/wave.vcd" || fail "GTKWave does not load sim_main's wave.vcd cleanly"
rc=0
"$SIM" --quiet --platform "$PLATFORM" --trace "$GEMM" --out "$WORK/simout2" --vcd "$WORK/simout2/w.vcd" --vcd-signals '*.nothing' \
    >"$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "sim_main --vcd-signals matching nothing: exit $rc, expected 2"
pass "sim_main --vcd/--vcd-signals/--vcd-window write a VCD GTKWave loads; a bad selection exits 2"

echo "$checks passed, 0 failed"
