#!/usr/bin/env bash
# The DRAM model (models/dram.h) side by side with Ramulator 2 on the same request streams
# (docs/validation.md, "HBM: the DRAM protocol model against Ramulator 2").
#
#   scripts/dram_vs_ramulator.sh RAMULATOR2_BINARY DRAM_REPLAY_BINARY OUTDIR [CHANNELS...]
#
# RAMULATOR2_BINARY: Ramulator 2 built outside this repository, taking `CONFIG.yaml` as its
# argument and printing `loop_seconds S` on stderr around its simulation loop (a 3-line change
# to its src/main.cpp, described in docs/validation.md). DRAM_REPLAY_BINARY: build/tests/dram_replay.
# Writes the traces, configurations and both outputs under OUTDIR and prints the table.
# Ramulator: HBM2 (org HBM2_8Gb, channel_width 128, timing HBM2_2Gbps with nBL 2), Generic
# controller, FRFCFS, AllBank refresh, OpenRowPolicy, RoBaRaCoCh, LoadStoreTrace frontend.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 RAMULATOR2_BINARY DRAM_REPLAY_BINARY OUTDIR [CHANNELS...]" >&2; exit 2; }
ram=$1 ours=$2 out=$3
shift 3
chans=("$@")
[ ${#chans[@]} -gt 0 ] || chans=(8 16)
[ -x "$ram" ] || { echo "$0: $ram: not an executable" >&2; exit 2; }
[ -x "$ours" ] || { echo "$0: $ours: not an executable" >&2; exit 2; }
mkdir -p "$out"

# Traces: the patterns of tests/bench/dram_patterns.h, written by the replay tool.
patterns=(seq32 seq64 rand32 block512 block4k mix21 mixrand21 streams4 lowseq lowrand)
for pat in "${patterns[@]}"; do "$ours" --trace "$pat" "$out/$pat.trace"; done

printf '| pattern | channels | xpusim GB/s | Ramulator 2 GB/s | diff | xpusim latency ns | Ramulator 2 latency ns | diff | xpusim M req/s | Ramulator 2 M req/s | speed |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for ch in "${chans[@]}"; do
  for pat in "${patterns[@]}"; do
    front=8 mem=1
    case $pat in low*) front=1 mem=100 ;; esac
    cfg=$out/${pat}_$ch.yaml
    cat > "$cfg" <<YAML
Frontend:
  impl: LoadStoreTrace
  clock_ratio: $front
  path: $out/$pat.trace
MemorySystem:
  impl: GenericDRAM
  clock_ratio: $mem
  DRAM:
    impl: HBM2
    org:
      preset: HBM2_8Gb
      channel_width: 128
      channel: $ch
    timing:
      preset: HBM2_2Gbps
      nBL: 2
  Controller:
    impl: Generic
    Scheduler:
      impl: FRFCFS
    RefreshManager:
      impl: AllBank
    RowPolicy:
      impl: OpenRowPolicy
    plugins:
  AddrMapper:
    impl: RoBaRaCoCh
YAML
    "$ram" "$cfg" > "$out/r_${pat}_$ch.out" 2> "$out/r_${pat}_$ch.err"
    # One command bus on our side too: Ramulator 2's Generic controller issues one command per
    # cycle, row or column (our HBM2 preset's own default is JESD235's two buses).
    "$ours" "$pat" "$ch" --command-bus shared --frontend ramulator > "$out/x_${pat}_$ch.out"
    python3 - "$out/r_${pat}_$ch.out" "$out/r_${pat}_$ch.err" "$out/x_${pat}_$ch.out" "$pat" "$ch" <<'PY'
import re, sys
rout, rerr, xout, pat, ch = sys.argv[1:]
r = open(rout).read()
cycles = int(re.search(r"memory_system_cycles: (\d+)", r).group(1))
nread = int(re.search(r"total_num_read_requests: (\d+)", r).group(1))
nwrite = int(re.search(r"total_num_write_requests: (\d+)", r).group(1))
lat = sum(int(x) for x in re.findall(r"\bread_latency_\d+: (\d+)", r))
loop = float(re.search(r"loop_seconds ([0-9.e+-]+)", open(rerr).read()).group(1))
x = dict(zip(*[iter(open(xout).read().split())] * 2))
rbw = (nread + nwrite) * 32 / cycles            # tCK 1 ns
rlat = lat / nread
xbw, xlat = float(x["bandwidth_gbps"]), float(x["mean_read_latency_ns"])
xrps = float(x["requests_per_s"]); rrps = (nread + nwrite) / loop
print(f"| {pat} | {ch} | {xbw:.1f} | {rbw:.1f} | {100*(xbw/rbw-1):+.1f}% | {xlat:.1f} | {rlat:.1f} | {100*(xlat/rlat-1):+.1f}% "
      f"| {xrps/1e6:.2f} | {rrps/1e6:.3f} | {xrps/rrps:.0f}x |")
PY
  done
done
