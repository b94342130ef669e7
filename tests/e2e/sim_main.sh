#!/usr/bin/env bash
# End-to-end test of sim_main on real files: a generated GEMM trace on configs/xpu.yaml,
# stats.json contents and determinism, exit codes and messages of bad inputs, --dump-config
# round trip, --help/--version/--list-types, and the configs/xpu-2vpu.yaml variant.
# usage: bash sim_main.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
SIM="$BUILD_DIR/platform/sim_main"
TRACE_TOOL="$BUILD_DIR/traces/xpu_trace"
TRACEGEN="$BUILD_DIR/traces/xpu_tracegen"
PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
PLATFORM_2VPU="$SOURCE_DIR/configs/xpu-2vpu.yaml"
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sim_main_e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

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

for exe in "$SIM" "$TRACE_TOOL" "$TRACEGEN"; do
    [[ -x "$exe" ]] || fail "no executable at $exe"
done
[[ -x "$PY" ]] || fail "no $PY"
[[ -f "$PLATFORM" && -f "$PLATFORM_2VPU" ]] || fail "no $PLATFORM or $PLATFORM_2VPU"

# run_rc VAR CMD...: runs CMD with stdout/stderr to $WORK/out.txt / $WORK/err.txt, its exit
# status in VAR (set -e would stop at the first failing run).
run_rc() {
    local __var=$1
    shift
    set +e
    "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
    local __rc=$?
    set -e
    printf -v "$__var" '%d' "$__rc"
}
show() { echo "--- stdout:"; cat "$WORK/out.txt"; echo "--- stderr:"; cat "$WORK/err.txt"; } >&2

# ---- a GEMM on the default platform ------------------------------------------------------------
"$TRACEGEN" gemm --m 512 --n 512 --k 512 -o "$WORK/gemm.bin" >/dev/null
[[ -s "$WORK/gemm.bin" ]] || fail "xpu_tracegen wrote no gemm.bin"
expected_instr=$("$TRACE_TOOL" info "$WORK/gemm.bin" | sed -n 's/^instructions: \([0-9][0-9]*\)$/\1/p')
[[ -n "$expected_instr" && "$expected_instr" -gt 0 ]] || fail "xpu_trace info reports no instruction count"
pass "xpu_tracegen gemm 512x512x512: $expected_instr instructions (xpu_trace info)"

OUT="$WORK/out1"
run_rc rc "$SIM" --platform "$PLATFORM" --trace "$WORK/gemm.bin" --out "$OUT"
[[ $rc -eq 0 ]] || { show; fail "sim_main on the GEMM exits $rc, expected 0"; }
grep -q '^simulated  ' "$WORK/out.txt" || { show; fail "no summary (simulated ...) on stdout"; }
grep -q "^retired    $expected_instr instructions$" "$WORK/out.txt" || { show; fail "summary does not say 'retired $expected_instr instructions'"; }
grep -q "^stats      $OUT/stats.json$" "$WORK/out.txt" || { show; fail "summary does not name $OUT/stats.json"; }
pass "sim_main --platform xpu.yaml --trace gemm.bin: exit 0, summary printed"

[[ -f "$OUT/stats.json" ]] || fail "no $OUT/stats.json"
leftover=$(find "$OUT" -name '*.tmp')
[[ -z "$leftover" ]] || fail "temporary files left in $OUT: $leftover"
pass "stats.json written, no *.tmp left"

"$PY" - "$OUT/stats.json" "$expected_instr" <<'EOF' || fail "stats.json contents (see above)"
import json, sys
path, expected = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    s = json.load(f)
def check(cond, what):
    if not cond:
        print("stats.json: " + what, file=sys.stderr)
        sys.exit(1)
num = (int, float)
check(isinstance(s.get("simulated_time_ns"), num) and s["simulated_time_ns"] > 0, "simulated_time_ns > 0")
check(s.get("instructions_retired") == expected,
      "instructions_retired %r, xpu_trace info says %d" % (s.get("instructions_retired"), expected))
check(s.get("completed") is True, "completed is true")
check(isinstance(s.get("wall_seconds"), num) and s["wall_seconds"] >= 0, "wall_seconds is a number >= 0")
check(isinstance(s.get("build_seconds"), num) and s["build_seconds"] > 0, "build_seconds is a number > 0")
check(isinstance(s.get("instructions_per_second"), num) and s["instructions_per_second"] >= 0,
      "instructions_per_second is a number >= 0")
units = s.get("units")
check(isinstance(units, dict) and units, "units is a non-empty object")
for name, u in units.items():
    check(isinstance(u.get("busy_ns"), num) and u["busy_ns"] >= 0, name + ": busy_ns")
    check(isinstance(u.get("utilization"), num) and 0 <= u["utilization"] <= 1,
          "%s: utilization %r not in [0, 1]" % (name, u.get("utilization")))
for m in ("mxu0", "mxu1", "mxu2", "mxu3"):
    check(units.get("xpu.chip0.core0." + m, {}).get("busy_ns", 0) > 0, m + " was busy")
