#!/usr/bin/env bash
# Runs a fixed set of cases with --deterministic and writes, for every user-facing output file,
# one line "sha256  CASE/FILE" (sorted) to OUT_DIR/outputs.sha256; the outputs stay in OUT_DIR.
# A restructuring that must not change behaviour compares this manifest before and after
# (tests/e2e/golden_outputs.sh compares it with tests/data/golden/outputs.sha256).
#
#   scripts/golden_outputs.sh BUILD_DIR OUT_DIR
#
# Cases: the shipped samples, one run per planted inefficiency (smaller sizes than the planted
# ctests), a two-VPU platform, multi-chip rings and a torus, a tensor-parallel decode, and the
# waveforms; each case's top suggestion applied with xpu_analyze --apply 1 (the patched trace is
# part of the manifest), and xpu_analyze run again on the finished output folder.
# The transaction log (txlog.*) is not part of the manifest: its format is an internal one that a
# restructuring may change (its size too); everything else a user reads from a run is.
set -euo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: $(basename "$0") BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$2"
out=$(cd "$2" && pwd)
sim="$build/platform/sim_main"
gen="$build/traces/xpu_tracegen"
ana="$build/analysis/xpu_analyze"

# Relative paths everywhere: outputs name their platform, trace and folder, so the same
# relative names give the same bytes wherever the checkout and OUT_DIR are.
cd "$out"
rm -rf cases traces configs samples outputs.sha256
mkdir -p cases traces
cp -r "$root/configs" configs
cp -r "$root/traces/samples" samples
samples=samples
cfg=configs

# run NAME PLATFORM TRACE [sim_main options...]: simulate, analyse, apply the top suggestion.
run() {
    local name=$1 platform=$2 trace=$3
    shift 3
    echo "golden: $name" >&2
    "$sim" --platform "$platform" --trace "$trace" --out "cases/$name" -q --deterministic "$@"
    # Apply the top suggestion where there is one that can be applied (some kinds are advice).
    if "$ana" "cases/$name" --apply 1 -o "cases/$name.patched.bin" > "cases/$name.apply.txt" 2>&1; then
        :
    else
        rm -f "cases/$name.patched.bin"
        echo "(no applicable suggestion)" > "cases/$name.apply.txt"
    fi
    # The analysis again, from the finished folder (xpu_analyze's own outputs).
    mkdir -p "cases/$name.reanalysed"
    cp "cases/$name/txlog.bin" "cases/$name/txlog.trace.bin" "cases/$name/stats.json" "cases/$name.reanalysed/"
    [[ ! -f "cases/$name/txlog.meta.json" ]] || cp "cases/$name/txlog.meta.json" "cases/$name.reanalysed/"
    "$ana" "cases/$name.reanalysed" -q > /dev/null
    rm -f "cases/$name.reanalysed/txlog."* "cases/$name.reanalysed/stats.json"
}

# gen NAME ARGS...: a generated trace in traces/NAME.bin.
gen() {
    local name=$1
    shift
    "$gen" "$@" -o "traces/$name.bin" > /dev/null
}

run gemm-1k "$cfg/xpu.yaml" "$samples/gemm-1k.bin" --vcd "cases/gemm-1k.wave.vcd"
run decode-layer "$cfg/xpu.yaml" "$samples/decode-layer.bin"
run allgather-4 "$cfg/xpu-ring4.yaml" "$samples/allgather-4.bin"
run gemm-1k-2vpu "$cfg/xpu-2vpu.yaml" "$samples/gemm-1k.bin"
run gemm-1k-hbm2x "$cfg/xpu.yaml" "$samples/gemm-1k.bin" --set chip.modules.hbm.channel_bandwidth_gbps=75

for opt in late-dma no-double-buffer false-dep bad-order; do
    gen "gemm-$opt" gemm --m 1024 --n 1536 --k 1024 "--$opt"
    run "gemm-$opt" "$cfg/xpu.yaml" "traces/gemm-$opt.bin"
done
gen gemm-split-dma gemm --m 1024 --n 1024 --k 1024 --split-dma 16
run gemm-split-dma "$cfg/xpu.yaml" traces/gemm-split-dma.bin
for opt in late-dma false-dep bad-order; do
    gen "decode-$opt" transformer --model llama2-7b --phase decode --batch 1 --seq 256 --layers 1 "--$opt"
    run "decode-$opt" "$cfg/xpu.yaml" "traces/decode-$opt.bin"
done
gen allreduce-serial collective --op all-reduce --chips 4 --bytes 1048576 --algo ring --chunks 4 --serial-collective
run allreduce-serial "$cfg/xpu-ring4.yaml" traces/allreduce-serial.bin
gen allreduce-torus collective --op all-reduce --chips 16 --bytes 1048576 --algo ring --chunks 2
run allreduce-torus "$cfg/xpu-torus4x4.yaml" traces/allreduce-torus.bin
gen tp4-decode transformer --model llama2-7b --phase decode --batch 1 --seq 512 --layers 1 --tp 4
run tp4-decode "$cfg/xpu-ring4.yaml" traces/tp4-decode.bin --vcd "cases/tp4-decode.wave.vcd" \
    --vcd-signals '*.mxu0.busy,*.scalar.*,*.links.*' --vcd-window 10000:60000

# Every shipped platform description with its defaults filled in.
for c in "$cfg"/*.yaml; do
    "$sim" --platform "$c" --dump-config > "cases/dump-config.$(basename "$c")"
done

# The manifest: every output but the transaction log. --apply's message names sim_main by its
# path: hashed with BUILD_DIR written as "BUILD". A .gtkw save file names its VCD by absolute
# path (so that GTKWave finds it from anywhere): hashed with OUT_DIR written as "OUT". analysis.json
# gives the log's size ("log_bytes"), a figure of the log's format: hashed with it as 0.
find cases traces -type f ! -name 'txlog.*' -print0 | sort -z | while IFS= read -r -d '' f; do
    if [[ $f == *.apply.txt ]]; then
        # --apply prints the command that re-simulates the patched trace with sim_main's path.
        printf '%s  %s\n' "$(sed "s#$build#BUILD#g" "$f" | sha256sum | cut -d' ' -f1)" "$f"
    elif [[ $f == *.gtkw ]]; then
        printf '%s  %s\n' "$(sed "s#$out#OUT#g" "$f" | sha256sum | cut -d' ' -f1)" "$f"
    elif [[ $f == */analysis.json ]]; then
        printf '%s  %s\n' "$(sed -E 's#"log_bytes": [0-9]+#"log_bytes": 0#' "$f" | sha256sum | cut -d' ' -f1)" "$f"
    else
        sha256sum "$f"
    fi
done > outputs.sha256
echo "golden: $(wc -l < outputs.sha256) files in $out/outputs.sha256" >&2
