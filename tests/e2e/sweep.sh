#!/usr/bin/env bash
# xpu_sweep on the local process pool (docs/sweep.md): a 2 traces x 2 x 2 grid; results.csv has
# one row per point in point order, byte-identical whatever the pool's width (so whatever the
# order the points finished in); speedups against the baseline; report.html with its two charts;
# a point that fails is a row with its status and error, not a lost sweep (exit 10); --resume
# runs only what is not complete; a second sweep into the same folder is refused; bad specs get
# one message naming file:line:col or the point.
# usage: bash sweep.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
SRC=$2
SWEEP="$1/platform/xpu_sweep"
e2e_workdir sweep
cd "$WORK"
mkdir t
cp "$SRC/traces/samples/gemm-1k.bin" "$SRC/traces/samples/gemm-1k-late-dma.bin" t/
cat > spec.yaml <<YAML
traces: [t/gemm-1k.bin, t/gemm-1k-late-dma.bin]
platforms: [$SRC/configs/xpu.yaml]
grid:
  chip.modules.hbm.channel_bandwidth_gbps: [37.5, 75]
  chip.clock_ghz: [1.05, 2.1]
YAML
run_rc() {  # run_rc VAR CMD...: exit code into VAR, stderr into err.txt
    local __v=$1
    shift
    set +e
    "$@" > out.txt 2> err.txt
    printf -v "$__v" '%s' $?
    set -e
}

run_rc rc "$SWEEP" spec.yaml --out s1 -j 2
[[ $rc == 0 ]] || fail "sweep exit $rc: $(cat err.txt)"
grep -q "xpu_sweep: 4 of 8 points done (50%), 0 not ok, .* s, ETA .* s" err.txt || fail "no progress with percent and ETA: $(cat err.txt)"
"$SWEEP" spec.yaml --out s2 -j 1 -q
cmp s1/results.csv s2/results.csv || fail "results.csv depends on the pool's width"
"$PY" - s1/results.csv "$SRC" <<'PYEOF' || fail "results.csv"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["point"] for r in rows] == ["%04d" % i for i in range(8)], [r["point"] for r in rows]
assert [(r["trace"], r["chip.modules.hbm.channel_bandwidth_gbps"], r["chip.clock_ghz"]) for r in rows[:4]] == [
    ("t/gemm-1k.bin", "37.5", "1.05"), ("t/gemm-1k.bin", "37.5", "2.1"), ("t/gemm-1k.bin", "75", "1.05"), ("t/gemm-1k.bin", "75", "2.1")]
for r in rows:
    assert r["status"] == "ok" and r["error"] == "", r
    st = json.load(open("s1/" + r["folder"] + "/stats.json"))
    assert float(r["simulated_time_ns"]) == st["simulated_time_ns"], (r, st["simulated_time_ns"])
    assert float(r["core_busy_ns"]) > 0 and float(r["core_data_dependency_ns"]) > 0, r
# Speedups against each trace's first point; twice the clock is faster.
for base in (0, 4):
    assert float(rows[base]["speedup"]) == 1.0
    assert float(rows[base + 1]["speedup"]) > 1.2, rows[base + 1]
    t0 = float(rows[base]["simulated_time_ns"])
    for r in rows[base:base + 4]:
        assert abs(float(r["speedup"]) - t0 / float(r["simulated_time_ns"])) < 1e-6, r
PYEOF
pass "8 points: results.csv in point order, identical with -j 1 and -j 2, speedups against the baseline"

grep -q "Speedup per point" s1/report.html && grep -q "Stall mix per point" s1/report.html && [[ $(grep -c "<rect" s1/report.html) -ge 16 ]] \
    || fail "report.html without its charts"
! grep -Eq '(src|href)="(http|//)' s1/report.html || fail "report.html loads something from outside"
pass "report.html: speedup and stall mix per point, self-contained"

