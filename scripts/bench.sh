#!/usr/bin/env bash
# Speed and memory of the simulator (targets: >= 5 M instructions/s simulated; peak RSS that
# does not grow with trace length) and of the trace generator (>= 20 M instructions/s).
# Builds Release, generates a ~10.3 M and a ~41 M instruction GEMM trace, runs sim_main
# BENCH_RUNS times (default 5) on each and reports medians (the machines are shared and noisy:
# medians and ratios, never single timings). Progress goes to stderr.
# Usage: scripts/bench.sh        env: BENCH_RUNS, BENCH_DIR (scratch folder, default mktemp)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export XPU_BUILD_DIR="${XPU_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" -DXPU_BUILD_TESTS=ON
bin="$XPU_BUILD_DIR"
runs="${BENCH_RUNS:-5}"
scratch="${BENCH_DIR:-$(mktemp -d)}"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$scratch"' EXIT
py=/usr/bin/python3

median() { "$py" -c 'import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(statistics.median(v))' "$@"; }
stat() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# Micro-benchmarks of the hot paths (Google Benchmark): medians of 5 repetitions.
if [ -x "$bin/tests/xpu_microbench" ]; then
    echo "bench: micro-benchmarks" >&2
    "$bin/tests/xpu_microbench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null |
        awk '/_median/ {print "micro     " $0}'
fi

declare -A shape=([10M]="--m 16384 --n 8192 --k 8448" [40M]="--m 32768 --n 16384 --k 8448")
declare -A rss
for size in 10M 40M; do
    trace="$scratch/gemm-$size.bin"
    echo "bench: generating the $size-instruction trace" >&2
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    instrs=$("$bin/traces/xpu_tracegen" gemm ${shape[$size]} -o "$trace" | awk '/instructions/ {print $(NF-1)}')
    t1=$(date +%s.%N)
    gen_rate=$("$py" -c "print($instrs / ($t1 - $t0) / 1e6)")
    speeds=(); rsses=()
    for i in $(seq "$runs"); do
        echo "bench: sim_main on $size, run $i of $runs" >&2
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu.yaml" --trace "$trace" --out "$scratch/out"
        speeds+=("$(stat "$scratch/out/stats.json" instructions_per_second)")
        rsses+=("$(stat "$scratch/out/stats.json" peak_rss_bytes)")
    done
    med=$(median "${speeds[@]}")
    rss[$size]=$(median "${rsses[@]}")
    printf 'sim_main  %s trace (%s instructions): median %.2f M instructions/s over %d runs (min %.2f, max %.2f), peak RSS %.1f MiB\n' \
        "$size" "$instrs" "$("$py" -c "print($med/1e6)")" "$runs" \
        "$("$py" -c "print(min(${speeds[*]/%/,})/1e6)")" "$("$py" -c "print(max(${speeds[*]/%/,})/1e6)")" \
        "$("$py" -c "print(${rss[$size]}/1048576)")"
    printf 'tracegen  %s trace: %.1f M instructions/s written (one run, includes process start)\n' "$size" "$gen_rate"
    rm -f "$trace"
done
printf 'memory    peak RSS 40M / 10M = %.3f (1.0 = flat: memory does not grow with trace length)\n' \
    "$("$py" -c "print(${rss[40M]} / ${rss[10M]})")"

# Waveforms: the cost of --vcd on the 10M trace's smaller sibling (a 2048 x 2048 x 8192 GEMM):
# none, a small selection, every signal. Medians of BENCH_RUNS runs; ratios against none.
"$bin/traces/xpu_tracegen" gemm --m 2048 --n 2048 --k 8192 -o "$scratch/vcd.bin" >/dev/null
declare -A vwall
for mode in none small all; do
    walls=()
    for i in $(seq "$runs"); do
        echo "bench: --vcd $mode, run $i of $runs" >&2
        case $mode in
            none) extra=() ;;
            small) extra=(--vcd "$scratch/out/w.vcd" --vcd-signals '*.mxu0.busy,*.scalar.stall') ;;
            all) extra=(--vcd "$scratch/out/w.vcd") ;;
        esac
        start=$(date +%s.%N)
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu.yaml" --trace "$scratch/vcd.bin" --out "$scratch/out" "${extra[@]}"
        walls+=("$("$py" -c "print($(date +%s.%N) - $start)")")
    done
    vwall[$mode]=$(median "${walls[@]}")
done
printf 'waveform  --vcd slowdown (whole process, median): small selection x%.2f, all signals x%.2f\n' \
    "$("$py" -c "print(${vwall[small]} / ${vwall[none]})")" "$("$py" -c "print(${vwall[all]} / ${vwall[none]})")"

# Multi-chip scale: a 1 MiB 2D-torus all-reduce on 16, 64 and 256 chips (4x4, 8x8, 16x16).
declare -A wall
for dims in 4x4 8x8 16x16; do
    x=${dims%x*}; y=${dims#*x}; n=$((x * y))
    "$bin/traces/xpu_tracegen" collective --op all-reduce --algo torus2d --dims "$dims" --chips "$n" \
        --bytes 1048576 -o "$scratch/ar-$n.bin" >/dev/null
    walls=(); rsses=()
    for i in $(seq "$runs"); do
        echo "bench: all-reduce on $n chips, run $i of $runs" >&2
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu-torus$dims.yaml" --trace "$scratch/ar-$n.bin" \
            --out "$scratch/out"
        walls+=("$(stat "$scratch/out/stats.json" wall_seconds)")
        rsses+=("$(stat "$scratch/out/stats.json" peak_rss_bytes)")
    done
    wall[$n]=$(median "${walls[@]}")
    printf 'chips     %3d-chip all-reduce (torus %s, 1 MiB): median %.3f s wall, peak RSS %.1f MiB, %s ns simulated\n' \
        "$n" "$dims" "${wall[$n]}" "$("$py" -c "print($(median "${rsses[@]}")/1048576)")" \
        "$(stat "$scratch/out/stats.json" simulated_time_ns)"
done
printf 'scaling   wall time 64/16 chips = %.2f, 256/64 chips = %.2f (chips x4 each step)\n' \
    "$("$py" -c "print(${wall[64]} / ${wall[16]})")" "$("$py" -c "print(${wall[256]} / ${wall[64]})")"
