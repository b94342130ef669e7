#!/usr/bin/env bash
# Regenerates the checked-in sample traces in traces/samples/ (deterministic: the same
# generator gives the same bytes; tests/e2e/tracegen.sh checks they are up to date).
# Usage: scripts/gen_samples.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-${XPU_BUILD_DIR:-$root/build}}"
out="${2:-$root/traces/samples}"
gen="$build/traces/xpu_tracegen"
trace="$build/traces/xpu_trace"
# A 1024^3 bf16 GEMM on the default 8-MXU chip.
"$gen" gemm --m 1024 --n 1024 --k 1024 -o "$out/gemm-1k.bin" >/dev/null
# The quickstart's trace: the same GEMM with a planted defect (every B-tile DMA issued late, right
# before its wait), so that the quickstart shows the loop: finding, suggestion, proof by replay.
"$gen" gemm --m 1024 --n 1024 --k 1024 --late-dma -o "$out/gemm-1k-late-dma.bin" >/dev/null
# One llama2-7b decode layer (batch 1, 512 tokens in the KV cache).
"$gen" transformer --model llama2-7b --phase decode --batch 1 --seq 512 --layers 1 -o "$out/decode-layer.bin" >/dev/null
# A small ring all-gather over 4 chips (runs once the multi-chip platform lands).
"$gen" collective --op all-gather --chips 4 --bytes 262144 --algo ring --chunks 2 -o "$out/allgather-4.bin" >/dev/null
# The hand-written text example, assembled.
"$trace" asm "$root/traces/samples/tiny.xtr" -o "$out/tiny.bin"
