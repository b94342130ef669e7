#!/usr/bin/env bash
# Proof by replay for split_dma (analysis/split_dma.h) on a what-if platform: configs/xpu.yaml
# with DMA engines at a quarter of the HBM's bandwidth (300 GB/s each, --set). A llama2-7b decode
# layer is engine-bound there: the top finding must be split_dma, and the patched trace,
# re-simulated on the same platform, must realise at least MIN% of the estimated saving. On
# the platform as shipped (an engine reaches the HBM's peak alone) it must not be suggested.
# usage: bash split_dma.sh BUILD_DIR SOURCE_DIR MIN_PERCENT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 3 "BUILD_DIR SOURCE_DIR MIN_PERCENT" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 MIN=$3
e2e_tools "$BUILD_DIR"
e2e_workdir split_dma

PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
slow=()
for e in 0 1 2 3; do slow+=(--set "chip.modules.dma$e.bandwidth_gbps=300"); done
"$GEN" transformer --model llama2-7b --phase decode --batch 1 --seq 512 --layers 1 -o "$WORK/decode.bin" > /dev/null
"$SIM" --platform "$PLATFORM" "${slow[@]}" --trace "$WORK/decode.bin" --out "$WORK/slow" -q
"$SIM" --platform "$PLATFORM" --trace "$WORK/decode.bin" --out "$WORK/shipped" -q
"$ANA" "$WORK/slow" --apply 1 -o "$WORK/patched.bin" > /dev/null || fail "xpu_analyze --apply 1 failed"
"$SIM" --platform "$PLATFORM" "${slow[@]}" --trace "$WORK/patched.bin" --out "$WORK/patched" -q --no-analysis \
    || fail "the patched trace does not run"

"$PY" - "$WORK" "$MIN" <<'PYEOF' || fail "finding or gain"
import json, sys
w, need = sys.argv[1], float(sys.argv[2])
top = json.load(open(w + "/slow/analysis.json"))["suggestions"][0]
print("top finding: [%s] at %s: %s" % (top["kind"], top["where"], top["finding"][:120]))
assert top["kind"] == "split_dma", "top suggestion is %s" % top["kind"]
kinds = [s["kind"] for s in json.load(open(w + "/shipped/analysis.json"))["suggestions"]]
assert "split_dma" not in kinds, "split_dma suggested where one engine fills the HBM"
t = {k: json.load(open("%s/%s/stats.json" % (w, k)))["simulated_time_ns"] for k in ("slow", "patched")}
est, gain = top["estimated_saving_ns"], t["slow"] - t["patched"]
print("300 GB/s engines: %.1f us, split: %.1f us: measured gain %.1f us against %.1f us estimated (%.0f%%)"
      % (t["slow"] / 1e3, t["patched"] / 1e3, gain / 1e3, est / 1e3, 100 * gain / est))
assert est > 0 and gain >= need / 100 * est, "measured gain below %.0f%% of the estimate" % need
PYEOF
echo "ok - split_dma"
