#!/usr/bin/env bash
# Proof by replay for one planted inefficiency of xpu_tracegen (docs/tracegen.md): simulate the
# clean and the planted trace, check that the analysis names the planted cause (a suggestion of
# the kind that fixes it, at the planted step, verified by replay) and that it is the top
# finding, or else that the top one is verified and ranked above it by its measured saving (a
# reorder across the stream, analysis/suggest/stream_schedule.h, which interleaves what the clean
# code leaves serial as well: on a one-layer decode it measures more than a planted false
# dependency's fix); apply the top suggestion (xpu_analyze --apply 1),
# re-simulate the patched trace and check that it recovers at least MIN% of the planted loss:
#   recovery = (planted - patched) / (planted - clean).
# usage: bash planted.sh BUILD_DIR SOURCE_DIR CASE MIN_RECOVERY_PERCENT
# CASE: gemm-late-dma gemm-no-double-buffer gemm-false-dep gemm-bad-order decode-late-dma
#       decode-false-dep decode-no-double-buffer decode-bad-order collective-serial
#       collective-serial-torus
#       gemm-split-dma (each tile load as 64 DMAs of 4 KiB); CASE@SIZE: at another size,
#       gemm-...@MxNxK, decode-...@MODEL:BATCH:SEQ:LAYERS or collective-...@CHIPS:BYTES:CHUNKS (a
#       ring of CHIPS); CASE%NAME (after any @SIZE): on
#       configs/NAME.yaml, the traces generated for it
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_args 4 "BUILD_DIR SOURCE_DIR CASE MIN_RECOVERY_PERCENT" "$@"
BUILD_DIR=$1 SOURCE_DIR=$2 CASE=$3 MIN=$4
e2e_tools "$BUILD_DIR"
e2e_workdir planted

PLATFORM="$SOURCE_DIR/configs/xpu.yaml"
# CASE%NAME (after any @SIZE), or PLANTED_PLATFORM=FILE (environment): on another platform
# (configs/NAME.yaml), for which the GEMM and transformer traces are also generated
# (xpu_tracegen --platform: its matrix units, vector units, DMA engines and VMEM); the bar holds
# on every platform, not only on the default one.
if [[ $CASE == *%* ]]; then
    PLANTED_PLATFORM="$SOURCE_DIR/configs/${CASE#*%}.yaml"
    CASE=${CASE%%%*}
    [[ -f $PLANTED_PLATFORM ]] || fail "no platform $PLANTED_PLATFORM"
fi
GEN_PLATFORM=()
if [[ -n ${PLANTED_PLATFORM:-} ]]; then
    PLATFORM=$PLANTED_PLATFORM
    GEN_PLATFORM=(--platform "$PLATFORM")
fi
# CASE@SIZE: the same planted cause at another size (the bar holds at every size, not only at
# the sizes above): gemm-...@MxNxK, decode-...@MODEL:BATCH:SEQ:LAYERS.
SIZE= SETS=()
if [[ $CASE == *@* ]]; then
    SIZE=${CASE#*@}
    CASE=${CASE%%@*}
fi
case "$CASE" in
    gemm-split-dma)
        # 64 pieces of 4 KiB per 256 KiB tile: more than an engine's 16-descriptor queue, so the
        # core blocks issuing them while the engine pays a setup per piece.
        opt=(--split-dma 64)
        gen=(gemm --m 2048 --n 2048 --k 2048)
        ;;
    gemm-*)
        opt=("--${CASE#gemm-}")
        gen=(gemm --m 2048 --n 2048 --k 2048)
        ;;
    decode-*)
        opt=("--${CASE#decode-}")
        gen=(transformer --model llama2-7b --phase decode --batch 1 --seq 512 --layers 1)
        ;;
    collective-serial)
        opt=(--serial-collective)
        gen=(collective --op all-reduce --chips 4 --bytes 4194304 --algo ring --chunks 4)
        PLATFORM="$SOURCE_DIR/configs/xpu-ring4.yaml"
        ;;
    collective-serial-torus)  # both ways along both dimensions, two pieces a step: an all-gather
        opt=(--serial-collective)
        gen=(collective --op all-gather --chips 16 --dims 4x4 --bytes 4194304 --algo bidir-torus2d --chunks 2)
        PLATFORM="$SOURCE_DIR/configs/xpu-torus4x4.yaml"
        ;;
    *) fail "unknown case $CASE" ;;
