#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, -fsanitize=fuzzer,address,undefined) and runs one of
# them, or each in turn, for SECONDS.
#
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
#   scripts/fuzz.sh all SECONDS                  # every target, SECONDS each
#   TARGET: trace_reader (binary trace reader + validate + text round trip),
#           trace_text (the .xtr assembler + round trip), yaml_loader (platform descriptions),
#           platform_run (a description + a tiny trace: builder, check, 10 us run, in a forked
#           child per input), txlog_reader (a run's transaction log and trace copy: load_run)
#
# Sanitizers: ASan and UBSan (the default); XPU_FUZZ_SANITIZERS=undefined builds with UBSan alone,
# into build-fuzz-ubsan/: several times the executions per second, for long campaigns on a small
# machine (no ASan: an out-of-bounds access that does not crash, or a leak, goes unseen).
# Build folder: build-fuzz/ or build-fuzz-ubsan/ (or $XPU_FUZZ_BUILD_DIR). Seeds:
# tests/fuzz/corpus/TARGET/ (read only); what the fuzzer learns goes to BUILD/corpus/TARGET/, crash inputs to
# BUILD/artifacts/TARGET/. A crash, leak, timeout or sanitizer report ends the run with exit 1
# (and the input that caused it named). To keep a fixed crash as a regression test, copy its
# input into tests/fuzz/corpus/TARGET/ (ctest replays the corpora: fuzz_corpus.TARGET).
# Prints "fuzz: TARGET: N executions in S s, no crash" on success.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
targets=(trace_reader trace_text yaml_loader platform_run txlog_reader)

usage() {
    echo "usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer options...]  (TARGET: ${targets[*]})" >&2
    exit 2
}
[[ $# -ge 2 ]] || usage
target=$1
seconds=$2
shift 2
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || usage
if [[ $target == all ]]; then
    run=("${targets[@]}")
else
    [[ " ${targets[*]} " == *" $target "* ]] || usage
    run=("$target")
fi

"$root/scripts/setup.sh" --with-fuzz
sanitizers="${XPU_FUZZ_SANITIZERS:-address,undefined}"
case "$sanitizers" in
    address,undefined) default_build="$root/build-fuzz" ;;
    undefined) default_build="$root/build-fuzz-ubsan" ;;
    *) echo "fuzz: XPU_FUZZ_SANITIZERS must be address,undefined or undefined, not '$sanitizers'" >&2; exit 2 ;;
esac
build="${XPU_FUZZ_BUILD_DIR:-$default_build}"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
    -DXPU_FUZZ=ON -DXPU_FUZZ_SANITIZERS="$sanitizers" -DXPU_BUILD_TESTS=OFF >"$build/cmake.log" 2>&1 || { cat "$build/cmake.log" >&2; exit 1; }
echo "fuzz: building ${run[*]} in $build (log: $build/build.log)" >&2
if ! cmake --build "$build" -j "$(nproc)" --target "${run[@]/#/fuzz_}" >"$build/build.log" 2>&1; then
    grep -E -A5 "error" "$build/build.log" | head -60 >&2 || tail -40 "$build/build.log" >&2
    echo "fuzz: build FAILED (full log: $build/build.log)" >&2
    exit 1
fi

# Only platform_run starts the SystemC kernel, in forked children: ASan's stack-use-after-return
# detection must be off for its coroutines (as in scripts/test.sh); leaks are errors.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
if command -v llvm-symbolizer-14 >/dev/null; then export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer-14)"; fi

status=0
for t in "${run[@]}"; do
    seeds="$root/tests/fuzz/corpus/$t"
    work="$build/corpus/$t"
    artifacts="$build/artifacts/$t/"
    mkdir -p "$work" "$artifacts"
    opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
          -print_final_stats=1 -artifact_prefix="$artifacts")
    # A dictionary per target; platform_run's input is a description and a trace, so it gets the
    # words of both (libFuzzer takes one -dict: the three files joined in the build folder).
    dicts=("$root/tests/fuzz/$t.dict")
    [[ $t == platform_run ]] && dicts=("$root"/tests/fuzz/{yaml_loader,trace_text,platform_run}.dict)
    if [[ -f ${dicts[0]} ]]; then
        cat "${dicts[@]}" >"$build/$t.dict"
        opts+=(-dict="$build/$t.dict")
    fi
    log="$build/fuzz-$t.log"
    echo "fuzz: $t for ${seconds}s (log: $log)" >&2
    set +e
    "$build/tests/fuzz/fuzz_$t" "${opts[@]}" "$@" "$work" "$seeds" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/\1/p' "$log" | tail -n 1)
    secs=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\)/\1/p' "$log" | tail -n 1)
    # The time it ran: libFuzzer's "Done N runs in S second(s)" when -runs ended it first.
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    if [[ $rc -ne 0 ]]; then
        grep -E -A30 "ERROR|runtime error|invariant broken|uncaught|deadly signal|Test unit written" "$log" | head -80 >&2 || tail -40 "$log" >&2
        echo "fuzz: $t: FAILED (exit $rc) after ${execs:-?} executions; input: $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)" >&2
        status=1
    else
        echo "fuzz: $t: ${execs:-?} executions in ${took:-$seconds} s (${secs:-?}/s), no crash; corpus $(ls "$work" | wc -l) inputs"
    fi
done
exit $status
