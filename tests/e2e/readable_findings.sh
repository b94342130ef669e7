#!/usr/bin/env bash
# Readable findings on a multi-layer run (analysis/names.h): a 4-layer llama2-7b decode. Every
# line of report.txt stays short (op names rolled up across layers: "layer*/... x4", never one
# name per layer); time by op is added up over layers by default and per layer with
# xpu_analyze --per-layer; analysis.json keeps the full lists (suggestions' `ops`, `dma_ops`,
# by_op per layer, by_op_merged); report.html shows the full lists collapsed (<details>) and
# the changes as instruction text; the count of what a suggestion changes is the same in the
# report, report.html and xpu_analyze --apply; and the collective advice on a 4x4 torus that
# already uses torus2d does not recommend torus2d.
# usage: bash readable_findings.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2
e2e_tools "$BUILD_DIR"
e2e_workdir readable_findings
checks=0
MAX_LINE=300

"$GEN" transformer --model llama2-7b --phase decode --batch 1 --seq 2048 --layers 4 -o "$WORK/d.bin" > /dev/null
"$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$WORK/d.bin" --out "$WORK/d" -q --deterministic --verify 2
[[ -s "$WORK/d/report.txt" ]] || fail "no report.txt"

long=$(awk -v m=$MAX_LINE 'length($0) > m { print length($0) ": " substr($0, 1, 160) }' "$WORK/d/report.txt")
[[ -z $long ]] || fail "report.txt has lines over $MAX_LINE characters: $long"
pass "every report.txt line is at most $MAX_LINE characters"

grep -q "layer\*/" "$WORK/d/report.txt" || fail "no rolled-up name (layer*/...) in report.txt"
grep -Eq "layer\*/[^ ]+ x4" "$WORK/d/report.txt" || fail "no rolled-up name with its count (layer*/... x4) in report.txt"
sed -n '/^time by op/,/^$/p' "$WORK/d/report.txt" > "$WORK/ops.txt"
grep -q "added up over layers" "$WORK/ops.txt" || fail "time by op does not say it adds up layers"
! grep -Eq "^  layer[0-9]+/" "$WORK/ops.txt" || fail "time by op lists single layers by default: $(cat "$WORK/ops.txt")"
pass "op names rolled up across layers (layer*/... x4); time by op added up over layers"

"$PY" - "$WORK/d/analysis.json" <<'PYEOF' || fail "analysis.json"
import json, re, sys
a = json.load(open(sys.argv[1]))
per_layer = [r["key"] for r in a["by_op"]]
merged = a["by_op_merged"]
assert any(k.startswith("layer3/") for k in per_layer), "by_op is not per layer"
assert all(r["layers"] == 4 for r in merged if r["key"].startswith("layer*/")), merged[:3]
assert abs(sum(r["total_ns"] for r in merged) - sum(r["total_ns"] for r in a["by_op"])) < 1e-3 * sum(r["total_ns"] for r in a["by_op"])
# Ties in numeric order: layer1 before layer2, ... (by_layer: all four layers take about the same time).
for key in ("by_layer", "by_op"):
    v = a[key]
    for x, y in zip(v, v[1:]):
        if x["total_ns"] == y["total_ns"]:
            nx = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", x["key"])]
            ny = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", y["key"])]
            assert nx <= ny, "%s: tie not in numeric order: %s before %s" % (key, x["key"], y["key"])
sug = a["suggestions"]
assert sug, "no suggestion"
full = [s for s in sug if len(s["ops"]) > 1]
assert full, "no suggestion lists its ops"
for s in sug:
    assert len(s["finding"]) <= 240, "finding too long (%d): %s" % (len(s["finding"]), s["finding"])
    assert s["ops"] == sorted(set(s["ops"]), key=lambda k: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", k)]), s["ops"]
    for o in s["ops"] + s["dma_ops"]:
        assert "*" not in o, "ops must be the full names: %s" % o
    if any(o.startswith("layer3/") for o in s["ops"]):
        assert "layer3/" not in s["where"], "where lists a single layer: %s" % s["where"]
print("%d suggestions; full lists: %s" % (len(sug), [(s["kind"], len(s["ops"]), len(s["dma_ops"])) for s in sug]))
PYEOF
pass "analysis.json: by_op per layer, by_op_merged, full op lists (ops, dma_ops), short findings"

h="$WORK/d/report.html"
grep -q "<details><summary>ops (" "$h" || fail "report.html has no collapsible list of ops"
grep -Eq "(move|delete) chip0.core0 #[0-9]+ [a-z]+ " "$h" || fail "report.html's changes are not instruction text"
! grep -Eq "move chip0.core0 #[0-9]+ before #[0-9]+<" "$h" || fail "report.html's changes are bare indices"
grep -q " units</text>" "$h" || fail "Time per kind of unit does not count units"
pass "report.html: full lists in <details>, changes as instruction text, units counted as units"

# The count of what the top suggestion changes: the same in --apply's message and the report.
"$ANA" "$WORK/d" --apply 1 -o "$WORK/p.bin" > "$WORK/apply.txt"
n=$(grep -Eo "[0-9]+ instructions? change" "$WORK/apply.txt" | head -1 | grep -Eo "^[0-9]+" || true)
if [[ -n $n ]]; then
    grep -q "$n instructions change place" "$WORK/d/report.txt" || fail "--apply says $n change place, the report does not: $(cat "$WORK/apply.txt")"
    grep -q "$n instructions change place" "$h" || fail "--apply says $n change place, report.html does not"
    pass "the report, report.html and --apply count $n instructions that change place"
fi

# --per-layer: time by op per layer.
"$ANA" "$WORK/d" -q --no-verify --per-layer
sed -n '/^time by op/,/^$/p' "$WORK/d/report.txt" > "$WORK/ops.txt"
grep -Eq "^  layer[0-9]+/" "$WORK/ops.txt" || fail "--per-layer: time by op not per layer: $(cat "$WORK/ops.txt")"
grep -q "^  layer\*/" "$WORK/ops.txt" && fail "--per-layer: time by op still added up"
pass "xpu_analyze --per-layer: time by op per layer"

# The collective advice never names the algorithm the trace uses.
"$GEN" collective --op all-reduce --chips 16 --dims 4x4 --algo torus2d --bytes 4194304 --chunks 4 -o "$WORK/t.bin" > /dev/null
"$SIM" --platform "$SOURCE_DIR/configs/xpu-torus4x4.yaml" --trace "$WORK/t.bin" --out "$WORK/t" -q --deterministic --no-verify
"$PY" - "$WORK/t/analysis.json" <<'PYEOF' || fail "collective advice"
import json, sys
for s in json.load(open(sys.argv[1]))["suggestions"]:
    if s["kind"] == "collective_algorithm":
        assert "--algo torus2d" not in s["action"], "recommends the algorithm in use: %s" % s["action"]
        print("advice on torus2d: %s" % s["action"])
PYEOF
pass "the collective advice on a torus2d all-reduce does not recommend torus2d"
echo "all $checks checks passed"
