#!/usr/bin/env bash
# Runs that remember how they were made, and statistics that explain themselves:
#  - stats.json records the command line, the --set overrides, the version and the trace's
#    SHA-256 (checked against sha256sum), and OUT/platform.yaml reproduces the run exactly;
#  - every number of stats.json has a unit and a description in its "descriptions" object;
#  - xpu_analyze --compare shows the platform's differing keys, per-op and per-layer deltas,
#    writes compare.{txt,json,html}, and warns loudly (stderr, text, JSON, HTML) when the traces differ;
#  - xpu_analyze --apply prints a sim_main command that, pasted as is, re-simulates the patched
#    trace into its own folder and measures the saving the report gave.
# usage: bash runs_remember.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
SRC=$2
e2e_workdir remember
cd "$WORK"
cp -r "$SRC/configs" configs
cp -r "$SRC/traces/samples" samples
T=samples/gemm-1k.bin
SET=chip.modules.hbm.channel_bandwidth_gbps=75

"$SIM" --platform configs/xpu.yaml --trace "$T" --out a -q --deterministic --no-verify
"$SIM" --platform configs/xpu.yaml --trace "$T" --out b -q --deterministic --no-verify --set "$SET"
"$PY" - b/stats.json "$(sha256sum "$T" | cut -d' ' -f1)" "$SET" <<'PYEOF' || fail "stats.json does not record how the run was made"
import json, sys
s = json.load(open(sys.argv[1]))
want = ["sim_main", "--platform", "configs/xpu.yaml", "--trace", "samples/gemm-1k.bin", "--out", "b", "-q",
        "--deterministic", "--no-verify", "--set", sys.argv[3]]
assert s["command_line"] == want, s["command_line"]
assert s["overrides"] == [sys.argv[3]], s["overrides"]
assert s["trace_sha256"] == sys.argv[2], (s["trace_sha256"], sys.argv[2])
assert s["version"].startswith("xpusim "), s["version"]
PYEOF
pass "stats.json: command line, overrides, version, trace SHA-256"

"$SIM" --platform b/platform.yaml --trace "$T" --out b2 -q --deterministic --no-verify
"$PY" - b/stats.json b2/stats.json <<'PYEOF' || fail "OUT/platform.yaml does not reproduce the run"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["simulated_time_ns"] == b["simulated_time_ns"], (a["simulated_time_ns"], b["simulated_time_ns"])
assert a["modules"] == b["modules"]
PYEOF
pass "b/platform.yaml reproduces the run with --set applied"

# Every number in stats.json, single- and multi-chip, has its unit and description.
"$SIM" --platform configs/xpu-ring4.yaml --trace samples/allgather-4.bin --out r -q --deterministic --no-analysis
for f in b/stats.json r/stats.json; do
"$PY" - "$f" <<'PYEOF' || fail "$f: a statistic without its description"
import json, re, sys
s = json.load(open(sys.argv[1]))
d = s.pop("descriptions")
for k, v in d.items():
    assert v["unit"] and v["description"], (k, v)
missing, n = [], 0
def walk(v, path, kind=None):
    global n
    if isinstance(v, bool) or isinstance(v, str) or v is None:
        return
    if isinstance(v, (int, float)):
        n += 1
        if path not in d:
            missing.append(path)
        return
    if isinstance(v, list):
        for x in v:
            walk(x, path + "[]")
        return
    for k, x in v.items():
        if path in ("units", "links"):
            walk(x, path + ".*")
        elif path == "modules":
            walk(x, "modules." + x["kind"])
        elif path == "chips[]" and k == "chip":
            continue  # an index, not a statistic
        else:
            walk(x, (path + "." if path else "") + k)
walk(s, "")
assert n > 50 and not missing, (n, missing)
print(sys.argv[1], n, "numbers,", len(d), "descriptions")
PYEOF
done
pass "every statistic of stats.json has a unit and a description"

