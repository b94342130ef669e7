#!/usr/bin/env bash
# The main job, from a fresh checkout: install what is needed, build, and show the loop of
# "fake runs, real fixes" on a checked-in sample:
#   1. replay traces/samples/gemm-1k-late-dma.bin on configs/xpu.yaml: the report, its stall
#      analysis and its suggestions, each verified by replaying the patched trace (xpusim-out/);
#   2. apply the top suggestion (xpu_analyze --apply 1 -o xpusim-patched.bin) and re-simulate the
#      patched trace (xpusim-patched-out/) on the
#      run's effective platform (xpusim-out/platform.yaml): the time it saves is the one the
#      report measured, to the picosecond.
# The sample carries a planted defect: it is a 1024^3 GEMM whose B-tile DMAs are issued late,
# right before the waits on them (xpu_tracegen gemm --late-dma; docs/tracegen.md), so that there
# is something to find. Extra arguments go to the first sim_main run (e.g. --set ...).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh" -DXPU_BUILD_TESTS=OFF
build="${XPU_BUILD_DIR:-$root/build}"
cd "$root"
sim="$build/platform/sim_main"
ana="$build/analysis/xpu_analyze"
trace=traces/samples/gemm-1k-late-dma.bin
echo "quickstart: $trace carries a planted defect (late B-tile DMAs, xpu_tracegen --late-dma)"
"$sim" --platform configs/xpu.yaml --trace "$trace" --out xpusim-out "$@"

echo
echo "quickstart: the top suggestion applied, re-simulated on xpusim-out/platform.yaml"
# Beside the run, not inside it: a run folder holds only what sim_main writes (docs/outputs.md).
if ! "$ana" xpusim-out --apply 1 -o xpusim-patched.bin; then
    echo "quickstart: no suggestion to apply"
    exit 0
fi
"$sim" --platform xpusim-out/platform.yaml --trace xpusim-patched.bin --out xpusim-patched-out -q --no-txlog
python3 - xpusim-out xpusim-patched-out <<'EOF'
import json, re, sys
out, patched = sys.argv[1], sys.argv[2]
before = json.load(open(out + "/stats.json"))["simulated_time_ns"]
after = json.load(open(patched + "/stats.json"))["simulated_time_ns"]
top = json.load(open(out + "/analysis.json"))["suggestions"][0]
print("before %.3f us, after %.3f us: saved %.3f ns; the report measured %s ns for suggestion 1 [%s, %s]"
      % (before / 1e3, after / 1e3, before - after,
         "%.3f" % top["measured_saving_ns"] if top["measured_saving_ns"] is not None else "nothing", top["kind"], top["status"]))
EOF