# A broken point: a truncated copy of a trace. Its rows say why; the sweep still writes everything.
head -c 200 t/gemm-1k-late-dma.bin > t/broken.bin
sed 's#t/gemm-1k-late-dma.bin#t/broken.bin#' spec.yaml > spec2.yaml
run_rc rc "$SWEEP" spec2.yaml --out s3 -q
[[ $rc == 10 ]] || fail "a sweep with failed points: exit $rc, expected 10"
"$PY" - s3/results.csv <<'PYEOF' || fail "failed points' rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8
assert all(r["status"] == "ok" for r in rows[:4]), rows[:4]
for r in rows[4:]:
    assert r["status"] == "failed" and r["error"].startswith("exit 4: sim_main: ") and "broken.bin" in r["error"], r
    assert r["simulated_time_ns"] == "" and r["speedup"] == "", r
PYEOF
pass "a point that fails is a row with its status and error (exit 10)"

cp t/gemm-1k-late-dma.bin t/broken.bin
stamp=$(stat -c %Y.%N s3/runs/0000.rc)
sleep 1
run_rc rc "$SWEEP" spec2.yaml --out s3 --resume
[[ $rc == 0 ]] || fail "--resume exit $rc: $(cat err.txt)"
grep -q "xpu_sweep: 8 points, 4 to run" err.txt || fail "--resume must run the 4 failed points only: $(cat err.txt)"
[[ $(stat -c %Y.%N s3/runs/0000.rc) == "$stamp" ]] || fail "--resume re-ran a complete point"
"$PY" - s3/results.csv s1/results.csv <<'PYEOF' || fail "--resume results"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:])
for x, y in zip(a, b):
    assert x["status"] == "ok" and x["simulated_time_ns"] == y["simulated_time_ns"], (x, y)
PYEOF
run_rc rc "$SWEEP" spec2.yaml --out s3
[[ $rc == 2 ]] && grep -q "holds a sweep already: --resume" err.txt || fail "a second sweep into s3: exit $rc, $(cat err.txt)"
run_rc rc "$SWEEP" spec.yaml --out s3 --resume
[[ $rc == 2 ]] && grep -q "commands.txt: the sweep there ran other commands" err.txt || fail "--resume with another spec: exit $rc, $(cat err.txt)"
pass "--resume runs only the points not complete; another sweep into the folder is refused"

printf 'traces: [t/gemm-1k.bin]\nplatforms: [%s/configs/xpu.yaml]\ncolour: blue\n' "$SRC" > bad1.yaml
run_rc rc "$SWEEP" bad1.yaml --out b1
[[ $rc == 3 ]] && grep -q "^xpu_sweep: bad1.yaml:3:1: colour: unknown key (known: traces, platforms, grid, sim_args, baseline)$" err.txt \
    || fail "unknown key: exit $rc, $(cat err.txt)"
printf 'traces: [t/nothere.bin]\nplatforms: [%s/configs/xpu.yaml]\n' "$SRC" > bad2.yaml
run_rc rc "$SWEEP" bad2.yaml --out b2
[[ $rc == 3 ]] && grep -q "^xpu_sweep: bad2.yaml:1:10: traces\[0\]: no such file: t/nothere.bin" err.txt || fail "missing trace: exit $rc, $(cat err.txt)"
printf 'traces: [t/gemm-1k.bin]\nplatforms: [%s/configs/xpu.yaml]\ngrid:\n  chip.modules.hbm.channel_bandwith_gbps: [1, 2]\n' "$SRC" > bad3.yaml
run_rc rc "$SWEEP" bad3.yaml --out b3
[[ $rc == 3 ]] && grep -q "^xpu_sweep: bad3.yaml: point 0000 (platform .*xpu.yaml --set chip.modules.hbm.channel_bandwith_gbps=1) is not a valid platform: .*channel_bandwith_gbps" err.txt \
    || fail "misspelt grid key: exit $rc, $(cat err.txt)"
printf 'traces: [t/gemm-1k.bin]\nplatforms: [%s/configs/xpu.yaml]\nsim_args: [--out, x]\n' "$SRC" > bad4.yaml
run_rc rc "$SWEEP" bad4.yaml --out b4
[[ $rc == 3 ]] && grep -q "bad4.yaml:3:12: sim_args\[0\]: '--out' is set by the sweep itself" err.txt || fail "sim_args --out: exit $rc, $(cat err.txt)"
[[ ! -e b1 && ! -e b2 && ! -e b3 && ! -e b4 ]] || fail "a bad spec left a sweep folder"
pass "bad specs: one message naming file:line:col (or the point), exit 3, nothing written"
echo "$checks passed, 0 failed"
