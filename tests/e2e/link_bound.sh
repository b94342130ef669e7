#!/usr/bin/env bash
# The link bound (analysis/bounds.cpp) on a ring all-reduce, against its closed form and the
# simulator. Closed form: in a ring all-reduce of B bytes over N chips each chip sends
# 2 (N - 1) / N x B to the next one, over one link (xpu-ring4.yaml's links and xpu-torus4x4.yaml's:
# 50 GB/s, packets of 1024 payload bytes + 64 on the wire, 500 ns per hop); no order of the
# transfers carries those bytes in less than wire bytes / bandwidth, and the last of them arrives
# a hop later. The bound must be that figure (the flags' small writes add a little: within 0.1%),
# the run must not end before it (a bound), and a chunked ring keeps the links busy, so the run
# ends within 2% of it (the bound is the physics that sets its pace). Every suggestion verified
# by replay saves at most the headroom over it, but for collective_algorithm's relowering, which
# lowers the collective another way (its bytes over other links: another work, with bounds of its own).
# usage: bash link_bound.sh BUILD_DIR SOURCE_DIR CASE      CASE: ring4 | torus4x4
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 3 "BUILD_DIR SOURCE_DIR CASE" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 CASE=$3
e2e_tools "$BUILD_DIR"
e2e_workdir link_bound

case "$CASE" in
    ring4) PLATFORM="$SOURCE_DIR/configs/xpu-ring4.yaml" chips=4 ;;
    torus4x4) PLATFORM="$SOURCE_DIR/configs/xpu-torus4x4.yaml" chips=16 ;;
    *) fail "unknown case $CASE" ;;
esac
bytes=4194304
"$GEN" collective --op all-reduce --bytes $bytes --chunks 4 --chips $chips --algo ring -o "$WORK/t.bin" > /dev/null
"$SIM" --platform "$PLATFORM" --trace "$WORK/t.bin" --out "$WORK/run" -q || fail "sim_main failed"
"$PY" - "$WORK/run" $bytes $chips <<'PYEOF' || fail "link bound"
import json, sys
out, B, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = json.load(open(out + "/analysis.json"))
T = json.load(open(out + "/stats.json"))["simulated_time_ns"]
link = [r for r in a["bounds"]["resources"] if r["name"] == "link"]
assert link, "no link bound: %s" % a["bounds"]
bound = link[0]["time_ns"]
closed = 2 * (N - 1) / N * B * (1024 + 64) / 1024 / 50 + 500  # ns: wire bytes at 50 GB/s, then one hop
print("link bound %.3f ns, closed form %.3f ns, run %.3f ns (%.2f%% above)" % (bound, closed, T, 100 * (T - bound) / bound))
assert closed <= bound <= closed * 1.001, "the bound is not the closed form"
assert a["bounds"]["lower_bound_ns"] == bound, "the link does not set the bound: %s" % a["bounds"]
assert bound <= T <= bound * 1.02, "the run is not within 2% above its link bound"
for s in a["suggestions"]:
    assert s["estimated_saving_ns"] <= a["bounds"]["headroom_ns"] + 1e-3, s
    # A relowering moves the bytes over other links (analysis/relower.h): this lowering's bound is not its.
    if s["status"] == "verified" and not s.get("relowering"):
        assert s["measured_saving_ns"] <= a["bounds"]["headroom_ns"] + 1e-3, "measured %s above the headroom" % s["measured_saving_ns"]
PYEOF
pass "$CASE: the link bound is its closed form, and the run ends within 2% above it"
