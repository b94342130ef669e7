#!/usr/bin/env bash
# The DRAM model (models/dram.h) side by side with DRAMSys on the same request streams
# (docs/validation.md, "HBM: the DRAM protocol model against DRAMSys").
#
#   scripts/dram_vs_dramsys.sh DRAMSYS_BINARY DRAM_REPLAY_BINARY OUTDIR [CHANNELS...]
#
# DRAMSYS_BINARY: DRAMSys's command-line simulator built outside this repository, with a local
# patch to its Simple arbiter that prints `xpusim_arbiter requests N reads R lat_ps L
# last_end_req_ps T`: the sum over reads of controller END_REQ (queued) -> controller BEGIN_RESP
# (data back), and the time the last request was queued (docs/validation.md). With
# XPUSIM_HBM2_ONE_CMD_BUS=1 in the environment the patched DRAMSys gives HBM2 one command bus
# (a diagnostic run, see docs). DRAM_REPLAY_BINARY: build/tests/dram_replay.
# DRAMSys: HBM2 with our HBM2 preset's timings (Ramulator's HBM2_2Gbps, tBL 2), open page, no
# refresh, RoBaRaCoCh bits, read and write buffers of 33 per channel with the write-drain
# watermarks of the Ramulator run (GrpFrFcfsWm: drain above 25 writes, back to reads at 6 or
# fewer: FR-FCFS within the mode), Simple arbiter, no arbitration delays; saturating patterns
# dealt round-robin to one STL player per channel (request i to player i mod CHANNELS at cycle
# i / 8: 8 requests offered per ns, as Ramulator's frontend at clock_ratio 8; a player behind
# its schedule offers its next request when the last is accepted; one player per channel
# so that the players' response path, one response per player per cycle or two, does not hold
# back the controllers), low-load ones in one player, one request every 100 ns.
# XPUSIM_ARBITER_NO_GAP=1 (diagnostic, patched DRAMSys): the arbiter forwards a queued request
# to its channel at once instead of a cycle after the last was accepted.
# Our side (dram_replay) is set to match: `--command-bus split` (DRAMSys's HBM2, JESD235), or
# `shared` under XPUSIM_HBM2_ONE_CMD_BUS; `--frontend dramsys` (one player per channel, the
# arbiter's one request per channel every 2 cycles when they queue), or `dramsys-nogap` under
# XPUSIM_ARBITER_NO_GAP. XPUSIM_OURS_FRONTEND=ramulator drives ours with Ramulator's one
# in-order stream instead (diagnostic: what the frontend alone changes).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 DRAMSYS_BINARY DRAM_REPLAY_BINARY OUTDIR [CHANNELS...]" >&2; exit 2; }
ds=$1 ours=$2 out=$3
shift 3
chans=("$@")
[ ${#chans[@]} -gt 0 ] || chans=(8 16)
[ -x "$ds" ] || { echo "$0: $ds: not an executable" >&2; exit 2; }
[ -x "$ours" ] || { echo "$0: $ours: not an executable" >&2; exit 2; }
mkdir -p "$out"/{memspec,addressmapping,mcconfig,simconfig,traces}
bus=split frontend=dramsys
[ -z "${XPUSIM_HBM2_ONE_CMD_BUS:-}" ] || bus=shared
[ -z "${XPUSIM_ARBITER_NO_GAP:-}" ] || frontend=dramsys-nogap
frontend=${XPUSIM_OURS_FRONTEND:-$frontend}
echo "xpusim: --command-bus $bus --frontend $frontend" >&2
patterns=(seq32 seq64 rand32 block512 block4k mix21 mixrand21 streams4 lowseq lowrand)

cat > "$out/mcconfig/xpusim.json" <<'J'
{"mcconfig": {"PagePolicy": "Open", "Scheduler": "GrpFrFcfsWm", "SchedulerBuffer": "ReadWrite",
 "RequestBufferSizeRead": 33, "RequestBufferSizeWrite": 33, "HighWatermark": 25, "LowWatermark": 6, "CmdMux": "Oldest", "RespQueue": "Fifo", "RefreshPolicy": "NoRefresh",
 "RefreshMaxPostponed": 0, "RefreshMaxPulledin": 0, "PowerDownPolicy": "NoPowerDown",
 "Arbiter": "Simple", "MaxActiveTransactions": 128, "ArbitrationDelayFw": 0, "ArbitrationDelayBw": 0}}
J
cat > "$out/simconfig/xpusim.json" <<'J'
{"simconfig": {"AddressOffset": 0, "CheckTLM2Protocol": false, "DatabaseRecording": false,
 "Debug": false, "EnableWindowing": false, "PowerAnalysis": false, "SimulationName": "xpusim",
 "SimulationProgressBar": false, "StoreMode": "NoStorage", "UseMalloc": false, "WindowSize": 1000}}
J

for pat in "${patterns[@]}"; do "$ours" --trace "$pat" "$out/$pat.trace"; done

printf '| pattern | channels | xpusim GB/s | DRAMSys GB/s | diff | xpusim latency ns | DRAMSys latency ns | diff | xpusim M req/s | DRAMSys M req/s | speed |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for ch in "${chans[@]}"; do
  cb=$(python3 -c "import math; print(int(math.log2($ch)))")
  python3 - "$out/memspec/hbm2_$ch.json" "$out/addressmapping/robaracoch_$ch.json" "$ch" "$cb" <<'PY'
import json, sys
ms, am, ch, cb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Our HBM2 preset (models/dram.cpp kPresets "HBM2"): 2 pseudo-channels of 4 x 4 banks, 32768 rows
# of 1 KiB (128 columns of 64 bits), 32 B per burst in 2 cycles of 1 ns.
json.dump({"memspec": {"memoryId": "xpusim-HBM2", "memoryType": "HBM2",
  "memarchitecturespec": {"burstLength": 4, "dataRate": 2, "nbrOfBankGroups": 4, "nbrOfBanks": 16,
    "nbrOfColumns": 128, "nbrOfStacks": 1, "nbrOfPseudoChannels": 2, "nbrOfRows": 32768, "width": 64,
    "nbrOfDevices": 1, "nbrOfChannels": ch},
  "memtimingspec": {"tCK": 1000, "RL": 7, "WL": 2, "RCDRD": 7, "RCDWR": 7, "RP": 7, "RAS": 17, "RC": 19,
    "WR": 8, "RTP": 3, "CCDS": 1, "CCDL": 2, "CCDR": 2, "RRDS": 2, "RRDL": 3, "WTRS": 3, "WTRL": 4,
    "RTW": 9, "FAW": 15, "RFC": 350, "REFI": 3900, "RFCSB": 160, "REFISB": 244, "RREFD": 8,
    "DQSCK": 0, "PL": 0, "CKE": 8, "XP": 8, "XS": 216}}}, open(ms, "w"), indent=1)
# RoBaRaCoCh from the lowest bits: 32 B access (3 byte bits + 2 burst column bits), channel,
# the other 5 column bits, pseudo-channel, bank, bank group, row.
b = 5
def take(n):
    global b
    r = list(range(b, b + n)); b += n; return r
chb = take(cb); col = [3, 4] + take(5); pc = take(1); ba = take(2); bg = take(2); row = take(15)
json.dump({"addressmapping": {"BYTE_BIT": [0, 1, 2], "CHANNEL_BIT": chb, "COLUMN_BIT": col,
  "PSEUDOCHANNEL_BIT": pc, "BANK_BIT": ba, "BANKGROUP_BIT": bg, "ROW_BIT": row}}, open(am, "w"), indent=1)
PY
  for pat in "${patterns[@]}"; do
    k=$ch; case $pat in low*) k=1 ;; esac
    cfg=$out/${pat}_$ch.json
    python3 - "$cfg" "$out/$pat.trace" "$out/traces" "$pat" "$ch" "$k" <<'PY'
import json, sys
cfg, src, d, pat, ch, k = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
low = pat.startswith("low")
fs = [open(f"{d}/{pat}_{ch}_{j}.stl", "w") for j in range(k)]
for i, line in enumerate(open(src)):
    op, a = line.split()
    fs[i % k].write(f"{100 * i if low else i // 8}:\t{'read' if op == 'LD' else 'write'}\t0x{int(a):x}\n")
for f in fs: f.close()
json.dump({"simulation": {"addressmapping": f"robaracoch_{ch}.json", "mcconfig": "xpusim.json",
  "memspec": f"hbm2_{ch}.json", "simconfig": "xpusim.json", "simulationid": f"{pat}_{ch}",
  "tracesetup": [{"clkMhz": 1000, "name": f"{pat}_{ch}_{j}.stl"} for j in range(k)]}}, open(cfg, "w"))
PY
    "$ds" "$cfg" "$out" > "$out/d_${pat}_$ch.out" 2> "$out/d_${pat}_$ch.err"
    "$ours" "$pat" "$ch" --command-bus "$bus" --frontend "$frontend" > "$out/x_${pat}_$ch.out"
    rm -f "$out/traces/${pat}_${ch}_"*.stl
    python3 - "$out/d_${pat}_$ch.out" "$out/d_${pat}_$ch.err" "$out/x_${pat}_$ch.out" "$out/$pat.trace" "$pat" "$ch" <<'PY'
import re, sys
dout, derr, xout, trace, pat, ch = sys.argv[1:]
n = sum(1 for _ in open(trace))
st = re.search(r"xpusim_arbiter requests (\d+) reads (\d+) lat_ps ([0-9.]+) last_end_req_ps ([0-9.]+)", open(derr).read())
if not st: sys.exit(f"{derr}: no xpusim_arbiter line (is DRAMSys built with the patch?)")
if int(st.group(1)) != n: sys.exit(f"{derr}: {st.group(1)} requests queued, the trace has {n}")
reads = int(st.group(2))
dbw = n * 32 / (float(st.group(4)) / 1000)
dlat = float(st.group(3)) / 1000 / reads
secs = float(re.search(r"Simulation took ([0-9.]+) seconds", open(dout).read()).group(1))
x = dict(zip(*[iter(open(xout).read().split())] * 2))
xbw, xlat, xrps = float(x["bandwidth_gbps"]), float(x["mean_read_latency_ns"]), float(x["requests_per_s"])
drps = n / secs
print(f"| {pat} | {ch} | {xbw:.1f} | {dbw:.1f} | {100*(xbw/dbw-1):+.1f}% | {xlat:.1f} | {dlat:.1f} | {100*(xlat/dlat-1):+.1f}% "
      f"| {xrps/1e6:.2f} | {drps/1e6:.3f} | {xrps/drps:.0f}x |")
PY
  done
done
