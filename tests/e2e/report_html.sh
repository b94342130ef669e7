#!/usr/bin/env bash
# report.html in a real browser: headless Chromium renders the page to a PNG (1400x3000), and
# the PNG must show the charts: many distinct colours, the colour of every cause of the legend,
# and the bars' colours over large areas (not only in the legend's swatches).
# usage: bash report_html.sh REPORT.html|OUTDIR     check that report (OUTDIR/report.html)
#        bash report_html.sh BUILD_DIR SOURCE_DIR   (ctest) the hand-built sample's report, where
#                                                   every cause has time, and the report of a real
#                                                   run of sim_main when the build has one
# Exits 77 (skipped) only when chromium is not installed (scripts/setup.sh installs it).
# KEEP_PNG=DIR keeps the screenshots there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ $# -ne 1 && $# -ne 2 ]]; then
    echo "usage: $0 REPORT.html|OUTDIR  or  $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
e2e_workdir report_html
checks=0

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$CHROMIUM" ]]; then
    echo "SKIP: chromium is not installed (scripts/setup.sh installs the Debian package chromium)" >&2
    exit 77
fi
[[ -x "$PY" ]] || fail "no $PY"

# shot REPORT PNG: headless Chromium renders REPORT (from disk, no network) into PNG.
shot() {
    local report=$1 png=$2 abs rc=0
    abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
    rm -f "$png"
    timeout 180 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-color-profile=srgb \
        --no-first-run --no-default-browser-check --disable-extensions --disable-background-networking --disable-dev-shm-usage \
        --user-data-dir="$WORK/profile" --window-size=1400,3000 --screenshot="$png" "file://$abs" \
        >"$WORK/chromium.txt" 2>&1 || rc=$?
    if [[ $rc -ne 0 || ! -s "$png" ]]; then
        cat "$WORK/chromium.txt" >&2
        return 1
    fi
    [[ -n "${KEEP_PNG:-}" ]] && mkdir -p "$KEEP_PNG" && cp "$png" "$KEEP_PNG/"
    return 0
}

# PNG_CHECK PNG_JSON MIN_BAR NAME: judges png_colors.py's output (see check_report).
PNG_CHECK=$(cat <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
min_bar, name = int(sys.argv[2]), sys.argv[3]
problems = []
if (d["width"], d["height"]) != (1400, 3000):
    problems.append("size %dx%d, expected 1400x3000" % (d["width"], d["height"]))
if d["distinct_colors"] < 200:
    problems.append("only %d distinct colours" % d["distinct_colors"])
missing = [c for c, n in d["colors"].items() if n["exact"] < 100]
if missing:
    problems.append("legend colours not drawn: %s" % missing)
big = [c for c, n in d["colors"].items() if n["exact"] >= 400]
if len(big) < min_bar:
    problems.append("only %d cause colours over >= 400 pixels (%s), expected %d" % (len(big), big, min_bar))
for p in problems:
    print("%s: %s" % (name, p), file=sys.stderr)
print("%d distinct colours, %d cause colours as bars; pixels per cause colour: %s" % (d["distinct_colors"], len(big),
      ", ".join("%s %d" % (c, n["exact"]) for c, n in d["colors"].items())))
sys.exit(1 if problems else 0)
EOF
)

# check_report REPORT NAME MIN_BAR_CAUSES: the page is well formed and self-contained; its
# screenshot is 1400x3000, has >= 200 colours, every legend colour, and >= MIN_BAR_CAUSES cause
# colours over >= 400 pixels each (a legend swatch is 14x14 = 196).
check_report() {
    local report=$1 name=$2 min_bar=$3 png="$WORK/$2.png"
    [[ -s "$report" ]] || fail "$name: no report at $report"
    "$PY" "$HERE/check_report_html.py" "$report" >"$WORK/html.json" || fail "$name: $report is not a well-formed, self-contained page"
    pass "$name: report.html is well formed and self-contained ($(wc -c <"$report") bytes)"
    local colors
    colors=$("$PY" -c 'import json,sys; print(" ".join(x["color"] for x in json.load(open(sys.argv[1]))["legend"]))' "$WORK/html.json")
    shot "$report" "$png" || fail "$name: chromium could not render $report"
    pass "$name: headless Chromium rendered it ($(wc -c <"$png") bytes of PNG)"
    # shellcheck disable=SC2086
    "$PY" "$HERE/png_colors.py" "$png" $colors >"$WORK/png.json" || fail "$name: cannot read the screenshot"
    local summary
    summary=$("$PY" -c "$PNG_CHECK" "$WORK/png.json" "$min_bar" "$name") || fail "$name: the screenshot does not show the charts"
    pass "$name: the screenshot shows the charts: $summary"
}

if [[ $# -eq 1 ]]; then
    report=$1
    [[ -d "$report" ]] && report="$report/report.html"
    check_report "$report" "$(basename "$(dirname "$report")")" "${MIN_BAR_CAUSES:-3}"
    echo "$checks passed, 0 failed"
    exit 0
fi

BUILD_DIR=$1
SOURCE_DIR=$2
SAMPLE="$BUILD_DIR/tests/analysis_sample"
SIM="$BUILD_DIR/platform/sim_main"
[[ -x "$SAMPLE" ]] || fail "no executable at $SAMPLE"

# The sample: every cause has time in the per-unit chart, so every cause colour is a bar.
"$SAMPLE" "$WORK/sample" || fail "analysis_sample failed"
check_report "$WORK/sample/report.html" sample 9

# A real run, when sim_main analyses its runs (it writes report.html unless --no-analysis).
if [[ -x "$SIM" ]] && "$SIM" --help 2>&1 | grep -q -- '--no-analysis'; then
    rc=0
    "$SIM" --platform "$SOURCE_DIR/configs/xpu.yaml" --trace "$SOURCE_DIR/traces/samples/gemm-1k.bin" \
        --out "$WORK/gemm" --deterministic --quiet >"$WORK/sim.txt" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { cat "$WORK/sim.txt" >&2; fail "sim_main on gemm-1k exited $rc"; }
    check_report "$WORK/gemm/report.html" gemm-1k 3
else
    echo "note: $SIM does not analyse its runs yet (no --no-analysis option): only the sample's report was checked"
fi

echo "$checks passed, 0 failed"
