#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: install what is needed, build with tests, run
# every GoogleTest case (one process each) and every end-to-end test with ctest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export XPU_BUILD_DIR="${XPU_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" -DXPU_BUILD_TESTS=ON
cd "$XPU_BUILD_DIR"
ctest -j "$(nproc)" --output-on-failure --timeout 900 "$@"