h = s.get("hbm")
check(isinstance(h, dict), "hbm is an object")
for k in ("bytes_read", "bytes_written", "peak_gbps", "achieved_gbps"):
    check(isinstance(h.get(k), num), "hbm." + k + " is a number")
check(h["bytes_read"] == 512 * 512 * 2 * 2, "hbm.bytes_read %r: A and B in bf16 = 1 MiB" % h["bytes_read"])
check(h["bytes_written"] == 512 * 512 * 2, "hbm.bytes_written %r: C in bf16 = 512 KiB" % h["bytes_written"])
check(h["peak_gbps"] > 0 and h["achieved_gbps"] <= h["peak_gbps"],
      "achieved_gbps %r <= peak_gbps %r" % (h["achieved_gbps"], h["peak_gbps"]))
EOF
pass "stats.json: simulated_time_ns > 0, instructions_retired = $expected_instr, units with utilization in [0,1], hbm achieved <= peak"

# ---- determinism -------------------------------------------------------------------------------
OUT2="$WORK/out2"
run_rc rc "$SIM" --platform "$PLATFORM" --trace "$WORK/gemm.bin" --out "$OUT2" --quiet
[[ $rc -eq 0 ]] || { show; fail "second run exits $rc"; }
[[ ! -s "$WORK/out.txt" ]] || { show; fail "--quiet printed something on stdout"; }
# Host-side figures (wall time, speed, memory) may differ; everything simulated may not.
"$PY" - "$OUT/stats.json" "$OUT2/stats.json" <<'EOF' || fail "two runs of the same inputs differ (see above)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for s in (a, b):
    # The host figures, and the command line (the two runs name different --out folders).
    for k in ("build_seconds", "wall_seconds", "instructions_per_second", "peak_rss_bytes", "command_line"):
        s.pop(k, None)
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print("differs: %s: %r vs %r" % (k, a.get(k), b.get(k)), file=sys.stderr)
    sys.exit(1)
EOF
pass "same inputs twice: stats.json identical apart from host figures (build_seconds, wall_seconds, instructions_per_second, peak_rss_bytes)"

# ---- bad inputs: exit codes, messages, no stats.json left behind ---------------------------------
# expect_failure RC WHAT STDERR-PATTERN STALE -- ARGS...: runs sim_main ARGS --out $OUT, checks the
# exit status, the message, and that the failed run wrote nothing into $OUT. STALE=stale puts
# the good run's stats.json there first: a failed run leaves the previous run's outputs as they
# were (its own go to a staging folder that it removes; docs/outputs.md).
expect_failure() {
    local want=$1 what=$2 pattern=$3 stale=$4
    shift 5
    if [[ $stale == stale ]]; then cp "$OUT2/stats.json" "$OUT/stats.json"; else rm -f "$OUT/stats.json"; fi
    run_rc rc "$SIM" "$@" --out "$OUT"
    [[ $rc -eq $want ]] || { show; fail "$what: exit $rc, expected $want"; }
    grep -Eq -- "$pattern" "$WORK/err.txt" || { show; fail "$what: stderr lacks /$pattern/"; }
    if [[ $stale == stale ]]; then
        cmp -s "$OUT/stats.json" "$OUT2/stats.json" || fail "$what: the previous run's $OUT/stats.json was changed or removed by the failed run"
    else
        [[ ! -e "$OUT/stats.json" ]] || fail "$what: $OUT/stats.json exists after the failed run"
    fi
    [[ -z "$(find "$OUT" -name '*.tmp')" ]] || fail "$what: *.tmp left in $OUT"
    [[ -z "$(find "$(dirname "$OUT")" -maxdepth 1 -name ".$(basename "$OUT").staging-*")" ]] || fail "$what: a staging folder was left beside $OUT"
    pass "$what: exit $want, the previous outputs untouched: $(head -n 1 "$WORK/err.txt")"
}

expect_failure 3 "--set rows=abc" \
    "^sim_main: --set 'chip\.modules\.core0\.mxu0\.rows=abc': chip\.modules\.core0\.mxu0\.rows: expected a non-negative integer, got 'abc'$" \
    stale -- --platform "$PLATFORM" --trace "$WORK/gemm.bin" --set chip.modules.core0.mxu0.rows=abc
[[ ! -s "$WORK/out.txt" ]] || { show; fail "--set error printed a summary"; }

sed 's/^      mxu0: {type: MatrixUnit, rows: 128,/      mxu0: {type: MatrixUnit, rowz: 128,/' "$PLATFORM" >"$WORK/bad.yaml"
line=$(grep -n 'rowz' "$WORK/bad.yaml" | cut -d: -f1)
[[ -n "$line" ]] || fail "could not make bad.yaml"
col=$(sed -n "${line}p" "$WORK/bad.yaml" | awk '{print index($0, "rowz")}')
expect_failure 3 "unknown key in the platform file" \
    "^sim_main: $WORK/bad\.yaml:$line:$col: chip\.modules\.core0\.mxu0\.rowz: unknown key" \
    stale -- --platform "$WORK/bad.yaml" --trace "$WORK/gemm.bin"