esac
if [[ -n $SIZE ]]; then
    case "$CASE" in
        gemm-*)
            IFS=x read -r m n k <<< "$SIZE"
            gen=(gemm --m "$m" --n "$n" --k "$k")
            ;;
        decode-*)
            IFS=: read -r model batch seq layers <<< "$SIZE"
            gen=(transformer --model "$model" --phase decode --batch "$batch" --seq "$seq" --layers "$layers")
            ;;
        collective-*)  # CHIPS:BYTES:CHUNKS, on xpu-ring4.yaml made a ring of CHIPS
            IFS=: read -r chips bytes chunks <<< "$SIZE"
            gen=(collective --op all-reduce --chips "$chips" --bytes "$bytes" --algo ring --chunks "$chunks")
            SETS=(--set "chips=$chips" --set "topology.dims=[$chips]")
            ;;
        *) fail "no other size for $CASE" ;;
    esac
fi
# The finding each planted cause must produce (docs/tracegen.md); kinds separated by "|" are
# each a fix of that cause: a load issued late, or into the buffer still being read, is
# prefetched by hoist_dma or double_buffer (hoist_wait: either, with the wait and the register
# loads after it moved up too, as the plant moved them down), or by prefetch_ahead into a buffer
# of its own.
case "$CASE" in
    *late-dma) want_kind="hoist_dma|hoist_wait|prefetch_ahead" want_where=wait_data ;;
    *no-double-buffer) want_kind="double_buffer|hoist_wait|prefetch_ahead" want_where=wait_data ;;
    *false-dep) want_kind=drop_wait want_where=wait_c ;;
    *bad-order) want_kind=reorder want_where=wait_data ;;
    collective-serial*) want_kind=pipeline_collective want_where=wait ;;
    *split-dma) want_kind=merge_dma want_where=load_a ;;
esac

[[ $CASE == collective-* ]] && GEN_PLATFORM=()
"$GEN" "${gen[@]}" "${GEN_PLATFORM[@]}" -o "$WORK/clean.bin" > /dev/null
"$GEN" "${gen[@]}" "${GEN_PLATFORM[@]}" "${opt[@]}" -o "$WORK/planted.bin" > /dev/null
"$SIM" --platform "$PLATFORM" "${SETS[@]}" --trace "$WORK/clean.bin" --out "$WORK/clean" -q --no-analysis
"$SIM" --platform "$PLATFORM" "${SETS[@]}" --trace "$WORK/planted.bin" --out "$WORK/planted" -q
[[ -s "$WORK/planted/analysis.json" ]] || fail "sim_main wrote no analysis.json"

"$PY" - "$WORK/planted/analysis.json" "$want_kind" "$want_where" <<'PYEOF' || fail "top finding"
import json, sys
a = json.load(open(sys.argv[1]))
s = a["suggestions"]
assert s, "no suggestion at all"
top = s[0]
print("top finding: [%s] at %s: %s (estimated saving %.1f ns)" % (top["kind"], top["where"], top["finding"], top["estimated_saving_ns"]))
# "where" is an op, an op rolled up across layers ("layer*/mlp/down_proj/wait_data x32"),
# "*/step (n ops)" ("(n ops in L layers)"), or (merge_dma) a list of those separated by ", ".
def at_planted_step(x):
    return sys.argv[3] in [w.split("/")[-1].split(" ")[0] for w in x["where"].split(" (")[0].split(", ")]