run_rc() {  # run_rc VAR CMD...: exit code into VAR, stdout/stderr into out.txt/err.txt
    local __v=$1
    shift
    set +e
    "$@" > out.txt 2> err.txt
    printf -v "$__v" '%s' $?
    set -e
}
run_rc rc "$ANA" --compare a b -o cmp
[[ $rc == 0 ]] || fail "--compare exit $rc: $(cat err.txt)"
grep -q "chip.modules.hbm.channel_bandwidth_gbps: 37.5 -> 75" out.txt || fail "--compare shows no platform difference: $(cat out.txt)"
grep -q "core time by op" out.txt && grep -q "core time by layer" out.txt || fail "--compare has no per-op/per-layer deltas"
! grep -q WARNING out.txt err.txt || fail "--compare warned about one and the same trace"
cmp -s out.txt <(cat cmp/compare.txt; echo "comparison cmp/{compare.txt, compare.json, compare.html}") || fail "compare.txt is not what was printed"
"$PY" - cmp/compare.json <<'PYEOF' || fail "compare.json"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["same_trace"] is True and c["warning"] == ""
assert [d["key"] for d in c["platform_differences"]] == ["chip.modules.hbm.channel_bandwidth_gbps"], c["platform_differences"]
assert c["b"]["overrides"] == ["chip.modules.hbm.channel_bandwidth_gbps=75"]
ops = {r["key"]: r for r in c["by_op"]}
assert "gemm/wait_data" in ops and ops["gemm/wait_data"]["delta"] < 0, ops  # twice the HBM: less waiting for data
assert c["by_layer"] and c["speedup"] > 1.0, c["speedup"]
PYEOF
grep -q "Platform differences" cmp/compare.html && grep -q "channel_bandwidth_gbps" cmp/compare.html || fail "compare.html"
pass "--compare: platform differences, per-op and per-layer deltas, compare.{txt,json,html}"

"$SIM" --platform configs/xpu.yaml --trace samples/decode-layer.bin --out c -q --deterministic --no-verify
run_rc rc "$ANA" --compare a c -o cmp2
[[ $rc == 0 ]] || fail "--compare of two traces: exit $rc"
grep -q "WARNING: the two runs replayed DIFFERENT traces" err.txt || fail "no warning on stderr: $(cat err.txt)"
[[ $(grep -c "WARNING: the two runs replayed DIFFERENT traces" out.txt) == 2 ]] || fail "the text must open and close with the warning"
grep -q '"same_trace": false' cmp2/compare.json && grep -q 'class="warn"' cmp2/compare.html || fail "compare.json/html without the warning"
pass "--compare of two different traces warns loudly"

"$SIM" --platform configs/xpu.yaml --trace samples/gemm-1k-late-dma.bin --out late -q --deterministic --verify 1
run_rc rc "$ANA" late --apply 1 -o fixed.bin
[[ $rc == 0 ]] || fail "--apply exit $rc: $(cat err.txt)"
cmd=$(grep -A1 "re-simulate it:" out.txt | tail -1)
[[ $cmd == *"/platform/sim_main --platform late/platform.yaml --trace fixed.bin --out fixed-out" ]] || fail "--apply printed: $cmd"
eval "$cmd -q --deterministic"
"$PY" - late/stats.json fixed-out/stats.json late/analysis.json <<'PYEOF' || fail "the printed command does not re-simulate the patched trace"
import json, sys
before = json.load(open(sys.argv[1]))["simulated_time_ns"]
after = json.load(open(sys.argv[2]))["simulated_time_ns"]
top = json.load(open(sys.argv[3]))["suggestions"][0]
assert top["measured_saving_ns"] is not None and abs((before - after) - top["measured_saving_ns"]) < 1e-3, (before, after, top["measured_saving_ns"])
PYEOF
pass "--apply prints the exact sim_main command; run as printed it saves what the report measured"
echo "$checks passed, 0 failed"
