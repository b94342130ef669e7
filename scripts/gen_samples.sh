#!/usr/bin/env bash
# Regenerates the checked-in sample traces in traces/samples/ (deterministic: the same
# generator gives the same bytes; tests/e2e/samples.sh checks they are up to date).
# Usage: scripts/gen_samples.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-${XPU_BUILD_DIR:-$root/build}}"
out="${2:-$root/traces/samples}"
gen="$build/traces/xpu_tracegen"
trace="$build/traces/xpu_trace"
"$gen" gemm --m 1024 --n 1024 --k 1024 -o "$out/gemm-1k.bin" >/dev/null
"$trace" asm "$root/traces/samples/tiny.xtr" -o "$out/tiny.bin"
