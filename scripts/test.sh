#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: install what is needed, build with tests, run
# every GoogleTest case (one process each) and every end-to-end test with ctest.
#
#   scripts/test.sh [ctest options...]              Release build in build/ (or $XPU_BUILD_DIR)
#   scripts/test.sh --sanitize [ctest options...]   AddressSanitizer + UndefinedBehaviorSanitizer
#                                                   build in build-asan/ (or $XPU_BUILD_DIR)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sanitize=0
if [[ ${1:-} == --sanitize ]]; then
    sanitize=1
    shift
fi

if [[ $sanitize -eq 0 ]]; then
    export XPU_BUILD_DIR="${XPU_BUILD_DIR:-$root/build}"
    "$root/scripts/build.sh" -DXPU_BUILD_TESTS=ON
else
    export XPU_BUILD_DIR="${XPU_BUILD_DIR:-$root/build-asan}"
    # ASan + UBSan with SystemC. SystemC runs each SC_THREAD on a QuickThreads coroutine (its
    # own stack, allocated with new[] and guarded by a PROT_NONE page, entered by a hand-written
    # context switch ASan is not told about; Debian's libsystemc has no pthreads variant and no
    # sanitizer fiber annotations). What works, and why:
    # - --param=asan-stack=0 (compile time): no redzones around stack variables. An exception
    #   thrown inside a coroutine (SC_REPORT_ERROR -> throw, e.g. a model rejecting an
    #   instruction) makes ASan's __asan_handle_no_return see a "stack" from the coroutine's
    #   top to the main stack's bottom; it refuses to unpoison it ("WARNING: ASan is ignoring
    #   requested __asan_handle_no_return ... False positive error reports may follow") and
    #   stale stack redzones then give false stack-buffer-overflow reports. Heap, global,
    #   use-after-free and UBSan checks stay on everywhere; stack overflows of the code that
    #   never runs SystemC (trace reader, text assembler, YAML loader) are covered by
    #   scripts/fuzz.sh, whose clang build keeps full stack instrumentation. The warning itself
    #   may still appear on stderr; the tests match lines, so it does no harm.
    # - detect_stack_use_after_return=0: fake stacks and coroutine switches do not mix.
    # - detect_leaks=0 for the suite: LeakSanitizer scans every live heap block for pointers,
    #   coroutine stacks included, and faults on their PROT_NONE guard page at exit ("Tracer
    #   caught signal 11 ... LeakSanitizer has encountered a fatal error"). The tests of code
    #   that never starts the SystemC kernel then run a second time with leak detection on.
    # - halt_on_error / abort_on_error, UBSan halt_on_error: any report fails the test (UBSan
    #   only prints and continues by default).
    # The Google Benchmark micro-benchmarks are not tests (and mean nothing under ASan): skipped.
    "$root/scripts/build.sh" -DXPU_BUILD_TESTS=ON -DXPU_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS="--param=asan-stack=0" -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=TRUE
    asan="detect_stack_use_after_return=0:halt_on_error=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    export ASAN_OPTIONS="detect_leaks=0:$asan"
    cd "$XPU_BUILD_DIR"
    ctest -j "$(nproc)" --output-on-failure --timeout 900 "$@"
    echo "test: leak check of the code that never starts SystemC (trace library, xpu_trace)" >&2
    export ASAN_OPTIONS="detect_leaks=1:$asan"
    ./tests/trace_tests --gtest_brief=1
    ctest -j "$(nproc)" --output-on-failure --timeout 900 -R '^(e2e\.trace_tool|fuzz_corpus\.trace_reader|fuzz_corpus\.trace_text)$'
    exit 0
fi
cd "$XPU_BUILD_DIR"
ctest -j "$(nproc)" --output-on-failure --timeout 900 "$@"