expect_failure 4 "--trace /nonexistent.bin" "^sim_main: /nonexistent\.bin" \
    stale -- --platform "$PLATFORM" --trace /nonexistent.bin

size=$(stat -c %s "$WORK/gemm.bin")
head -c $((size / 2)) "$WORK/gemm.bin" >"$WORK/truncated.bin"
expect_failure 4 "truncated trace" "^sim_main: $WORK/truncated\.bin" \
    stale -- --platform "$PLATFORM" --trace "$WORK/truncated.bin"

expect_failure 2 "missing --platform" "--platform" stale -- --trace "$WORK/gemm.bin"
expect_failure 2 "missing --trace" "--trace" stale -- --platform "$PLATFORM"
expect_failure 2 "unknown option" "frobnicate" none -- --frobnicate --platform "$PLATFORM"

# ---- --dump-config -----------------------------------------------------------------------------
run_rc rc "$SIM" --platform "$PLATFORM" --dump-config
[[ $rc -eq 0 ]] || { show; fail "--dump-config exits $rc"; }
cp "$WORK/out.txt" "$WORK/dumped.yaml"
head -n 1 "$WORK/dumped.yaml" | grep -qx "# effective configuration of $PLATFORM" || fail "--dump-config first line: $(head -n 1 "$WORK/dumped.yaml")"
grep -q 'queue_depth' "$WORK/dumped.yaml" || fail "--dump-config does not fill in defaults (no queue_depth)"
run_rc rc "$SIM" --platform "$WORK/dumped.yaml" --dump-config
[[ $rc -eq 0 ]] || { show; fail "the dumped config does not load back: exit $rc"; }
head -n 1 "$WORK/out.txt" | grep -qx "# effective configuration of $WORK/dumped.yaml" || fail "second dump's first line: $(head -n 1 "$WORK/out.txt")"
cmp <(tail -n +2 "$WORK/dumped.yaml") <(tail -n +2 "$WORK/out.txt") || fail "dump of the dump differs from the dump"
pass "--dump-config loads back and dumps the same (apart from the first comment line)"

run_rc rc "$SIM" --platform "$PLATFORM" --set chip.modules.core0.mxu0.rows=256 --dump-config
[[ $rc -eq 0 ]] || { show; fail "--set rows=256 --dump-config exits $rc"; }
grep -Eq '^ +rows: 256$' "$WORK/out.txt" || { show; fail "--set rows=256 is not in the dump"; }
pass "--set rows=256 shows in --dump-config"

# ---- --help / --version / --list-types ------------------------------------------------------------
run_rc rc "$SIM" --help
[[ $rc -eq 0 ]] && grep -q -- '--platform' "$WORK/out.txt" || { show; fail "--help: exit $rc or no --platform"; }
run_rc rc "$SIM" --version
[[ $rc -eq 0 ]] && grep -q '^xpusim sim_main ' "$WORK/out.txt" || { show; fail "--version: exit $rc"; }
pass "--help (mentions --platform) and --version exit 0"
run_rc rc "$SIM" --list-types
[[ $rc -eq 0 ]] || { show; fail "--list-types exits $rc"; }
awk '/^MatrixUnit: /{m=1; next} /^[^ ]/{m=0} m && /^  rows \(integer/{found=1} END{exit !found}' "$WORK/out.txt" ||
    { show; fail "--list-types does not list MatrixUnit with its rows parameter"; }
pass "--list-types lists MatrixUnit with rows"
awk '/^sim: /{m=1; next} /^[^ ]/{m=0} m && /^  quantum_ns \(number/{found=1} END{exit !found}' "$WORK/out.txt" ||
    { show; fail "--list-types does not list the description's own keys (sim.quantum_ns)"; }
run_rc rc "$SIM" --list-types --markdown
[[ $rc -eq 0 ]] && grep -q '^| `rows` | integer | 1\.\.4096 | rows | 128 |' "$WORK/out.txt" ||
    { show; fail "--list-types --markdown: exit $rc or no table row for MatrixUnit.rows"; }
pass "--list-types lists the description's own keys too; --markdown writes them as tables"

# ---- the two-vector-unit variant -----------------------------------------------------------------
OUT3="$WORK/out3"
run_rc rc "$SIM" --platform "$PLATFORM_2VPU" --trace "$WORK/gemm.bin" --out "$OUT3"
[[ $rc -eq 0 ]] || { show; fail "xpu-2vpu.yaml: exit $rc"; }
grep -q 'xpu.chip0.core0.vpu1 ' "$WORK/out.txt" || { show; fail "xpu-2vpu.yaml: no vpu1 in the summary"; }
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["completed"] and s["instructions_retired"]==int(sys.argv[2]) else 1)' \
    "$OUT3/stats.json" "$expected_instr" || fail "xpu-2vpu.yaml: stats.json not complete or wrong instruction count"
pass "xpu-2vpu.yaml runs the GEMM: exit 0, vpu1 in the summary"

echo "$checks passed, 0 failed"
