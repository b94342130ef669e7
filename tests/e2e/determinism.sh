#!/usr/bin/env bash
# End-to-end: the same inputs give byte-identical outputs. Each case runs sim_main twice with
# --deterministic (host figures written as 0) into two folders and compares the SHA-256 of
# every output file (and the file lists, and the stdout summaries). Cases: a GEMM on the
# default platform, a multi-chip all-gather on a ring, a two-core trace, and a deadlock (an
# incomplete run's outputs are deterministic too). A run without --deterministic differs
# from a deterministic one in the host figures only.
# usage: bash determinism.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
SIM="$BUILD_DIR/platform/sim_main"
TOOL="$BUILD_DIR/traces/xpu_trace"
TRACEGEN="$BUILD_DIR/traces/xpu_tracegen"
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/determinism_e2e.XXXXXX")
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
for exe in "$SIM" "$TOOL" "$TRACEGEN"; do
    [[ -x "$exe" ]] || fail "no executable at $exe"
done

"$TRACEGEN" gemm --m 512 --n 512 --k 512 -o "$WORK/gemm.bin" >/dev/null
"$TOOL" asm "$SOURCE_DIR/tests/data/bad/deadlock-cycle.xtr" -o "$WORK/deadlock.bin"
printf '.xtr 1.0\n.stream chip=0 core=0\ndma src=hbm:0x0 dst=vmem:0x0 bytes=65536 flag=1\nswait flag=1 cond=ge val=1\nvld d=v1 src=vmem:0x0 bytes=4096\nmpush s0=v1 shape=16x16x16\nmatmul d=m0 s0=v1 shape=64x16x16 dtype=bf16\nbarrier\nhalt\n.stream chip=0 core=1\ndma src=hbm:0x100000 dst=vmem:0x0 bytes=65536 flag=2\nswait flag=2 cond=ge val=1\nvalu d=v1 s0=v2 count=4096\nbarrier\nhalt\n' >"$WORK/two.xtr"
"$TOOL" asm "$WORK/two.xtr" -o "$WORK/two.bin"

# run_twice NAME EXPECTED-EXIT PLATFORM TRACE [ARGS...]: two --deterministic runs, compared.
run_twice() {
    local name=$1 want=$2 platform=$3 trace=$4
    shift 4
    local i rc
    # Both runs write into the same folder (outputs may name their own paths, e.g. the
    # GTKWave save file), which is then moved aside.
    for i in 1 2; do
        rm -rf "$WORK/out"
        set +e
        "$SIM" --platform "$platform" --trace "$trace" --out "$WORK/out" --deterministic "$@" \
            >"$WORK/$name-$i.stdout" 2>"$WORK/$name-$i.stderr"
        rc=$?
        set -e
        [[ $rc -eq $want ]] || { cat "$WORK/$name-$i.stderr" >&2; fail "$name run $i: exit $rc, expected $want"; }
        mv "$WORK/out" "$WORK/$name-$i"
    done
    local files1 files2
    files1=$(cd "$WORK/$name-1" && find . -type f | sort)
    files2=$(cd "$WORK/$name-2" && find . -type f | sort)
    [[ -n $files1 ]] || fail "$name: no output files"
    [[ $files1 == "$files2" ]] || fail "$name: the two runs wrote different files: [$files1] vs [$files2]"
    local f h1 h2
    for f in $files1; do
        h1=$(sha256sum <"$WORK/$name-1/$f" | cut -d' ' -f1)
        h2=$(sha256sum <"$WORK/$name-2/$f" | cut -d' ' -f1)
        [[ $h1 == "$h2" ]] || { diff "$WORK/$name-1/$f" "$WORK/$name-2/$f" | head -20 >&2; fail "$name: $f differs ($h1 vs $h2)"; }
    done
    cmp -s "$WORK/$name-1.stdout" "$WORK/$name-2.stdout" || {
        diff "$WORK/$name-1.stdout" "$WORK/$name-2.stdout" | head >&2
        fail "$name: the summaries differ"
    }
    # Host figures are 0, and say so.
    "$PY" - "$WORK/$name-1/stats.json" <<'EOF' || fail "$name: host figures of a --deterministic run"
import json, sys
s = json.load(open(sys.argv[1]))
for k in ("build_seconds", "wall_seconds", "instructions_per_second", "peak_rss_bytes"):
    if s.get(k) != 0:
        sys.exit("stats.json %s = %r, expected 0 with --deterministic" % (k, s.get(k)))
if s.get("deterministic") is not True:
    sys.exit("stats.json deterministic = %r" % s.get("deterministic"))
EOF
    grep -q '^host       not measured (--deterministic)$' "$WORK/$name-1.stdout" || fail "$name: the summary does not say the host figures were not measured"
    pass "$name: two runs, $(wc -w <<<"$files1") output file(s), identical SHA-256 ($(sha256sum <"$WORK/$name-1/stats.json" | cut -c1-16)...)"
}

run_twice gemm 0 "$SOURCE_DIR/configs/xpu.yaml" "$WORK/gemm.bin" --vcd "$WORK/out/waves.vcd"
run_twice allgather 0 "$SOURCE_DIR/configs/xpu-ring4.yaml" "$SOURCE_DIR/traces/samples/allgather-4.bin" --vcd "$WORK/out/waves.vcd"
run_twice two-core 0 "$SOURCE_DIR/tests/data/bad/two-core.yaml" "$WORK/two.bin"
run_twice deadlock 5 "$SOURCE_DIR/tests/data/bad/two-core.yaml" "$WORK/deadlock.bin"
run_twice time-limit 7 "$SOURCE_DIR/configs/xpu.yaml" "$WORK/gemm.bin" --max-sim-time 1us

# Without --deterministic the host figures are measured; nothing else changes.
"$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$WORK/gemm.bin" --out "$WORK/measured" >/dev/null
"$PY" - "$WORK/measured/stats.json" "$WORK/gemm-1/stats.json" <<'EOF' || fail "measured vs deterministic stats.json"
import json, sys
m, d = (json.load(open(p)) for p in sys.argv[1:3])
if not (m["build_seconds"] > 0 and m["wall_seconds"] > 0 and m["instructions_per_second"] > 0 and m["peak_rss_bytes"] > 0):
    sys.exit("a measured run reports host figures %r %r %r %r" % (m["build_seconds"], m["wall_seconds"], m["instructions_per_second"], m["peak_rss_bytes"]))
if m.get("deterministic") is not False:
    sys.exit("measured run: deterministic = %r" % m.get("deterministic"))
for s in (m, d):
    # command_line: the two runs differ by --deterministic and --out, which it records.
    for k in ("build_seconds", "wall_seconds", "instructions_per_second", "peak_rss_bytes", "deterministic", "command_line"):
        del s[k]
if m != d:
    sys.exit("measured and deterministic runs differ beyond the host figures: " +
             ", ".join(k for k in sorted(set(m) | set(d)) if m.get(k) != d.get(k)))
EOF
pass "without --deterministic: host figures measured (> 0); every other value identical"

echo "$checks passed, 0 failed"
