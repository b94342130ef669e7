#!/usr/bin/env bash
# xpu_sweep --slurm on a real Slurm: starts munged, slurmctld and slurmd on localhost in a
# temporary folder (their own socket, key, ports, state and config; nothing of the machine's
# is used or changed), submits a 2 x 2 sweep as a job array and waits for it; then a second
# sweep with --no-wait, collected by --resume. Both results.csv must equal the local pool's.
# Where Slurm cannot run (no slurm-wlm or munge installed, daemons that do not come up), the
# test says why and exits 77, which ctest reports as skipped: never a pass without a real run.
# usage: bash sweep_slurm.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
SRC=$2
SWEEP="$1/platform/xpu_sweep"
skip() {
    echo "SKIPPED: $* (scripts/setup.sh installs slurm-wlm and munge)" >&2
    exit 77
}
for b in munged munge slurmctld slurmd sbatch squeue sinfo; do
    command -v "$b" > /dev/null || [[ -x /usr/sbin/$b ]] || skip "no $b on this machine"
done
PATH="$PATH:/usr/sbin"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sweep_slurm_e2e.XXXXXX")
chmod 755 "$WORK"
pids=()
cleanup() {
    # Only the daemons this test started, by their process ids.
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    [[ ! -f $WORK/munged.pid ]] || kill "$(cat "$WORK/munged.pid")" 2> /dev/null || true
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

# munge: a key of our own and a socket in the work folder.
dd if=/dev/urandom of=munge.key bs=1024 count=1 status=none
chmod 400 munge.key
munged --socket="$WORK/munge.sock" --key-file="$WORK/munge.key" --pid-file="$WORK/munged.pid" \
    --log-file="$WORK/munged.log" --seed-file="$WORK/munged.seed" --force 2> munged.err || skip "munged does not start: $(cat munged.err)"
for _ in $(seq 50); do [[ -S munge.sock ]] && break; sleep 0.1; done
munge -n -S "$WORK/munge.sock" | unmunge -S "$WORK/munge.sock" > /dev/null 2>&1 || skip "munge does not work here: $(tail -3 munged.log)"

# Two free TCP ports for slurmctld and slurmd.
read -r p1 p2 < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
mkdir -p state spool
cat > slurm.conf <<CONF
ClusterName=xpusimtest
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge.sock
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
SlurmctldPort=$p1
SlurmdPort=$p2
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=xpusim Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$WORK/slurm.conf"
slurmctld -D -f "$WORK/slurm.conf" > slurmctld.out 2>&1 &
pids+=($!)
slurmd -D -f "$WORK/slurm.conf" > slurmd.out 2>&1 &
pids+=($!)
up=0
for _ in $(seq 100); do
    if sinfo -h -o %t 2> /dev/null | grep -q idle; then up=1; break; fi
    sleep 0.2
done
[[ $up == 1 ]] || skip "slurmctld/slurmd did not come up: $(tail -3 slurmctld.log slurmd.log slurmctld.out slurmd.out 2> /dev/null | tr '\n' ' ')"
pass "munged, slurmctld and slurmd up on localhost (ports $p1, $p2)"

cat > spec.yaml <<YAML
traces: [$SRC/traces/samples/gemm-1k-late-dma.bin]
platforms: [$SRC/configs/xpu.yaml]
grid:
  chip.modules.hbm.channel_bandwidth_gbps: [37.5, 75]
  chip.clock_ghz: [1.05, 2.1]
YAML
"$SWEEP" spec.yaml --out local -q
"$SWEEP" spec.yaml --out slurm --slurm --partition xpusim --time 10:00 2> slurm.err || fail "--slurm: $(cat slurm.err)"
grep -q "submitted Slurm job array" slurm.err && grep -q "4 of 4 points done (100%)" slurm.err || fail "--slurm progress: $(cat slurm.err)"
grep -q "^#SBATCH --partition=xpusim$" slurm/sweep.sbatch && grep -q "^#SBATCH --time=10:00$" slurm/sweep.sbatch || fail "sbatch options"
ls slurm/runs/slurm-*_3.out > /dev/null || fail "no Slurm output files: the points did not run under Slurm"
cmp local/results.csv slurm/results.csv || fail "results.csv of the Slurm sweep differs from the local one"
"$PY" - slurm/results.csv <<'PYEOF' || fail "results.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4 and all(r["status"] == "ok" for r in rows), rows
assert float(rows[3]["speedup"]) > 1.2, rows[3]
PYEOF
pass "a 2 x 2 sweep as a Slurm job array: results.csv identical to the local pool's"

"$SWEEP" spec.yaml --out later --slurm --no-wait 2> nowait.err || fail "--no-wait: $(cat nowait.err)"
grep -q "collect with: .* --slurm --resume" nowait.err || fail "--no-wait does not say how to collect: $(cat nowait.err)"
[[ ! -e later/results.csv ]] || fail "--no-wait wrote results before the points ran"
"$SWEEP" spec.yaml --out later --slurm --resume 2> resume.err || fail "--resume: $(cat resume.err)"
grep -q "waiting for Slurm job" resume.err || grep -q "0 to run" resume.err || fail "--resume: $(cat resume.err)"
cmp local/results.csv later/results.csv || fail "results.csv collected by --resume differs"
pass "--slurm --no-wait, then --resume collects the same results.csv"
echo "$checks passed, 0 failed"
