#!/usr/bin/env bash
# Collectives side by side with ASTRA-sim's congestion-unaware analytical backend
# (docs/validation.md, "Collectives against ASTRA-sim").
#
#   scripts/collectives_vs_astrasim.sh ASTRASIM_BINARY BUILD_DIR OUTDIR [OPS] [SHAPES] [SIZES]
#
# ASTRASIM_BINARY: AstraSim_Analytical_Congestion_Unaware, built outside this repository
# (docs/validation.md says how). BUILD_DIR: this repository's build (xpu_tracegen, sim_main).
# OPS: default "all-gather reduce-scatter all-reduce"; SHAPES: rings "4 8 16 32 64" and 2D tori
# "4x4 8x8" (default both); SIZES in bytes: default 16 KiB, 64 KiB, 1 MiB, 16 MiB, 256 MiB.
#
# The same collective on both sides, S bytes being the whole tensor on each chip (all-gather:
# its output; reduce-scatter, all-reduce: its input):
# - ASTRA-sim: one Chakra COMM_COLL_NODE per NPU (written here as its microbenchmark generator
#   scripts write them, protobuf encoded by hand); comm_size is what ASTRA-sim's Ring takes: the
#   input, i.e. S / chips for all-gather, S otherwise. Network: Ring (or Ring x Ring) of our
#   link, 50 GB/s and 500 ns per hop; ASTRA-sim reads GB/s as 2^30 B/s
#   (astra-network-analytical common/NetworkFunction.cpp), so it is given 50e9 / 2^30 =
#   46.566 to mean our 10^9. System: ring per dimension, one chunk (preferred-dataset-splits 1,
#   active-chunks-per-dimension 1), localBWAware (all-reduce on a torus: reduce-scatter per
#   dimension, then all-gather back, as ours), endpoint-delay 1 (the least it takes: 0 trips an
#   assertion of its event queue), local-mem-bw 1000000. Its figure: the largest
#   "sys[i], Wall time" (ns).
# - xpusim: `xpu_tracegen collective --algo ring | torus2d` replayed by sim_main on
#   configs/xpu-ring4.yaml / xpu-torus4x4.yaml (50 GB/s, 500 ns links) twice: with every
#   on-chip cost zeroed (DMA setup, interconnect, port and HBM latencies, HBM and DMA bandwidth
#   unbounded, no packet overhead: the AstraSimForm tests' settings, ASTRA-sim's model of a
#   chip), and as configured (the on-chip costs of docs/architecture.md, "What a collective step
#   costs"). Its figure: stats.json simulated_time_ns.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ASTRASIM_BINARY BUILD_DIR OUTDIR [OPS] [SHAPES] [SIZES]" >&2; exit 2; }
astra=$1 build=$2 out=$3
ops=${4:-"all-gather reduce-scatter all-reduce"}
shapes=${5:-"4 8 16 32 64 4x4 8x8"}
sizes=${6:-"16384 65536 1048576 16777216 268435456"}
[ -x "$astra" ] || { echo "$0: $astra: not an executable" >&2; exit 2; }
gen=$build/traces/xpu_tracegen sim=$build/platform/sim_main
[ -x "$gen" ] && [ -x "$sim" ] || { echo "$0: $build: no traces/xpu_tracegen or platform/sim_main" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"

# One ring implementation per dimension (ASTRA-sim asserts as many as the network has).
system_json() {
  printf '{"scheduling-policy": "LIFO", "endpoint-delay": 1, "active-chunks-per-dimension": 1,\n'
  printf ' "preferred-dataset-splits": 1, "all-reduce-implementation": %s,\n' "$1"
  printf ' "all-gather-implementation": %s, "reduce-scatter-implementation": %s,\n' "$1" "$1"
  printf ' "all-to-all-implementation": %s, "collective-optimization": "localBWAware",\n' "$1"
  printf ' "local-mem-bw": 1000000, "boost-mode": 0}\n'
}
echo '{"memory-type": "NO_MEMORY_EXPANSION"}' > "$out/memory.json"

# Chakra ET: a GlobalMetadata then one Node, each length-prefixed (varint), as chakra's
# protolib.encodeMessage writes them; field numbers from chakra's schema/protobuf/et_def.proto.
cat > "$out/et.py" <<'PY'
import os, sys
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
def key(field, wire): return varint(field << 3 | wire)
def string(field, v): v = v.encode(); return key(field, 2) + varint(len(v)) + v
def uint(field, v): return key(field, 0) + varint(v) if v else b""
def attr(name, field, v): body = string(1, name) + key(field, 0) + varint(v); return key(10, 2) + varint(len(body)) + body
def msg(b): return varint(len(b)) + b
COMM_TYPE = {"all-reduce": 0, "all-gather": 2, "reduce-scatter": 7}  # CollectiveCommType
op, npus, size, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(d, exist_ok=True)
for npu in range(npus):
    with open(f"{d}/coll.{npu}.et", "wb") as f:
        f.write(msg(string(1, "0.0.4")))
        node = (uint(1, npu) + string(2, f"{op}_{npus}npus_{size}B") + uint(3, 7)  # COMM_COLL_NODE
                + attr("is_cpu_op", 27, 0) + attr("comm_type", 9, COMM_TYPE[op]) + attr("comm_size", 9, size))
        f.write(msg(node))
PY

zero=(--set topology.link.packet_overhead_bytes=0 --set chip.modules.hbm.latency_ns=0
      --set chip.modules.hbm.channel_bandwidth_gbps=1000000 --set chip.modules.noc.latency_ns=0
      --set chip.modules.ici.latency_ns=0)
for d in 0 1 2 3; do
  zero+=(--set "chip.modules.dma$d.setup_latency=0" --set "chip.modules.dma$d.bandwidth_gbps=10000000")
done

printf '| collective | chips | bytes | ASTRA-sim ns | xpusim on-chip costs zeroed ns | diff | xpusim as configured ns | diff |\n'
printf '|---|---|---:|---:|---:|---:|---:|---:|\n'
for op in $ops; do
  for shape in $shapes; do
    if [[ $shape == *x* ]]; then
      x=${shape%x*} y=${shape#*x} n=$((x * y)) algo=torus2d cfg=$root/configs/xpu-torus4x4.yaml
      topo="[ Ring, Ring ]" npus="[ $x, $y ]" bw="[ 46.566128730773926, 46.566128730773926 ]" lat="[ 500.0, 500.0 ]"
      dims="[$x, $y]" extra=(--dims "$shape") impl='["ring", "ring"]'
    else
      n=$shape algo=ring cfg=$root/configs/xpu-ring4.yaml
      topo="[ Ring ]" npus="[ $n ]" bw="[ 46.566128730773926 ]" lat="[ 500.0 ]" dims="[$n]" extra=()
      impl='["ring"]'
    fi
    printf 'topology: %s\nnpus_count: %s\nbandwidth: %s  # 50e9 B/s in its GB/s of 2^30 B\nlatency: %s  # ns\n' \
      "$topo" "$npus" "$bw" "$lat" > "$out/net_$shape.yml"
    system_json "$impl" > "$out/system_$shape.json"
    for size in $sizes; do
      tag=${op}_${shape}_$size
      comm=$size
      [ "$op" != all-gather ] || comm=$((size / n))
      python3 "$out/et.py" "$op" "$n" "$comm" "$out/et_$tag"
      "$astra" --workload-configuration="$out/et_$tag/coll" --system-configuration="$out/system_$shape.json" \
        --remote-memory-configuration="$out/memory.json" --network-configuration="$out/net_$shape.yml" \
        > "$out/astra_$tag.log" 2>&1
      rm -rf "$out/et_$tag"
      "$gen" collective --op "$op" --chips "$n" --bytes "$size" --algo "$algo" "${extra[@]}" -o "$out/$tag.bin" > /dev/null
      sets=(--set "chips=$n" --set "topology.dims=$dims")
      "$sim" -p "$cfg" -t "$out/$tag.bin" -o "$out/z_$tag" "${sets[@]}" "${zero[@]}" --no-analysis --no-txlog \
        --deterministic > "$out/z_$tag.log" 2>&1
      "$sim" -p "$cfg" -t "$out/$tag.bin" -o "$out/c_$tag" "${sets[@]}" --no-analysis --no-txlog \
        --deterministic > "$out/c_$tag.log" 2>&1
      rm -f "$out/$tag.bin"
      python3 - "$out/astra_$tag.log" "$out/z_$tag/stats.json" "$out/c_$tag/stats.json" "$op" "$shape" "$size" <<'PY'
import json, re, sys
alog, z, c, op, shape, size = sys.argv[1:]
walls = [int(w) for w in re.findall(r"sys\[\d+\], Wall time: (\d+)", open(alog).read())]
if not walls: sys.exit(f"{alog}: no 'Wall time' line")
a = max(walls)
zs = json.load(open(z)); cs = json.load(open(c))
if not (zs["completed"] and cs["completed"]): sys.exit(f"{z} or {c}: run not completed")
zn, cn = zs["simulated_time_ns"], cs["simulated_time_ns"]
kind = f"{shape} ring" if "x" not in shape else f"{shape} torus"
print(f"| {op} | {kind} | {int(size)} | {a} | {zn:.0f} | {100*(zn/a-1):+.2f}% | {cn:.0f} | {100*(cn/a-1):+.1f}% |")
PY
      rm -rf "$out/z_$tag" "$out/c_$tag"
    done
  done
done
