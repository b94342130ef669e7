#!/usr/bin/env bash
# End-to-end: `xpu_tracegen ... --platform FILE` tiles for the platform, and sim_main warns (a
# "warning" line of its summary) when a trace leaves whole units of the platform unused.
#  - The minimal platform reader of traces/gen/target.cpp (traces/ may not use platform/) reads
#    every shipped description to the same target as that description's `sim_main --dump-config`
#    (every default filled in by the models' own declarations): its defaults cannot drift; and the
#    trace generated for a description runs on it (core 0's units as chip.bindings binds them:
#    configs/xpu-2chip-2core.yaml has two cores of 4 MXUs and 2 DMA engines each).
#  - configs/xpu-2vpu.yaml (two vector units, 256x256 MXUs): the default GEMM trace leaves vpu1
#    idle and sim_main says so; generated with --platform it uses both, no warning, and is faster.
#  - One chip's trace on a 16-chip ring: the warning names the first 6 idle units and counts the
#    rest (it listed all of them: ~55 KB on one line for 256 chips).
set -euo pipefail
BUILD_DIR=$1
SOURCE_DIR=$2
GEN="$BUILD_DIR/traces/xpu_tracegen"
SIM="$BUILD_DIR/platform/sim_main"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for cfg in "$SOURCE_DIR"/configs/*.yaml; do
    "$SIM" --platform "$cfg" --dump-config >"$WORK/dump.yaml"
    a=$("$GEN" gemm --m 8 --n 8 --k 8 --platform "$cfg" -o "$WORK/a.bin" | grep '^target' | sed 's/^target [^:]*: //')
    b=$("$GEN" gemm --m 8 --n 8 --k 8 --platform "$WORK/dump.yaml" -o "$WORK/b.bin" | grep '^target' | sed 's/^target [^:]*: //')
    [[ -n "$a" && "$a" == "$b" ]] || fail "$(basename "$cfg"): '$a' but its --dump-config gives '$b'"
    cmp -s "$WORK/a.bin" "$WORK/b.bin" || fail "$(basename "$cfg"): traces differ from its --dump-config's"
    # ... and the trace runs there: it names only units core 0 is bound to.
    "$SIM" --quiet --platform "$cfg" --trace "$WORK/a.bin" --out "$WORK/run" --no-txlog 2>"$WORK/run.err" \
        || { cat "$WORK/run.err"; fail "$(basename "$cfg"): the trace generated for it does not run on it"; }
    echo "ok: $(basename "$cfg"): $a"
done
# A chip of two cores: core 0's own units (chip.bindings), not the chip's (8 MXUs, 4 engines).
a=$("$GEN" gemm --m 8 --n 8 --k 8 --platform "$SOURCE_DIR/configs/xpu-2chip-2core.yaml" -o "$WORK/a.bin" | grep '^target')
[[ $a == *"4 matrix units 128x128 (4 used), 1 vector unit(s), 2 DMA engines, VMEM 16777216 bytes"* ]] \
    || fail "xpu-2chip-2core.yaml: core 0 has 4 MXUs, 1 vector unit, 2 DMA engines, 16 MiB of VMEM; the target says: $a"
echo "ok: two cores: $a"

cfg="$SOURCE_DIR/configs/xpu-2vpu.yaml"
"$GEN" gemm --m 2048 --n 2048 --k 2048 -o "$WORK/plain.bin" >/dev/null
"$SIM" --platform "$cfg" --trace "$WORK/plain.bin" --out "$WORK/plain" --no-txlog >"$WORK/plain.txt" 2>"$WORK/plain.err"
grep -q "warning    the trace used 1 of the platform's 2 vector units; never used: xpu.chip0.core0.vpu1" "$WORK/plain.txt" \
    || { cat "$WORK/plain.txt"; fail "no warning for the idle vpu1"; }
echo "ok: $(grep '^warning' "$WORK/plain.txt")"
"$GEN" gemm --m 2048 --n 2048 --k 2048 --platform "$cfg" -o "$WORK/tgt.bin" >/dev/null
"$SIM" --platform "$cfg" --trace "$WORK/tgt.bin" --out "$WORK/tgt" --no-txlog >"$WORK/tgt.txt" 2>"$WORK/tgt.err"
! grep -q "^warning" "$WORK/tgt.txt" || { cat "$WORK/tgt.txt"; fail "--platform trace: sim_main still warns"; }
[[ ! -s "$WORK/tgt.err" ]] || { cat "$WORK/tgt.err"; fail "--platform trace: stderr not empty"; }
python3 - "$WORK/plain/stats.json" "$WORK/tgt/stats.json" <<'PY'
import json, sys
p, t = (json.load(open(f)) for f in sys.argv[1:3])
assert p["compute"]["flops"] == t["compute"]["flops"] == 2 * 2048 ** 3, "same useful FLOPs whatever the tiling"
for u in ("xpu.chip0.core0.vpu0", "xpu.chip0.core0.vpu1"):
    assert t["units"][u]["busy_ns"] > 0, u + " idle in the --platform trace"
assert t["simulated_time_ns"] < 0.8 * p["simulated_time_ns"], "not faster: %s vs %s ns" % (t["simulated_time_ns"], p["simulated_time_ns"])
print("ok: 2048^3 GEMM on xpu-2vpu.yaml: %.1f us tiled for 128x128 and one vector unit, %.1f us with --platform (256x256, both vector units)"
      % (p["simulated_time_ns"] / 1e3, t["simulated_time_ns"] / 1e3))
PY
set +e; "$GEN" gemm --m 8 --n 8 --k 8 --platform "$SOURCE_DIR/README.md" -o "$WORK/x.bin" 2>"$WORK/err"; rc=$?; set -e
[[ $rc -eq 2 && ! -e "$WORK/x.bin" ]] && grep -q "README.md" "$WORK/err" || fail "bad --platform: exit $rc: $(cat "$WORK/err")"
echo "ok: bad --platform -> exit 2: $(cat "$WORK/err")"

"$SIM" --platform "$SOURCE_DIR/configs/xpu-ring4.yaml" --set chips=16 --set 'topology.dims=[16]' \
    --trace "$SOURCE_DIR/traces/samples/gemm-1k.bin" --out "$WORK/ring" --no-txlog >"$WORK/ring.txt" 2>"$WORK/ring.err"
line=$(grep "matrix units; never used" "$WORK/ring.txt") || { cat "$WORK/ring.txt"; fail "16-chip ring: no warning"; }
[[ $line == *"of the platform's 128 matrix units; never used: xpu.chip1.core0.mxu0, "*" and 114 more ("* ]] \
    || fail "16-chip ring: the warning does not name 6 and count 114 more: $line"
(( ${#line} < 400 )) || fail "16-chip ring: a warning of ${#line} characters"
echo "ok: ${line:0:120}..."
