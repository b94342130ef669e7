#!/usr/bin/env bash
# Proof by replay for the collective_algorithm suggestion (analysis/collective_choice.h): a
# ring all-reduce leaves link directions idle; the analysis must say so as its top finding and
# name the algorithm; the collective lowered that way (xpu_tracegen --algo) is re-simulated
# and must realise at least MIN% of the estimated saving. --apply on the suggestion is refused
# (exit 2, the message says why): it is a change of lowering, not a patch of the trace.
# usage: bash collective_choice.sh BUILD_DIR SOURCE_DIR CASE MIN_PERCENT
# CASE: ring4 (4 chips on a ring: bidir-ring) | torus4x4 (16 chips on a 4x4 torus: bidir-torus2d)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 4 "BUILD_DIR SOURCE_DIR CASE MIN_PERCENT" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 CASE=$3 MIN=$4
e2e_tools "$BUILD_DIR"
e2e_workdir collective_choice

case "$CASE" in
    ring4) PLATFORM="$SOURCE_DIR/configs/xpu-ring4.yaml" gen=(--chips 4) algo=bidir-ring ;;
    torus4x4) PLATFORM="$SOURCE_DIR/configs/xpu-torus4x4.yaml" gen=(--chips 16 --dims 4x4) algo=bidir-torus2d ;;
    *) fail "unknown case $CASE" ;;
esac
common=(collective --op all-reduce --bytes 4194304 --chunks 4 "${gen[@]}")
"$GEN" "${common[@]}" --algo ring -o "$WORK/ring.bin" > /dev/null
"$GEN" "${common[@]}" --algo "$algo" -o "$WORK/other.bin" > /dev/null
"$SIM" --platform "$PLATFORM" --trace "$WORK/ring.bin" --out "$WORK/ring" -q
"$SIM" --platform "$PLATFORM" --trace "$WORK/other.bin" --out "$WORK/other" -q --no-analysis

"$PY" - "$WORK" "$algo" "$MIN" <<'PYEOF' || fail "finding or gain"
import json, sys
w, algo, need = sys.argv[1], sys.argv[2], float(sys.argv[3])
# A change of lowering is not a patch of this trace, so it is not verified by replay: the
# suggestions verified by replay rank above it; it must be there, named as the top advice.
an = json.load(open(w + "/ring/analysis.json"))
sug, a_head = an["suggestions"], an["bounds"]["headroom_ns"]
algos = [(i + 1, s) for i, s in enumerate(sug) if s["kind"] == "collective_algorithm"]
assert algos, "no collective_algorithm suggestion: %s" % [s["kind"] for s in sug]
rank, top = algos[0]
print("collective advice (suggestion %d): [%s] at %s: %s" % (rank, top["kind"], top["where"], top["finding"]))
assert top["status"] == "not_verified" and top["measured_saving_ns"] is None, top
assert all(s["status"] == "verified" for s in sug[:rank - 1]), "ranked above the advice without a measured gain: %s" % sug[:rank - 1]
open(w + "/rank.txt", "w").write(str(rank))
assert "--algo " + algo in top["action"], "the action does not name %s: %s" % (algo, top["action"])
t = {k: json.load(open("%s/%s/stats.json" % (w, k)))["simulated_time_ns"] for k in ("ring", "other")}
# The lowering's own estimate, in the action ("~63.127 us less"): the suggestion's estimated saving
# is capped at this run's headroom, which does not bound another lowering.
import re
m = re.search(r"~([\d.]+) (ns|us|ms) less", top["action"])
assert m, "the action states no estimate for the other lowering: %s" % top["action"]
est = float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6}[m.group(2)]
assert top["estimated_saving_ns"] <= a_head + 1e-3, "estimate above the headroom"
gain = t["ring"] - t["other"]
print("ring %.1f us, %s %.1f us: measured gain %.1f us against %.1f us estimated (%.0f%%)"
      % (t["ring"] / 1e3, algo, t["other"] / 1e3, gain / 1e3, est / 1e3, 100 * gain / est))
assert est > 0 and gain >= need / 100 * est, "measured gain below %.0f%% of the estimate" % need
PYEOF

set +e
"$ANA" "$WORK/ring" --apply "$(cat "$WORK/rank.txt")" -o "$WORK/patched.bin" > "$WORK/apply.out" 2> "$WORK/apply.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "--apply on a collective_algorithm suggestion exited $rc, expected 2"
grep -q "no patch of this trace" "$WORK/apply.err" || fail "--apply did not say why: $(cat "$WORK/apply.err")"
[[ ! -e "$WORK/patched.bin" ]] || fail "--apply wrote a file although it refused"
echo "ok - $CASE"
