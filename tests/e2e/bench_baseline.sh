#!/usr/bin/env bash
# scripts/bench.sh --baseline-build: the production-scale target table against a baseline build
# (here the build compared with itself, on --small workloads: this checks that every target of
# issue 14's item 4 is measured and printed with both sides and a ratio, not the speed, which is
# bench.sh's business). Also: a baseline revision that does not exist is a usage error naming it.
#   bench_baseline.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
e2e_workdir bench_baseline

export XPU_SKIP_BUILD=1 XPU_BUILD_DIR="$build" BENCH_RUNS=1 BENCH_DIR="$WORK/scratch"
"$src/scripts/bench.sh" --baseline-build "$build" --small >"$WORK/table.txt" 2>"$WORK/err.txt" ||
    fail "bench.sh --baseline-build failed: $(tail -5 "$WORK/err.txt")"
cat "$WORK/table.txt"
for target in "decode --no-txlog (sim instr/s)" "decode log + analysis, --no-verify (wall)" \
    "decode: log+analysis wall / --no-txlog wall" "decode instr/s / GEMM instr/s" "GEMM --no-txlog (sim instr/s)" \
    "decode output folder" "decode txlog.bin per instruction" "decode run peak RSS per instruction" \
    "16-chip platform built" "16-chip ring start-up" "64-chip ring start-up"; do
    line=$(grep -F -- "$target" "$WORK/table.txt") || fail "no line for '$target'"
    # Both sides measured (no '-' in the value columns) and a ratio x1.23.
    [[ $line =~ x[0-9]+\.[0-9][0-9] ]] || fail "'$target' has no ratio: $line"
done
pass "every target printed with both sides and a ratio"
grep -q "^WARNING" "$WORK/table.txt" && fail "a build compared with itself reports different simulated times"
pass "the same build simulates the same times"
grep -q "round 1 of 1, build: decode --no-txlog" "$WORK/err.txt" && grep -q "round 1 of 1, ours: decode --no-txlog" "$WORK/err.txt" ||
    fail "progress lines missing"
pass "progress on stderr, both sides"

set +e
"$src/scripts/bench.sh" --baseline no-such-revision-xyz >"$WORK/out.txt" 2>"$WORK/err2.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "--baseline with an unknown revision: exit $rc, expected 2"
grep -q "no-such-revision-xyz: not a revision" "$WORK/err2.txt" || fail "unclear message: $(cat "$WORK/err2.txt")"
pass "an unknown baseline revision: exit 2, named"
