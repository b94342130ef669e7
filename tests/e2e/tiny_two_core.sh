#!/usr/bin/env bash
# traces/samples/tiny.xtr (every opcode, two cores of chip 0, a DMA from core 1 into chip 1's
# VMEM) runs on the config its comments name, configs/xpu-2chip-2core.yaml: assembled, run with
# sim_main, and checked against what the trace text itself says, independently of the models:
#  - the run completes and retires every instruction the .xtr lists (counted from the text);
#  - the barrier is met: both cores of chip 0 arrive at it (chip 0's SyncFlags count 2);
#  - the remote DMA (4096 bytes, one 4 KiB chunk) crosses one link, chip 0's +x, and the link
#    counts what its packet rule (models/ici.h) gives from the description's packet_bytes and
#    packet_overhead_bytes: 4096 bytes of data in ceil(4096 / packet_bytes) packets, plus its
#    completion flag's posted write (one packet), each packet with its overhead on the wire;
#  - the 4096 bytes land in chip 1's core1.vmem: `vmem@1:` from core 1 is core 1's VMEM on
#    chip 1 (docs/trace-format.md), not core0.vmem;
#  - one chip's remote DMA is not a collective: no collective_algorithm advice.
# usage: bash tiny_two_core.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
SOURCE_DIR=$2
e2e_workdir tiny_two_core
TINY="$SOURCE_DIR/traces/samples/tiny.xtr"
PLATFORM="$SOURCE_DIR/configs/xpu-2chip-2core.yaml"

"$TOOL" asm "$TINY" -o "$WORK/tiny.bin" || fail "xpu_trace asm tiny.xtr"
pass "asm tiny.xtr"
rc=0
"$SIM" --platform "$PLATFORM" --trace "$WORK/tiny.bin" --out "$WORK/out" -q --no-verify >"$WORK/run.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/run.txt" >&2; fail "sim_main on xpu-2chip-2core.yaml exited $rc, expected 0"; }
pass "tiny.bin runs on configs/xpu-2chip-2core.yaml"

"$PY" - "$TINY" "$PLATFORM" "$WORK/out" <<'EOF' || fail "the run's figures (above)"
import json, math, re, sys
xtr, platform, out = sys.argv[1:]
stats = json.load(open(out + "/stats.json"))
mods = stats["modules"]
# The links' packetisation, as the description sets it (topology.link: one of each key).
text = open(platform).read()
link = {k: int(re.search(r"^\s*%s:\s*(\d+)" % k, text, re.M).group(1)) for k in ("packet_bytes", "packet_overhead_bytes")}
problems = []
def expect(what, got, want):
    print(("ok   " if got == want else "FAIL ") + "%s: %r (expected %r)" % (what, got, want))
    if got != want: problems.append(what)

# Instructions: every line of the .xtr that is not blank, a comment or a directive.
listed = sum(1 for l in open(xtr) if l.split("#")[0].strip() and not l.lstrip().startswith("."))
expect("instructions in tiny.xtr", listed, 24)
expect("completed", stats["completed"], True)
expect("instructions retired", stats["instructions_retired"], listed)
# The barrier (flag 0 on chip 0): both cores arrive.
expect("barrier arrivals on chip 0", mods["xpu.chip0.flags"]["barriers"], 2)

# The remote DMA on the links: only chip 0's +x carries anything.
data, packet, overhead = 4096, link["packet_bytes"], link["packet_overhead_bytes"]
for name, m in sorted(mods.items()):
    if m["kind"] == "IciLink" and name != "xpu.links.chip0_xp":
        expect(name + " bytes", m["bytes"], 0)
xp = mods["xpu.links.chip0_xp"]
expect("chip0_xp transfers (data chunk, completion flag)", xp["transfers"], 2)
flag_bytes = xp["bytes"] - data
print("     completion flag write: %d bytes" % flag_bytes)
expect("completion flag fits one packet", 0 < flag_bytes <= packet, True)
packets = math.ceil(data / packet) + 1
expect("chip0_xp wire bytes (payload + %d packets x %d)" % (packets, overhead), xp["wire_bytes"], xp["bytes"] + packets * overhead)

# Where the bytes landed: chip 1's core1.vmem, nothing in its core0.vmem.
expect("chip1.core1.vmem bytes written", mods["xpu.chip1.core1.vmem"]["bytes_written"], data)
expect("chip1.core0.vmem bytes written", mods["xpu.chip1.core0.vmem"]["bytes_written"], 0)
expect("chip 1's completion flag raised (flag 4 += 1)", mods["xpu.chip1.flags"]["adds"], 1)
# Chip 0's VMEMs: core 0's 64 KiB DMA and 32 KiB vst; core 1 writes none of its own.
expect("chip0.core0.vmem bytes written", mods["xpu.chip0.core0.vmem"]["bytes_written"], 65536 + 32768)
expect("chip0.core1.vmem bytes written", mods["xpu.chip0.core1.vmem"]["bytes_written"], 0)

kinds = [s["kind"] for s in json.load(open(out + "/analysis.json"))["suggestions"]]
expect("collective_algorithm advice for one remote DMA", "collective_algorithm" in kinds, False)
sys.exit(1 if problems else 0)
EOF
pass "24 retired, barrier met, 4096 bytes + packet overhead on chip0_xp, landed in chip 1's core1.vmem"
echo "all $checks checks passed"
