#!/usr/bin/env bash
# Configures and builds xpusim (Release) into build/ (or $XPU_BUILD_DIR).
# Usage: scripts/build.sh [extra cmake -D options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${XPU_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "build: compiling into $build (log: $build/build.log)" >&2
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
    grep -E -A5 "error" "$build/build.log" | head -80 >&2 || tail -50 "$build/build.log" >&2
    echo "build: FAILED (full log: $build/build.log)" >&2
    exit 1
fi
