#!/usr/bin/env bash
# End-to-end test of the xpu_trace tool on real files.
# usage: bash trace_tool.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
TOOL="$BUILD_DIR/traces/xpu_trace"
TINY="$SOURCE_DIR/traces/samples/tiny.xtr"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xpu_trace_e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

checks=0
fail() {
    echo "FAIL: $*" >&2
    echo "0 passed, 1 failed" >&2
    exit 1
}
pass() {
    checks=$((checks + 1))
    echo "ok $checks - $*"
}

[[ -x "$TOOL" ]] || fail "no executable at $TOOL"
[[ -f "$TINY" ]] || fail "no sample at $TINY"

# --help / --version / usage errors
"$TOOL" --help | grep -q "usage: xpu_trace" || fail "--help prints the usage"
"$TOOL" --version | grep -q "binary trace format 1.0" || fail "--version names the format"
pass "--help and --version"
set +e
"$TOOL" frobnicate >/dev/null 2>&1; rc_cmd=$?
"$TOOL" asm "$TINY" >/dev/null 2>&1; rc_noout=$?
"$TOOL" >/dev/null 2>&1; rc_none=$?
set -e
[[ $rc_cmd -eq 2 && $rc_noout -eq 2 && $rc_none -eq 2 ]] ||
    fail "usage errors exit 2 (unknown command $rc_cmd, asm without -o $rc_noout, no args $rc_none)"
pass "usage errors exit with status 2"

# asm + validate
"$TOOL" asm "$TINY" -o "$WORK/tiny.bin"
[[ -s "$WORK/tiny.bin" && ! -e "$WORK/tiny.bin.tmp" ]] || fail "asm wrote tiny.bin (and no temp file)"
pass "asm tiny.xtr -> tiny.bin"
out=$("$TOOL" validate "$WORK/tiny.bin")
[[ "$out" == "OK: 24 instructions in 2 streams" ]] || fail "validate says '$out'"
pass "validate: $out"

# info
"$TOOL" info "$WORK/tiny.bin" >"$WORK/info.txt"
expect_line() {
    grep -Eq "$1" "$WORK/info.txt" || { cat "$WORK/info.txt" >&2; fail "info output lacks /$1/"; }
}
expect_line '^format: 1\.0$'
expect_line '^streams: 2$'
expect_line '^instructions: 24$'
expect_line '^strings: 3$'
expect_line '^stream 0: chip 0 core 0: 17 instructions$'
expect_line '^stream 1: chip 0 core 1: 7 instructions$'
expect_line '^  dma +3$'
expect_line '^  matmul +1$'
expect_line '^  halt +2$'
expect_line '^  barrier +2$'
expect_line '^  hbm->vmem 65536$'
expect_line '^  vmem->hbm 32768$'
expect_line '^  remote 4096$'
expect_line '^vld bytes: 65536$'
expect_line '^vst bytes: 32768$'
pass "info: 2 streams, 24 instructions, per-opcode counts and bytes by direction"

# dis -> asm is byte-identical; dis to stdout and to a file agree
"$TOOL" dis "$WORK/tiny.bin" -o "$WORK/tiny.dis.xtr"
"$TOOL" dis "$WORK/tiny.bin" >"$WORK/tiny.stdout.xtr"
cmp "$WORK/tiny.dis.xtr" "$WORK/tiny.stdout.xtr" || fail "dis -o and dis to stdout differ"
head -n 1 "$WORK/tiny.dis.xtr" | grep -qx '.xtr 1.0' || fail "dis starts with '.xtr 1.0'"
"$TOOL" asm "$WORK/tiny.dis.xtr" -o "$WORK/tiny2.bin"
cmp "$WORK/tiny.bin" "$WORK/tiny2.bin" || fail "asm(dis(tiny.bin)) differs from tiny.bin"
pass "dis then asm again: byte-identical (cmp)"

# a truncated copy fails validate with exit 1 and names the file
size=$(stat -c %s "$WORK/tiny.bin")
head -c $((size - 7)) "$WORK/tiny.bin" >"$WORK/truncated.bin"
set +e
"$TOOL" validate "$WORK/truncated.bin" >"$WORK/trunc.out" 2>"$WORK/trunc.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "validate of a truncated file exits $rc, expected 1"
grep -q "$WORK/truncated.bin" "$WORK/trunc.err" || fail "message does not name the file: $(cat "$WORK/trunc.err")"
grep -q "truncated" "$WORK/trunc.err" || fail "message does not say truncated: $(cat "$WORK/trunc.err")"
pass "truncated copy: validate exits 1: $(head -n 1 "$WORK/trunc.err")"

# a flipped payload byte is caught by every reading command, with exit 1
cp "$WORK/tiny.bin" "$WORK/flipped.bin"
printf '\xff' | dd of="$WORK/flipped.bin" bs=1 seek=90 conv=notrunc status=none
for cmd in validate info dis; do
    set +e
    "$TOOL" $cmd "$WORK/flipped.bin" >/dev/null 2>"$WORK/flip.err"
    rc=$?
    set -e
    [[ $rc -eq 1 ]] || fail "$cmd of a corrupt block exits $rc, expected 1"
    grep -q "CRC mismatch" "$WORK/flip.err" || fail "$cmd: $(cat "$WORK/flip.err")"
done
pass "flipped payload byte: validate/info/dis exit 1 naming the CRC mismatch"

# bad text input: exit 1, file:line:col, no output file left behind
printf '.xtr 1.0\n.stream chip=0 core=0\nmatmul d=m0 s0=v99\n' >"$WORK/bad.xtr"
set +e
"$TOOL" asm "$WORK/bad.xtr" -o "$WORK/bad.bin" 2>"$WORK/bad.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "asm of bad text exits $rc, expected 1"
grep -q "bad.xtr:3:16: register number out of range" "$WORK/bad.err" || fail "asm error: $(cat "$WORK/bad.err")"
[[ ! -e "$WORK/bad.bin" && ! -e "$WORK/bad.bin.tmp" ]] || fail "asm left an output file after an error"
pass "bad text: asm exits 1 with file:line:col and leaves no output"

# missing input and garbage input never crash
set +e
"$TOOL" info "$WORK/missing.bin" 2>/dev/null; rc_missing=$?
head -c 1000 /dev/urandom >"$WORK/garbage.bin"
"$TOOL" validate "$WORK/garbage.bin" 2>/dev/null; rc_garbage=$?
set -e
[[ $rc_missing -eq 1 && $rc_garbage -eq 1 ]] || fail "missing ($rc_missing) / garbage ($rc_garbage) input should exit 1"
pass "missing and garbage input exit 1"

echo "$checks passed, 0 failed"
