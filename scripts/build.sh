#!/usr/bin/env bash
# Configures and builds xpusim (Release) into build/ (or $XPU_BUILD_DIR).
# Usage: scripts/build.sh [extra cmake -D options...]
#   XPU_SKIP_BUILD=1  use the binaries already in $XPU_BUILD_DIR: neither set up nor build
#                     (tests/docs/readme.sh runs the README's scripts this way, inside the suite)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${XPU_BUILD_DIR:-$root/build}"
if [[ ${XPU_SKIP_BUILD:-0} == 1 ]]; then
    [[ -x "$build/platform/sim_main" ]] || { echo "build: XPU_SKIP_BUILD=1 but $build has no built sim_main" >&2; exit 1; }
    exit 0
fi
"$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "build: compiling into $build (log: $build/build.log)" >&2
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
    grep -E -A5 "error" "$build/build.log" | head -80 >&2 || tail -50 "$build/build.log" >&2
    echo "build: FAILED (full log: $build/build.log)" >&2
    exit 1
fi
