#!/usr/bin/env bash
# Are the lower bounds bounds? (docs/analysis.md, "Bounds" and "The span bound".)
#
# On GEMMs of shapes and platforms the suggestions benchmark does not hold (6 shapes x 5
# platforms, edge tiles in most), each trace is run with sim_main's default verification and
# then 2 rounds of `xpu_analyze OUT --rounds 2`; the lower bound in analysis.json must not be
# above the fastest of them: the run, each replayed suggestion (the run less its measured
# saving), and the rounds' last run. A bound above one of them is wrong, and so is every cap at
# the headroom it sets. Prints one line per trace (run, bound and the resource that sets it, the
# fastest measured) and exits 1 if any bound is above a run.
#
# usage: scripts/bench_bounds.sh [--out DIR] [BUILD_DIR]   (default build, DIR a fresh temporary folder)
# ~20 s on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="" build="$root/build"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_bounds: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) build="$1"; shift ;;
    esac
done
for b in traces/xpu_tracegen platform/sim_main analysis/xpu_analyze; do
    [ -x "$build/$b" ] || { echo "bench_bounds: $build/$b not found: build first (scripts/build.sh)" >&2; exit 2; }
done
[ -n "$out" ] || out="$(mktemp -d /tmp/bench_bounds.XXXXXX)"
mkdir -p "$out"

platforms=(xpu tpu-v5p-8 tpu-v6e-4 xpu-2vpu tpu-v5e-4)
shapes=("640 2048 1536" "1200 900 700" "2000 1000 500" "512 512 512" "4096 512 512" "1500 1500 300")
n=$(( ${#platforms[@]} * ${#shapes[@]} )) i=0 bad=0 t0=$(date +%s)
for plat in "${platforms[@]}"; do
    for shape in "${shapes[@]}"; do
        set -- $shape
        i=$((i + 1))
        d="$out/${plat}_$1x$2x$3"
        rm -rf "$d"  # a case's runs of a previous time (the rounds refuse a folder that is not empty)
        mkdir -p "$d"
        el=$(( $(date +%s) - t0 ))
        echo "bench_bounds: [$i/$n] $((100 * (i - 1) / n))% gemm $1x$2x$3 on $plat, ${el} s elapsed, ETA $(( i > 1 ? el * (n - i + 1) / (i - 1) : 0 )) s" >&2
        "$build/traces/xpu_tracegen" gemm --m "$1" --n "$2" --k "$3" --platform "$root/configs/$plat.yaml" -o "$d/t.bin" >"$d/log.txt" 2>&1
        "$build/platform/sim_main" --platform "$root/configs/$plat.yaml" --trace "$d/t.bin" --out "$d/out" -q >>"$d/log.txt" 2>&1
        "$build/analysis/xpu_analyze" "$d/out" --rounds 2 -o "$d/rounds.bin" >>"$d/log.txt" 2>&1
        /usr/bin/python3 - "$d" "gemm $1x$2x$3 ($plat)" <<'PY' || bad=$((bad + 1))
import json, os, sys
d, name = sys.argv[1:3]
a = json.load(open(os.path.join(d, "out", "analysis.json")))
t, b = a["end_ns"], a["bounds"]
lb = b["lower_bound_ns"]
setter = max(b["resources"], key=lambda r: r["time_ns"])["name"] if b["resources"] else "-"
fastest = [("the run", t)] + [("#%d %s replayed" % (s["rank"], s["kind"]), t - s["measured_saving_ns"])
                              for s in a["suggestions"] if s.get("measured_saving_ns") is not None]
rj = os.path.join(d, "rounds-rounds", "rounds.json")
if os.path.exists(rj):
    fastest.append(("the rounds", t - json.load(open(rj)).get("saving_ns", 0.0)))
what, tt = min(fastest, key=lambda x: x[1])
ok = tt >= lb - 1.0  # 1 ns for rounding
print("%-34s run %9.3f us  bound %9.3f us (%s)  fastest %9.3f us (%s)  %s"
      % (name, t / 1e3, lb / 1e3, setter, tt / 1e3, what, "OK" if ok else "BOUND ABOVE A RUN"))
sys.exit(0 if ok else 1)
PY
    done
done
echo "bench_bounds: $n traces, $bad with a bound above a run, $(( $(date +%s) - t0 )) s (runs in $out)"
[ "$bad" -eq 0 ]