named = [x for x in s if x["kind"] in sys.argv[2].split("|") and at_planted_step(x)]
assert named, "no suggestion names the planted cause (%s at %s)" % (sys.argv[2], sys.argv[3])
fix = named[0]
if fix is not top:
    # Another suggestion ranks first only by measuring more than the planted cause's fix, both
    # verified (ranking is by measured saving): a reorder across the stream that also interleaves
    # what the clean code leaves serial, or a pipeline_store that also wins the write-back's own
    # time (a 3072x768x1792 GEMM's --false-dep: 2.92 us against drop_wait's 2.16 us).
    assert top["status"] == "verified" and fix["status"] == "verified", \
        "top suggestion is %s (%s), above the planted cause's fix %s (%s): both must be verified" % (
            top["kind"], top["status"], fix["kind"], fix["status"])
    assert top["measured_saving_ns"] >= fix["measured_saving_ns"]
    print("the planted cause: [%s] at %s, #%d, verified: %.1f ns measured; below [%s]'s %.1f ns"
          % (fix["kind"], fix["where"], fix["rank"], fix["measured_saving_ns"], top["kind"], top["measured_saving_ns"]))
assert top["estimated_saving_ns"] > 0
PYEOF

"$ANA" "$WORK/planted" --apply 1 -o "$WORK/patched.bin" > "$WORK/apply.txt" || fail "xpu_analyze --apply 1 failed"
grep -q "applied suggestion 1" "$WORK/apply.txt" || fail "no confirmation from --apply"
"$SIM" --platform "$PLATFORM" "${SETS[@]}" --trace "$WORK/patched.bin" --out "$WORK/patched" -q \
    || fail "the patched trace does not run (a move broke a dependency?)"

# A fixed point: the patched run, analysed and verified again, does not propose the applied change
# again: no verified suggestion of the same kind at the same place, but for a remainder that
# measures under 10% of what the applied one did (a list scheduler run on its own output can
# find a little more: a `reorder` that keeps each matmul with its unit's weight tile left
# 165.8 ns after 2.34 us on the 1200x1200x1500 --bad-order GEMM).
"$PY" - "$WORK/planted/analysis.json" "$WORK/patched/analysis.json" <<'PYEOF' || fail "fixed point"
import json, sys
top = json.load(open(sys.argv[1]))["suggestions"][0]
again = [s for s in json.load(open(sys.argv[2]))["suggestions"]
         if s["kind"] == top["kind"] and s["where"] == top["where"] and s["status"] == "verified"
         and (s["measured_saving_ns"] or 0) >= 0.1 * (top["measured_saving_ns"] or 0)]
assert not again, "the patched run proposes [%s] at %s again, verified: %s" % (top["kind"], top["where"], again)
print("fixed point: the patched run does not propose [%s] at %s again" % (top["kind"], top["where"]))
PYEOF

"$PY" - "$WORK" "$MIN" <<'PYEOF' || fail "recovery"
import json, sys
w, need = sys.argv[1], float(sys.argv[2])
t = {k: json.load(open("%s/%s/stats.json" % (w, k)))["simulated_time_ns"] for k in ("clean", "planted", "patched")}
est = json.load(open(w + "/planted/analysis.json"))["suggestions"][0]["estimated_saving_ns"]
loss = t["planted"] - t["clean"]
rec = 100.0 * (t["planted"] - t["patched"]) / loss
print("clean %.1f us, planted %.1f us (loss %.1f us), patched %.1f us: recovered %.1f%% of the loss; "
      "measured gain %.1f us against %.1f us estimated" % (t["clean"] / 1e3, t["planted"] / 1e3, loss / 1e3,
      t["patched"] / 1e3, rec, (t["planted"] - t["patched"]) / 1e3, est / 1e3))
assert loss > 0, "the planted trace is not slower than the clean one"
assert rec >= need, "recovered %.1f%% < %.1f%%" % (rec, need)
PYEOF
echo "ok - $CASE"
