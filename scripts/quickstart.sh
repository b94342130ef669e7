#!/usr/bin/env bash
# The main job, from a fresh checkout: install what is needed, build, replay the checked-in
# sample trace on the default platform (configs/xpu.yaml) and print the report.
# Outputs go to xpusim-out/ (stats.json).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh" -DXPU_BUILD_TESTS=OFF
build="${XPU_BUILD_DIR:-$root/build}"
cd "$root"
exec "$build/platform/sim_main" --platform configs/xpu.yaml --trace traces/samples/gemm-1k.bin --out xpusim-out "$@"
