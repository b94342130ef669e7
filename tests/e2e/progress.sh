#!/usr/bin/env bash
# Feedback on long work (issue 14, item 5): progress lines with percent and ETA on stderr for the
# simulation and each phase of the analysis (reading the log, analysing, writing the reports),
# in sim_main and xpu_analyze; nothing on stderr for a short run; and after the analysis the
# process's true peak RSS (the summary's figure is the simulation's, before the analysis ran).
# XPU_PROGRESS_SECONDS=0 makes every update print (traces/progress.h) so that a short run shows them.
#   progress.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
src=$(cd "$2" && pwd)
e2e_workdir progress
cd "$WORK"
"$GEN" gemm --m 1024 --n 1024 --k 2048 -o g.bin >/dev/null

# A short run: stderr stays empty (it is for errors).
"$SIM" --platform "$src/configs/xpu.yaml" --trace g.bin --out quiet-out --no-verify >out0.txt 2>err0.txt
[[ ! -s err0.txt ]] || fail "a short run printed on stderr: $(head -3 err0.txt)"
pass "a short run: nothing on stderr"

XPU_PROGRESS_SECONDS=0 "$SIM" --platform "$src/configs/xpu.yaml" --trace g.bin --out o --no-verify >out.txt 2>err.txt
cat err.txt
pct='\([0-9]+%\), [0-9.]+ s, ETA [0-9.]+ s$'
grep -Eq "^sim_main: simulating: [0-9]+ of [0-9]+ instructions retired, [0-9.]+ us simulated $pct" err.txt ||
    fail "no simulation progress line with percent and ETA"
pass "simulation: percent and ETA"
grep -Eq "^sim_main: analysis: reading the transaction log $pct" err.txt || fail "no progress of the log's reading"
grep -Eq "^sim_main: analysis: analysing: .* $pct" err.txt || fail "no progress of the analysis"
grep -Eq "^sim_main: analysis: writing the reports: .* $pct" err.txt || fail "no progress of the writers"
pass "every analysis phase: percent and ETA"

# The true peak: after the analysis, and at least the summary's (the simulation's) figure.
summary=$(sed -nE 's/^host .*peak RSS ([0-9.]+) MiB\)$/\1/p' out.txt)
final=$(sed -nE 's/^peak RSS +([0-9.]+) MiB \(the whole process: simulation and analysis\)$/\1/p' out.txt)
[[ -n $summary && -n $final ]] || fail "peak RSS lines missing: $(grep -i rss out.txt)"
[[ $(tail -1 out.txt) == "peak RSS"* ]] || fail "the process's peak RSS is not the last line of the summary"
$PY -c "import sys; sys.exit(0 if float('$final') >= float('$summary') else 1)" || fail "final peak $final MiB < the simulation's $summary MiB"
pass "the process's peak RSS after the analysis ($final MiB >= $summary MiB during the simulation)"

XPU_PROGRESS_SECONDS=0 "$ANA" o --no-verify >/dev/null 2>err2.txt
grep -Eq "^xpu_analyze: analysis: analysing: .* $pct" err2.txt || fail "xpu_analyze: no progress lines: $(head -3 err2.txt)"
XPU_PROGRESS_SECONDS=0 "$ANA" o --no-verify --quiet >/dev/null 2>err3.txt
[[ ! -s err3.txt ]] || fail "xpu_analyze --quiet printed progress"
pass "xpu_analyze: progress lines, none with --quiet"
