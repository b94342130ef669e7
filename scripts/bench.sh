#!/usr/bin/env bash
# Speed and memory of the simulator (targets: >= 5 M instructions/s simulated; peak RSS that
# does not grow with trace length), of the trace generator (>= 20 M instructions/s) and of the
# analysis (>= 10 M transaction-log records/s, issue #5).
# Builds Release, generates a ~10.3 M and a ~41 M instruction GEMM trace, runs sim_main
# BENCH_RUNS times (default 5) on each and reports medians (the machines are shared and noisy:
# medians and ratios, never single timings); those runs write no transaction log
# (--no-txlog: the simulator alone). On the 10 M trace also: the cost of the transaction log
# (runs with it, alternating with those without), and xpu_analyze on that log (load + analyze
# in log records/s, the writers apart, peak RSS). Progress goes to stderr.
# Usage: scripts/bench.sh        env: BENCH_RUNS, BENCH_DIR (scratch folder, default mktemp)
#
#        scripts/bench.sh --baseline REV [--small]
# The production-scale targets (issue 14) against REV: builds REV (any git revision: be4474b,
# main, a tag) in a worktree under /tmp (reused while REV's commit is the same), then runs
# scripts/bench_compare.py, which alternates the two builds on the same traces and prints every
# target with the baseline side by side (medians of BENCH_RUNS rounds, default 3; ratios from
# one run). --baseline-build DIR takes an already built tree as the baseline instead (the test
# suite compares a build with itself, --small: small workloads of the same shapes).
# env: BENCH_RUNS (3), BENCH_DIR, BENCH_STARTUP_TIMEOUT (seconds for the 4096-chip start-up, 120).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export XPU_BUILD_DIR="${XPU_BUILD_DIR:-$root/build}"
if [[ ${1:-} == --baseline || ${1:-} == --baseline-build ]]; then
    mode=$1 rev=${2:-}
    shift 2 || { echo "bench: usage: $0 --baseline REV [--small]  (or --baseline-build DIR)" >&2; exit 2; }
    [[ -n $rev ]] || { echo "bench: $mode needs a value" >&2; exit 2; }
    small=()
    for a in "$@"; do
        case $a in
            --small) small=(--small) ;;
            *) echo "bench: unknown option '$a' (expected --small)" >&2; exit 2 ;;
        esac
    done
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    "$root/scripts/build.sh" "${launcher[@]}"
    if [[ $mode == --baseline ]]; then
        sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") ||
            { echo "bench: --baseline $rev: not a revision of $root (expected a commit, branch or tag: git rev-parse)" >&2; exit 2; }
        wt=/tmp/xpusim-bench-${sha:0:12}
        if [[ ! -d $wt ]]; then
            echo "bench: checking out $rev ($sha) into $wt" >&2
            git -C "$root" worktree add --detach "$wt" "$sha" >/dev/null
        fi
        [[ $(git -C "$wt" rev-parse HEAD) == "$sha" ]] || { echo "bench: $wt is not at $sha: remove it (git worktree remove $wt)" >&2; exit 1; }
        echo "bench: building $rev ($sha) into $wt/build" >&2
        CCACHE_BASEDIR=$wt XPU_BUILD_DIR=$wt/build "$wt/scripts/build.sh" -DXPU_BUILD_TESTS=OFF "${launcher[@]}"
        base=$wt/build name=$(git -C "$root" rev-parse --short "$sha")
        [[ $rev == "$name" ]] || name="$rev ($name)"
    else
        [[ -x $rev/platform/sim_main ]] || { echo "bench: --baseline-build $rev: no built platform/sim_main there" >&2; exit 2; }
        base=$(cd "$rev" && pwd) name=$(basename "$base")
    fi
    exec /usr/bin/python3 "$root/scripts/bench_compare.py" --ours "$XPU_BUILD_DIR" --base "$base" --base-name "$name" \
        --root "$root" --runs "${BENCH_RUNS:-3}" --startup-timeout "${BENCH_STARTUP_TIMEOUT:-120}" ${BENCH_DIR:+--scratch "$BENCH_DIR"} "${small[@]}"
