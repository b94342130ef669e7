# Shared by the end-to-end scripts (sourced): the argument check, the built tools, a work folder
# removed on exit, and pass/fail. Scripts older than the analysis keep their own copy of these
# few lines.
#   e2e_args N "USAGE" "$@"   exit 2 with "usage: SCRIPT USAGE" unless there are N arguments
#   e2e_tools BUILD_DIR       SIM, GEN, ANA, TOOL, SWEEP: the built binaries; PY: Debian's python3
#   e2e_workdir NAME          WORK: a fresh folder, removed when the script exits
#   pass MESSAGE              count a check that passed: "ok N - MESSAGE"
#   fail MESSAGE              "FAIL: MESSAGE" (and how many checks passed, if any were counted)
#                             on stderr, exit 1
#   e2e_verified_rank RUN MIN KIND [ACTION_PREFIX]
#                             prints the rank of RUN's first suggestion of KIND (whose action
#                             starts with ACTION_PREFIX, if given): fails unless it is verified,
#                             its estimate is at most the headroom and its measured saving at
#                             least MIN% of the headroom
#   e2e_apply_reproduces RUN N  xpu_analyze RUN --apply N -o RUN-patched.bin, re-simulated on
#                             RUN/platform.yaml into RUN-patched/: saves what the verification
#                             measured for suggestion N, within 1 ns (the same deterministic
#                             simulation of the same trace on the same platform)
e2e_args() {
    local n=$1 usage=$2
    shift 2
    if [[ $# -ne $n ]]; then
        echo "usage: $(basename "$0") $usage" >&2
        exit 2
    fi
}
e2e_tools() {
    SIM="$1/platform/sim_main"
    GEN="$1/traces/xpu_tracegen"
    ANA="$1/analysis/xpu_analyze"
    TOOL="$1/traces/xpu_trace"
    SWEEP="$1/platform/xpu_sweep"
    PY=/usr/bin/python3
}
e2e_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1_e2e.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
}
pass() {
    checks=$((${checks:-0} + 1))
    echo "ok $checks - $*"
}
fail() {
    echo "FAIL: $*" >&2
    [[ -z ${checks:-} ]] || echo "$checks passed, 1 failed" >&2
    exit 1
}
e2e_verified_rank() {
    local run=$1 min=$2 kind=$3 prefix=${4:-}
    "$PY" - "$run/analysis.json" "$min" "$kind" "$prefix" <<'PYEOF'
import json, sys
a = json.load(open(sys.argv[1]))
kind, prefix = sys.argv[3], sys.argv[4]
what = prefix or kind
head = a["bounds"]["headroom_ns"]
ranks = [i + 1 for i, s in enumerate(a["suggestions"]) if s["kind"] == kind and s["action"].startswith(prefix)]
assert ranks, "no %s suggestion" % what
s = a["suggestions"][ranks[0] - 1]
assert s["status"] == "verified", "%s is %s" % (what, s["status"])
assert s["estimated_saving_ns"] <= head, "an estimate above the headroom"
share = 100 * s["measured_saving_ns"] / head
print("%s (#%d): %.1f ns measured, %.1f ns estimated, %.1f%% of the %.1f ns headroom"
      % (what, ranks[0], s["measured_saving_ns"], s["estimated_saving_ns"], share, head), file=sys.stderr)
assert share >= float(sys.argv[2]), "measured below %s%% of the headroom" % sys.argv[2]
print(ranks[0])
PYEOF
}
e2e_apply_reproduces() {
    local run=$1 rank=$2
    "$ANA" "$run" --apply "$rank" -o "$run-patched.bin" > /dev/null || fail "$run: --apply $rank failed"
    "$SIM" --platform "$run/platform.yaml" --trace "$run-patched.bin" --out "$run-patched" -q ||
        fail "$run: the patched trace does not run"
    "$PY" - "$run" "$run-patched" "$rank" <<'PYEOF' || fail "$run: --apply $rank, re-simulated, does not save what was measured"
import json, sys
run, patched, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = json.load(open(run + "/analysis.json"))["suggestions"][rank - 1]
t = [json.load(open(d + "/stats.json"))["simulated_time_ns"] for d in (run, patched)]
assert abs((t[0] - t[1]) - s["measured_saving_ns"]) <= 1, "re-simulated saving %.3f ns, measured %.3f ns" % (t[0] - t[1], s["measured_saving_ns"])
print("%.3f -> %.3f us re-simulated, as measured" % (t[0] / 1e3, t[1] / 1e3))
PYEOF
}