fi
"$root/scripts/build.sh" -DXPU_BUILD_TESTS=ON
bin="$XPU_BUILD_DIR"
runs="${BENCH_RUNS:-5}"
scratch="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$scratch"
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
logged="$scratch/out-10M"  # the 10M trace's runs with the transaction log, analysed below
for size in 10M 40M; do
    trace="$scratch/gemm-$size.bin"
    echo "bench: generating the $size-instruction trace" >&2
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    instrs=$("$bin/traces/xpu_tracegen" gemm ${shape[$size]} -o "$trace" | awk '/instructions/ {print $(NF-1)}')
    t1=$(date +%s.%N)
    gen_rate=$("$py" -c "print($instrs / ($t1 - $t0) / 1e6)")
    speeds=(); rsses=(); with_log=()
    for i in $(seq "$runs"); do
        echo "bench: sim_main on $size, run $i of $runs" >&2
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu.yaml" --trace "$trace" --out "$scratch/out" --no-txlog
        speeds+=("$(stat "$scratch/out/stats.json" instructions_per_second)")
        rsses+=("$(stat "$scratch/out/stats.json" peak_rss_bytes)")
        if [ "$size" = 10M ]; then
            # With the transaction log (sim_main's default; the analysis is timed on its own below).
            echo "bench: sim_main with the transaction log on $size, run $i of $runs" >&2
            "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu.yaml" --trace "$trace" --out "$logged" --no-analysis
            with_log+=("$(stat "$logged/stats.json" instructions_per_second)")
        fi
    done
    med=$(median "${speeds[@]}")
    rss[$size]=$(median "${rsses[@]}")
    printf 'sim_main  %s trace (%s instructions): median %.2f M instructions/s over %d runs (min %.2f, max %.2f), peak RSS %.1f MiB\n' \
        "$size" "$instrs" "$("$py" -c "print($med/1e6)")" "$runs" \
        "$("$py" -c "print(min(${speeds[*]/%/,})/1e6)")" "$("$py" -c "print(max(${speeds[*]/%/,})/1e6)")" \
        "$("$py" -c "print(${rss[$size]}/1048576)")"
    printf 'tracegen  %s trace: %.1f M instructions/s written (one run, includes process start)\n' "$size" "$gen_rate"
    if [ "$size" = 10M ]; then
        log_med=$(median "${with_log[@]}")
        log_bytes=$(wc -c < "$logged/txlog.bin")
        printf 'txlog     %s trace: median %.2f M instructions/s with the transaction log, %.2f M without: a run with the log takes x%.2f the time; log %.1f MiB = %.1f bytes per instruction\n' \
            "$size" "$("$py" -c "print($log_med/1e6)")" "$("$py" -c "print($med/1e6)")" "$("$py" -c "print($med / $log_med)")" \
            "$("$py" -c "print($log_bytes/1048576)")" "$("$py" -c "print($log_bytes / $instrs)")"
    fi
    rm -f "$trace"  # (the 10M run's log keeps its own copy, txlog.trace.bin)
done
printf 'memory    peak RSS 40M / 10M = %.3f (1.0 = flat: memory does not grow with trace length)\n' \
    "$("$py" -c "print(${rss[40M]} / ${rss[10M]})")"

# The analysis (target: >= 10 M log records/s): xpu_analyze --timing on the 10M run's log,
# BENCH_RUNS times. Its speed is that of load + analyze (the log and trace read, the Analysis
# computed); the four writers are reported apart, and the process's peak RSS.
timings=()
for i in $(seq "$runs"); do
    echo "bench: xpu_analyze on the 10M log, run $i of $runs" >&2
    "$bin/analysis/xpu_analyze" "$logged" --quiet --timing 2>"$scratch/timing-$i.txt"
    timings+=("$scratch/timing-$i.txt")
done
"$py" - "$(wc -c < "$logged/txlog.bin")" "${timings[@]}" <<'PY'
import statistics, sys
runs = []
for path in sys.argv[2:]:
    t = {}
    for line in open(path):
        if line.startswith("xpu_analyze timing: "):
            key, value = line[len("xpu_analyze timing: "):].split()[:2]
            t[key] = float(value)
    runs.append(t)
def med(key):
    return statistics.median(r.get(key, 0.0) for r in runs)
records = runs[0]["records"]
rates = [records / (r["load"] + r["analyze"]) / 1e6 for r in runs]
rate = records / statistics.median(r["load"] + r["analyze"] for r in runs) / 1e6
print("analysis  10M log (%d records, %.1f MiB): median %.2f M records/s over load + analyze (%.3f s: load %.3f, analyze %.3f) "
      "over %d runs (min %.2f, max %.2f): %s the 10 M records/s target"
      % (records, int(sys.argv[1]) / 1048576, rate, med("load") + med("analyze"), med("load"), med("analyze"), len(runs),
         min(rates), max(rates), "meets" if rate >= 10 else "BELOW"))
writers = ["report.txt", "analysis.json", "report.html", "timeline.json"]
print("analysis  writers (median): %.3f s in all (%s); peak RSS %.0f MiB"
      % (sum(med(w) for w in writers), ", ".join("%s %.3f" % (w, med(w)) for w in writers), med("peak_rss") / 1048576))
PY

# Waveforms: the cost of --vcd on the 10M trace's smaller sibling (a 2048 x 2048 x 8192 GEMM):
# none, a small selection, every signal. Medians of BENCH_RUNS runs; ratios against none. (No
# transaction log, hence no analysis either: the ratios are the waveform's cost alone.)
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
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu.yaml" --trace "$scratch/vcd.bin" --out "$scratch/out" --no-txlog "${extra[@]}"
        walls+=("$("$py" -c "print($(date +%s.%N) - $start)")")
    done
    vwall[$mode]=$(median "${walls[@]}")
done
printf 'waveform  --vcd slowdown (whole process, median): small selection x%.2f, all signals x%.2f\n' \
    "$("$py" -c "print(${vwall[small]} / ${vwall[none]})")" "$("$py" -c "print(${vwall[all]} / ${vwall[none]})")"

# Multi-chip scale: a 1 MiB 2D-torus all-reduce on 16, 64 and 256 chips (4x4, 8x8, 16x16),
# without the transaction log (its cost is measured above).
declare -A wall
for dims in 4x4 8x8 16x16; do
    x=${dims%x*}; y=${dims#*x}; n=$((x * y))
    "$bin/traces/xpu_tracegen" collective --op all-reduce --algo torus2d --dims "$dims" --chips "$n" \
        --bytes 1048576 -o "$scratch/ar-$n.bin" >/dev/null
    walls=(); rsses=()
    for i in $(seq "$runs"); do
        echo "bench: all-reduce on $n chips, run $i of $runs" >&2
        "$bin/platform/sim_main" --quiet --platform "$root/configs/xpu-torus$dims.yaml" --trace "$scratch/ar-$n.bin" \
            --out "$scratch/out" --no-txlog
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
