#!/usr/bin/env bash
# Suggestions benchmark over a realistic corpus that is not planted (issue 13, item 5).
#
# Generates traces with xpu_tracegen (GEMMs of several shapes, llama2 decodes and a prefill,
# tensor-parallel decodes on rings and tori, collectives of each algorithm, and every planted
# inefficiency at several sizes), runs sim_main on each with its default verification (the top
# suggestions applied and replayed on the run's effective platform), and writes
#   DIR/bench_suggestions.csv  one row per trace
#   DIR/bench_suggestions.md   the same as a Markdown table, and the bars per trace
# with, per trace: the platform, the simulated time, the lower bound and the resource that sets
# it, the headroom (run over its bound, %), every suggestion (kind, estimated and measured saving,
# status), the verified-together saving and, for planted cases, the share of the planted loss the
# top suggestion recovers: (planted - patched) / (planted - clean), with the patched trace written
# by `xpu_analyze OUT --apply 1` and re-simulated, as tests/e2e/planted.sh does.
#
# Per kind, over every replayed suggestion: how many, verified / no gain, the estimates' and the
# measurements' sums and the median of measured / estimated (a table after the bars).
# Three bars, PASS/FAIL per trace and a summary line (a benchmark, not a test: the exit status is
# 0 whatever the bars say, 1 only if a run failed outright or a lower bound is above a run: the
# run, a replay of a suggestion, the verified together or the rounds' last run ending before its
# bound would make the bound, and every cap at the headroom, wrong):
#   (a) clean traces: no suggestion with status `verified` measures slower (measured < 0);
#   (b) planted cases: the top suggestion is verified and recovers >= 80% of the planted loss;
#   (c) clean traces running more than 10% above their own lower bound: the verified suggestions
#       applied together recover at least half of that headroom. Two ways, the better counts:
#       together in one run (analysis.json verified_together; the one verified suggestion alone
#       when there is only one, 0 when there is none), and in rounds (`xpu_analyze OUT --rounds R`:
#       apply the best verified, re-simulate, verify again; the saving is the first run's simulated
#       time minus the last round's, every round a full run).
#
# usage: scripts/bench_suggestions.sh [--quick] [--rounds R] [--only REGEX] [--out DIR] [BUILD_DIR]
#   --quick   a subset (one size per planted option, 1-2-layer decodes, 3 GEMMs, one TP decode,
#             one collective): 11 s here; the full corpus: 128 traces (2415 s with --rounds 4 for 126 of them on
#             2 cores, 2026-11-30; the 100 before the 777x1000x1300 cases took
#             264 s with --rounds 0 on 2 cores, 2026-11-25)
#   --rounds  rounds of `xpu_analyze --rounds` on the clean traces of bar (c) (default 3; 0: none)
#   --only    only the traces whose name matches REGEX (and the clean traces planted ones compare with)
#   --out     results folder (default bench-results/suggestions[-quick]); the runs stay in DIR/runs
#   BUILD_DIR default build/ (built beforehand: scripts/build.sh)
# Progress (percent and ETA) goes to stderr; the tables and bars to stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=full out="" build="" rounds=3 only=""
while [ $# -gt 0 ]; do
    case $1 in
        --quick) mode=quick ;;
        --out) shift; out=${1:?--out needs a folder} ;;
        --out=*) out=${1#--out=} ;;
        --rounds) shift; rounds=${1:?--rounds needs a number} ;;
        --only) shift; only=${1:?--only needs a regular expression} ;;
        -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_suggestions: unknown option $1" >&2; exit 2 ;;
        *) build=$1 ;;
    esac
    shift
done
build=${build:-$root/build}
out=${out:-$root/bench-results/suggestions$([ "$mode" = quick ] && echo -quick)}
for b in traces/xpu_tracegen platform/sim_main analysis/xpu_analyze; do
    [ -x "$build/$b" ] || { echo "bench_suggestions: $build/$b is missing (build first: scripts/build.sh)" >&2; exit 2; }
done
mkdir -p "$out"
exec /usr/bin/python3 - "$root" "$build" "$out" "$mode" "$rounds" "$only" <<'PYEOF'
import csv, datetime, json, os, platform as pyplatform, re, shutil, subprocess, sys, time

root, build, out, mode = sys.argv[1:5]
ROUNDS, ONLY = int(sys.argv[5]), sys.argv[6]
out, build = os.path.abspath(out), os.path.abspath(build)
GEN = os.path.join(build, "traces/xpu_tracegen")
SIM = os.path.join(build, "platform/sim_main")
ANA = os.path.join(build, "analysis/xpu_analyze")
CFG = os.path.join(root, "configs")
quick = mode == "quick"

def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()

# ---- the corpus ------------------------------------------------------------------------------
# A case: name, xpu_tracegen arguments, platform file, --set list, weight (a rough guess of its
# wall seconds, for the ETA), and for planted ones the clean case it is measured against.
cases = []
by_name = {}

def add(name, gen, plat="xpu.yaml", sets=(), weight=5, planted_from=None, opt=None):
    if name in by_name:
        return by_name[name]
    c = dict(name=name, gen=list(gen), platform=plat, sets=list(sets), weight=weight,
             clean=planted_from is None, clean_ref=planted_from, opt=opt)
    cases.append(c)
    by_name[name] = c
    return c

def gemm(m, n, k):
    return ["gemm", "--m", str(m), "--n", str(n), "--k", str(k)]

def decode(model, batch, seq, layers, tp=1, phase="decode"):
    g = ["transformer", "--model", model, "--phase", phase, "--batch", str(batch), "--seq", str(seq),
         "--layers", str(layers)]
    return g + (["--tp", str(tp)] if tp > 1 else [])

def ring(n):  # xpu-ring4.yaml as a ring of n chips
    return ("xpu-ring4.yaml", [] if n == 4 else ["chips=%d" % n, "topology.dims=[%d]" % n])

def collective(algo, chips, size, chunks=4, dims=None):
    g = ["collective", "--op", "all-reduce", "--chips", str(chips), "--bytes", str(size), "--algo", algo,
         "--chunks", str(chunks)]
    return g + (["--dims", dims] if dims else [])

def planted(size_name, gen, opt, plat="xpu.yaml", sets=(), weight=5):
    clean = add(size_name, gen, plat, sets, weight)
    tag = opt[0].lstrip("-") + ("-" + opt[1] if len(opt) > 1 else "")
    add("%s %s" % (size_name, " ".join(opt)), gen + opt, plat, sets, weight * 2, planted_from=clean["name"], opt=tag)

MiB = 1 << 20
gemm_opts = [["--late-dma"], ["--no-double-buffer"], ["--false-dep"], ["--bad-order"], ["--split-dma", "64"]]
if quick:
    for shape in [(1000, 1536, 704), (2048, 2048, 2048), (3000, 2000, 1000)]:
        add("gemm %dx%dx%d" % shape, gemm(*shape), weight=3)
    add("llama2-7b decode b1 s512 L1", decode("llama2-7b", 1, 512, 1), weight=10)
    add("llama2-13b decode b8 s1024 L2", decode("llama2-13b", 8, 1024, 2), weight=25)
    p, s = ring(4)
    add("llama2-7b decode b1 s2048 L1 tp4", decode("llama2-7b", 1, 2048, 1, tp=4), p, s, weight=15)
    add("all-reduce ring 4 MiB x4 (torus 4x4)", collective("ring", 16, 4 * MiB), "xpu-torus4x4.yaml", weight=10)
    for opt in gemm_opts:
        planted("gemm 2048x2048x2048", gemm(2048, 2048, 2048), opt, weight=3)
    p, s = ring(4)
    planted("all-reduce ring 4 MiB x4 (ring 4)", collective("ring", 4, 4 * MiB), ["--serial-collective"], p, s, weight=4)
else:
    for shape in [(1000, 1536, 704), (2048, 2048, 2048), (4096, 1024, 3072), (1536, 8192, 1024), (3000, 2000, 1000),
                  (4096, 4096, 4096), (2048, 11008, 4096), (8192, 1000, 3000)]:
        add("gemm %dx%dx%d" % shape, gemm(*shape), weight=3 if shape[0] * shape[1] * shape[2] < 2**34 else 12)
    # Decodes: a spread of model, batch, cached sequence and layers (not the cross product).
    for model, b, seq, layers, w in [("llama2-7b", 1, 512, 1, 3), ("llama2-7b", 8, 2048, 2, 10),
                                     ("llama2-7b", 32, 4096, 1, 20), ("llama2-13b", 1, 4096, 2, 8),
                                     ("llama2-13b", 8, 1024, 1, 5), ("llama2-13b", 32, 512, 2, 15),
                                     ("llama2-7b", 1, 2048, 32, 150), ("llama2-13b", 8, 1024, 32, 200),
                                     ("llama2-7b", 32, 512, 32, 250), ("llama2-13b", 1, 4096, 32, 120),
                                     ("llama2-7b", 8, 4096, 32, 200), ("llama2-7b", 32, 1024, 32, 200),
                                     ("llama2-13b", 16, 512, 32, 200)]:
        # (32 layers at batch 32 and seq 4096 would need 64 GiB of KV cache: more than the chip's 32 GiB HBM)
        add("%s decode b%d s%d L%d" % (model, b, seq, layers), decode(model, b, seq, layers), weight=w)
    add("llama2-7b prefill b1 s512 L2", decode("llama2-7b", 1, 512, 2, phase="prefill"), weight=15)
    add("llama2-13b prefill b1 s1024 L2", decode("llama2-13b", 1, 1024, 2, phase="prefill"), weight=60)
    # Tensor parallel decodes on rings of 2, 4 and 8 chips and on a 4x4 torus.
    for tp in (2, 4, 8):
        p, s = ring(tp)
        add("llama2-7b decode b1 s2048 L2 tp%d (ring %d)" % (tp, tp), decode("llama2-7b", 1, 2048, 2, tp=tp), p, s,
            weight=20 + 5 * tp)
    p, s = ring(4)
    add("llama2-7b decode b1 s2048 L32 tp4 (ring 4)", decode("llama2-7b", 1, 2048, 32, tp=4), p, s, weight=150)
    add("llama2-13b decode b8 s1024 L1 tp4 (torus 4x4)", decode("llama2-13b", 8, 1024, 1, tp=4), "xpu-torus4x4.yaml",
        weight=30)
    add("llama2-7b decode b1 s2048 L1 tp8 (torus 4x4)", decode("llama2-7b", 1, 2048, 1, tp=8), "xpu-torus4x4.yaml",
        weight=30)
    add("llama2-7b decode b8 s1024 L1 tp16 (torus 4x4)", decode("llama2-7b", 8, 1024, 1, tp=16), "xpu-torus4x4.yaml",
        weight=40)
    # Collectives of each algorithm.
    p, s = ring(4)
    add("all-reduce ring 4 MiB x4 (ring 4)", collective("ring", 4, 4 * MiB), p, s, weight=4)
    add("all-reduce bidir-ring 4 MiB x4 (ring 4)", collective("bidir-ring", 4, 4 * MiB), p, s, weight=4)
    p8, s8 = ring(8)
    add("all-reduce bidir-ring 16 MiB x4 (ring 8)", collective("bidir-ring", 8, 16 * MiB), p8, s8, weight=8)
    add("all-reduce ring 4 MiB x4 (torus 4x4)", collective("ring", 16, 4 * MiB), "xpu-torus4x4.yaml", weight=10)
    add("all-reduce torus2d 4 MiB x4 (torus 4x4)", collective("torus2d", 16, 4 * MiB, dims="4x4"),
        "xpu-torus4x4.yaml", weight=10)
    add("reduce-scatter ring 16 MiB x4 (ring 8)", ["collective", "--op", "reduce-scatter", "--chips", "8", "--bytes",
        str(16 * MiB), "--algo", "ring", "--chunks", "4"], p8, s8, weight=6)
    add("all-gather bidir-ring 4 MiB x4 (ring 4)", ["collective", "--op", "all-gather", "--chips", "4", "--bytes",
        str(4 * MiB), "--algo", "bidir-ring", "--chunks", "4"], p, s, weight=4)
    add("all-reduce torus2d 16 MiB x4 (torus 8x8)", collective("torus2d", 64, 16 * MiB, dims="8x8"),
        "xpu-torus8x8.yaml", weight=40)
    # Every planted option at three sizes.
    for shape in [(1024, 2048, 1024), (2048, 2048, 2048), (4096, 4096, 2048)]:
        for opt in gemm_opts:
            planted("gemm %dx%dx%d" % shape, gemm(*shape), opt, weight=3 if shape[0] < 4096 else 8)
    for opt in gemm_opts:  # and on llama2-7b decodes of one and two layers
        planted("llama2-7b decode b1 s512 L1", decode("llama2-7b", 1, 512, 1), opt, weight=3)
        planted("llama2-7b decode b8 s2048 L2", decode("llama2-7b", 8, 2048, 2), opt, weight=10)
    # Sizes the finders were not built on: edge tiles in every dimension, a one-step K, and a
    # llama2-13b layer at batch 4 (docs/analysis.md, "Planted cases at other sizes").
    for shape in [(2500, 3500, 700), (1000, 1000, 1000)]:
        for opt in gemm_opts:
            planted("gemm %dx%dx%d" % shape, gemm(*shape), opt, weight=4)
    for opt in gemm_opts:
        planted("llama2-13b decode b4 s1024 L1", decode("llama2-13b", 4, 1024, 1), opt, weight=8)
    # And on platforms the finders were not built on, each GEMM tiled for its platform's units: two
    # vector units (xpu-2vpu.yaml), and a chip of 256x256 matrix units (tpu-v6e-4.yaml), where a
    # 256 KiB weight tile's vector loads take longer than the work around them hides; the two
    # options that move loads next to their use (docs/analysis.md, "hoist_wait"); and six K steps
    # where the buffer copies only tie the plain hoist in the estimate ("double_buffer on packed
    # tiles, and where it only ties").
    for plat in ("xpu-2vpu.yaml", "tpu-v6e-4.yaml"):
        for shape in [(1000, 1000, 1000), (3000, 1000, 500), (777, 1000, 1300)]:
            for opt in (["--late-dma"], ["--no-double-buffer"]):
                planted("gemm %dx%dx%d (%s)" % (shape + (plat[:-5],)), gemm(*shape) + ["--platform", os.path.join(CFG, plat)],
                        opt, plat, weight=3)
    p, s = ring(4)
    for size in (1, 4, 16):
        planted("all-reduce ring %d MiB x4 (ring 4)" % size, collective("ring", 4, size * MiB), ["--serial-collective"],
                p, s, weight=4)
    # Front ends and platforms the finders were not built on (2026-11-30): ONNX models and a
    # SCALE-Sim topology lowered for their platform, llama2 layers on TPU-like chips, a switch and a
    # 3-D torus, chips of two cores; and planted options on them.
    def tiled(gen, plat):
        return gen + ["--platform", os.path.join(CFG, plat)]
    models = os.path.join(root, "tests/data/models")
    for name, gen, plat, w in [
            ("onnx resnet50 b1", ["onnx", "--model", os.path.join(models, "resnet50.onnx"), "--batch", "1"], "xpu.yaml", 4),
            ("onnx vit_s16 b4", ["onnx", "--model", os.path.join(models, "vit_s16.onnx"), "--batch", "4"], "tpu-v5e-4.yaml", 8),
            ("onnx mobilenetv2 b8", ["onnx", "--model", os.path.join(models, "mobilenetv2.onnx"), "--batch", "8"],
             "xpu-2vpu.yaml", 8),
            ("onnx gpt2_block s256 tp2", ["onnx", "--model", os.path.join(models, "gpt2_block.onnx"), "--seq", "256", "--tp", "2"],
             "xpu-2chip-2core.yaml", 4),
            ("scalesim resnet18 convs", ["scalesim", "--topology", os.path.join(root, "traces/samples/resnet18-convs.csv")],
             "xpu-2vpu.yaml", 3),
            ("llama2-13b prefill b1 s256 L1", decode("llama2-13b", 1, 256, 1, phase="prefill"), "tpu-v5p-8.yaml", 8),
            ("llama2-70b decode b1 s3000 L1", decode("llama2-70b", 1, 3000, 1), "tpu-v5p-8.yaml", 6),
            ("llama2-7b decode b4 s1024 L3", decode("llama2-7b", 4, 1024, 3), "tpu-v6e-4.yaml", 6),
            ("gemm 1500x700x2300", gemm(1500, 700, 2300), "tpu-v5e-4.yaml", 3),
            ("gemm 640x4100x512 int8", gemm(640, 4100, 512) + ["--dtype", "int8"], "xpu.yaml", 3),
            # Several row blocks on half of the units (N = 1000 on 256-column units), and a
            # convolution net on a platform spread_matmuls' stretches were not built on
            # (2026-11-30, stop 47).
            ("gemm 4096x1000x2048", gemm(4096, 1000, 2048), "xpu-2vpu.yaml", 3),
            ("onnx resnet50 b2", ["onnx", "--model", os.path.join(models, "resnet50.onnx"), "--batch", "2"], "tpu-v6e-4.yaml", 6)]:
        add("%s (%s)" % (name, plat[:-5]), tiled(gen, plat), plat, weight=w)
    add("llama2-13b decode b4 s1000 L1 tp8 (switch 8)", decode("llama2-13b", 4, 1000, 1, tp=8), "xpu-switch8.yaml", weight=8)
    add("all-reduce bidir-ring 3 MiB x4 (switch 8)", collective("bidir-ring", 8, 3 * MiB), "xpu-switch8.yaml", weight=4)
    add("all-gather torus3d 5 MiB (torus 4x4x4)", ["collective", "--op", "all-gather", "--chips", "64", "--bytes",
        str(5 * MiB), "--algo", "torus3d", "--dims", "4x4x4"], "xpu-torus4x4x4.yaml", weight=10)
    planted("gemm 1500x700x2300 (tpu-v5e-4)", tiled(gemm(1500, 700, 2300), "tpu-v5e-4.yaml"), ["--late-dma"],
            "tpu-v5e-4.yaml", weight=3)
    planted("llama2-7b decode b2 s768 L2 (xpu-2vpu)", tiled(decode("llama2-7b", 2, 768, 2), "xpu-2vpu.yaml"), ["--false-dep"],
            "xpu-2vpu.yaml", weight=5)
    planted("llama2-7b decode b3 s640 L1 (tpu-v5e-4)", tiled(decode("llama2-7b", 3, 640, 1), "tpu-v5e-4.yaml"), ["--bad-order"],
            "tpu-v5e-4.yaml", weight=5)
    planted("gemm 3000x1200x900", gemm(3000, 1200, 900), ["--no-double-buffer"], weight=3)

if ONLY:  # the matching traces, and the clean ones the planted ones among them compare with
    keep = {c["name"] for c in cases if re.search(ONLY, c["name"])}
    keep |= {c["clean_ref"] for c in cases if c["name"] in keep and c["clean_ref"]}
    cases = [c for c in cases if c["name"] in keep]

# ---- running ---------------------------------------------------------------------------------
runs = os.path.join(out, "runs")
os.makedirs(runs, exist_ok=True)
failed = []

def slug(name):
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in name).strip("_")

def run(cmd, logf):
    with open(logf, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode

def sim_time(d):
    return json.load(open(os.path.join(d, "stats.json")))["simulated_time_ns"]

total_w = sum(c["weight"] for c in cases)
done_w = 0
t_start = time.time()
for i, c in enumerate(cases):
    el = time.time() - t_start
    eta = el / done_w * (total_w - done_w) if done_w else float("nan")
    log("bench_suggestions: [%d/%d] %3.0f%% %s, %.0f s elapsed, ETA %s" % (
        i + 1, len(cases), 100.0 * done_w / total_w, c["name"], el, "?" if eta != eta else "%.0f s" % eta))
    d = os.path.join(runs, slug(c["name"]))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    logf = os.path.join(d, "log.txt")
    trace = os.path.join(d, "trace.bin")
    plat = os.path.join(CFG, c["platform"])
    sets = sum((["--set", s] for s in c["sets"]), [])
    c["dir"] = d
    c["error"] = None
    t0 = time.time()
    if run([GEN] + c["gen"] + ["-o", trace], logf) != 0:
        c["error"] = "xpu_tracegen failed"
    else:
        rc = run([SIM, "--platform", plat] + sets + ["--trace", trace, "--out", os.path.join(d, "out"), "-q"], logf)
        if rc != 0:
            c["error"] = "sim_main exit %d" % rc
    if not c["error"] and c["clean"] and ROUNDS > 0:
        # Bar (c)'s second way: rounds of verified suggestions, where the run is > 10% above its bound.
        o = os.path.join(d, "out")
        b = json.load(open(os.path.join(o, "analysis.json"))).get("bounds", {})
        lb = b.get("lower_bound_ns") or 0.0
        if lb > 0 and sim_time(o) > 1.1 * lb:
            if run([ANA, o, "--rounds", str(ROUNDS), "-o", os.path.join(d, "optimized.bin")], logf) != 0:
                c["rounds_error"] = "xpu_analyze --rounds failed"
            else:
                rd = os.path.join(d, "optimized-rounds")
                c["rounds"] = json.load(open(os.path.join(rd, "rounds.json")))
                for f in os.listdir(rd):  # the traces and the last run's log are the bulk; the reports stay
                    if f.endswith(".bin"):
                        os.remove(os.path.join(rd, f))
                for x in c["rounds"]["rounds"][-1:]:
                    for f in ("txlog.bin", "txlog.trace.bin", "timeline.json"):
                        if os.path.exists(os.path.join(x["dir"], f)):
                            os.remove(os.path.join(x["dir"], f))
                if os.path.exists(os.path.join(d, "optimized.bin")):  # no round: nothing written
                    os.remove(os.path.join(d, "optimized.bin"))
    if not c["error"] and not c["clean"]:
        # As tests/e2e/planted.sh: apply the top suggestion, re-simulate on the run's effective platform.
        o = os.path.join(d, "out")
        if run([ANA, o, "--apply", "1", "-o", os.path.join(d, "patched.bin")], logf) != 0:
            c["apply_error"] = "xpu_analyze --apply 1 failed"
        elif run([SIM, "--platform", os.path.join(o, "platform.yaml"), "--trace", os.path.join(d, "patched.bin"),
                  "--out", os.path.join(d, "patched"), "-q", "--no-analysis"], logf) != 0:
            c["error"] = "the patched trace does not run"
    c["wall"] = time.time() - t0
    if c["error"]:
        failed.append(c["name"])
        log("bench_suggestions: %s: %s (see %s)" % (c["name"], c["error"], logf))
    else:
        try:  # the traces are the bulk of the folder; the runs' outputs stay
            os.remove(trace)
            if os.path.exists(os.path.join(d, "patched.bin")):
                os.remove(os.path.join(d, "patched.bin"))
        except OSError:
            pass
    done_w += c["weight"]
wall = time.time() - t_start
log("bench_suggestions: 100%% done, %.0f s" % wall)

# ---- the figures -----------------------------------------------------------------------------
def us(ns):
    return "%.1f" % (ns / 1e3) if ns < 1e7 else "%.0f" % (ns / 1e3)

def fmt_us(ns):
    if ns is None:
        return "-"
    a = abs(ns)
    return ("%.2f" if a < 10e3 else "%.1f" if a < 1e6 else "%.0f") % (ns / 1e3)

rows = []
bars = {"a": [], "b": [], "c": []}
not_applicable = []  # planted cases that lose nothing at their size
bound_exceeds_run = []  # a run or a replay faster than the lower bound: the bound is wrong
for c in cases:
    r = dict(trace=c["name"], platform=c["platform"] + "".join(" --set " + s for s in c["sets"]),
             kind="clean" if c["clean"] else "planted", wall_s="%.1f" % c.get("wall", 0))
    rows.append(r)
    if c["error"]:
        r["error"] = c["error"]
        continue
    o = os.path.join(c["dir"], "out")
    t = sim_time(o)
    a = json.load(open(os.path.join(o, "analysis.json")))
    b = a.get("bounds", {})
    lb = b.get("lower_bound_ns") or 0.0
    res = b.get("resources", [])
    setter = max(res, key=lambda x: x["time_ns"]) if res else None
    sugg = a.get("suggestions", [])
    vt = a.get("verified_together")
    verified = [s for s in sugg if s["status"] == "verified"]
    if vt and vt.get("measured_saving_ns") is not None:
        together, together_what = vt["measured_saving_ns"], "ranks " + vt["apply"]
    elif vt:  # composed but the joint replay did not run (budget) or failed
        together, together_what = None, "ranks %s not measured together" % vt["apply"]
    elif verified:  # one verified, or none of the others composes with the best: it alone
        together, together_what = verified[0]["measured_saving_ns"], "rank %d alone" % verified[0]["rank"] + (
            "" if len(verified) == 1 else ", the others do not compose with it")
    else:
        together, together_what = 0.0, "none verified"
    r.update(sim_ns=t, lower_bound_ns=lb,
             bound_by=("%s %s" % (setter["name"], setter["where"])).strip() if setter else "",
             headroom_pct=100.0 * (t - lb) / lb if lb > 0 else None,
             suggestions=sugg, together_ns=together, together_what=together_what,
             verified=len(verified), slower_verified=[s for s in sugg if s["status"] == "verified"
                                                      and s["measured_saving_ns"] is not None
                                                      and s["measured_saving_ns"] < 0])
    # The bound is a bound: no run, no replay of a suggestion and no run after the rounds ends
    # before it (a replay at t - saving; 1 ns for rounding).
    # A relowering (collective_algorithm's "relowering": the collective lowered another way, its bytes
    # over other links) is another work, with bounds of its own: this run's bound is not its.
    fastest = [("the run", t)] + [("#%d %s replayed" % (s["rank"], s["kind"]), t - s["measured_saving_ns"])
                                  for s in sugg if s["measured_saving_ns"] is not None and not s.get("relowering")]
    if c.get("rounds") and not any(x.get("kind") == "collective_algorithm" for x in c["rounds"]["rounds"]):
        fastest.append(("the rounds", t - c["rounds"]["saving_ns"]))
    if together and not (not vt and verified and verified[0].get("relowering")):  # a relowering alone: as above
        fastest.append(("the verified together", t - together))
    for what, tt in fastest:
        if lb > 0 and tt < lb - 1.0:
            bound_exceeds_run.append("%s: %s at %s us, below its %s bound %s us" % (
                c["name"], what, fmt_us(tt), setter["name"] if setter else "?", fmt_us(lb)))
    if c["clean"]:
        # (a) nothing presented as a saving measures slower
        ok = not r["slower_verified"]
        r["bar_a"] = "PASS" if ok else "FAIL"
        bars["a"].append((c["name"], ok, "" if ok else "; ".join(
            "#%d %s at %s: %s ns measured" % (s["rank"], s["kind"], s["where"], s["measured_saving_ns"])
            for s in r["slower_verified"])))
        # (c) half the headroom back where the run is > 10% above its bound
        if r["headroom_pct"] is not None and r["headroom_pct"] > 10:
            head = t - lb
            rd = c.get("rounds")
            r["rounds_ns"] = rd["saving_ns"] if rd else None
            r["rounds_what"] = ("%d round%s: %s" % (len(rd["rounds"]), "" if len(rd["rounds"]) == 1 else "s",
                                                      ", ".join(x["kind"] for x in rd["rounds"])) if rd
                                else c.get("rounds_error", "not run"))
            best = max(x for x in (together, r["rounds_ns"], 0.0) if x is not None)
            ratio = best / head
            ok = ratio >= 0.5
            r["c_ratio"] = ratio
            r["bar_c"] = "PASS" if ok else "FAIL"
            bars["c"].append((c["name"], ok, "together %s us, rounds %s us, of %s us headroom: %.1f%%" % (
                fmt_us(together), fmt_us(r["rounds_ns"]), fmt_us(head), 100 * ratio)))
        else:
            r["bar_c"] = "n/a"
    else:
        clean = by_name[c["clean_ref"]]
        top = sugg[0] if sugg else None
        tc0 = None if clean["error"] else sim_time(os.path.join(clean["dir"], "out"))
        if tc0 is not None and t - tc0 <= max(1000.0, tc0 / 1000):
            # Nothing was planted at this size (no loss above the verification floor: e.g. a
            # false dependency on a write-back when there is one block): not applicable.
            r["recovery"], r["top"], r["bar_b"] = None, top, "n/a"
            not_applicable.append("%s (planted %s us, clean %s us)" % (c["name"], fmt_us(t), fmt_us(tc0)))
            continue
        if clean["error"] or c.get("apply_error") or top is None:
            r["recovery"] = None
            why = clean["error"] or c.get("apply_error") or "no suggestion"
        else:
            tc, tpat = sim_time(os.path.join(clean["dir"], "out")), sim_time(os.path.join(c["dir"], "patched"))
            r.update(clean_ns=tc, patched_ns=tpat)
            r["recovery"] = (t - tpat) / (t - tc) if t != tc else None
            why = ""
        r["top"] = top
        ok = (r["recovery"] is not None and r["recovery"] >= 0.8 and top["status"] == "verified")
        r["bar_b"] = "PASS" if ok else "FAIL"
        bars["b"].append((c["name"], ok, why or "top #1 %s at %s (%s): recovered %s" % (
            top["kind"], top["where"], top["status"],
            "?" if r["recovery"] is None else "%.1f%%" % (100 * r["recovery"]))))

def sugg_text(s, md):
    est = fmt_us(s["estimated_saving_ns"])
    meas = fmt_us(s["measured_saving_ns"])
    return "%s%s %s: est %s / meas %s us, %s" % ("" if md else "#%d " % s["rank"], s["kind"],
                                                   s["where"], est, meas, s["status"])

# CSV: one row per trace.
with open(os.path.join(out, "bench_suggestions.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["trace", "kind", "platform", "simulated_us", "lower_bound_us", "bound_set_by", "headroom_pct",
                "suggestions", "verified", "together_saving_us", "together_what", "rounds_saving_us", "rounds_what",
                "planted_clean_us",
                "planted_patched_us", "planted_recovery_pct", "bar_a", "bar_b", "bar_c", "bar_c_ratio_pct",
                "wall_s", "error"])
    for r in rows:
        g = r.get
        w.writerow([r["trace"], r["kind"], r["platform"],
                    "" if g("sim_ns") is None else "%.3f" % (r["sim_ns"] / 1e3),
                    "" if g("lower_bound_ns") is None else "%.3f" % (r["lower_bound_ns"] / 1e3),
                    g("bound_by", ""), "" if g("headroom_pct") is None else "%.1f" % r["headroom_pct"],
                    " | ".join(sugg_text(s, False) for s in g("suggestions", [])), g("verified", ""),
                    "" if g("together_ns") is None else "%.3f" % (r["together_ns"] / 1e3), g("together_what", ""),
                    "" if g("rounds_ns") is None else "%.3f" % (r["rounds_ns"] / 1e3), g("rounds_what", ""),
                    "" if g("clean_ns") is None else "%.3f" % (r["clean_ns"] / 1e3),
                    "" if g("patched_ns") is None else "%.3f" % (r["patched_ns"] / 1e3),
                    "" if g("recovery") is None else "%.1f" % (100 * r["recovery"]),
                    g("bar_a", "n/a"), g("bar_b", "n/a"), g("bar_c", "n/a"),
                    "" if g("c_ratio") is None else "%.1f" % (100 * r["c_ratio"]), r["wall_s"], g("error", "")])

# Markdown.
def md_sugg(r):
    ss = r.get("suggestions", [])
    def why(s):  # why a suggestion was not replayed
        n = s.get("status_note", "")
        return (" (advice)" if n.startswith("a change of lowering") else " (beyond --verify 5)" if n.startswith("not replayed")
                else " (%s)" % n if n else "")
    # every replayed one, and the unreplayed ones among the first three ranks
    shown = [s for s in ss if s["measured_saving_ns"] is not None or s["status"] == "verified" or s["rank"] <= 3]
    rest = len(ss) - len(shown)
    parts = ["%d. `%s` %s: %s / %s, %s%s" % (s["rank"], s["kind"], s["where"], fmt_us(s["estimated_saving_ns"]),
                                             fmt_us(s["measured_saving_ns"]), s["status"],
                                             why(s) if s["status"] == "not_verified" else "") for s in shown]
    if rest:
        parts.append("(+%d not replayed)" % rest)
    return "<br>".join(parts) if parts else "none"

L = []
L.append("Suggestions benchmark, %s mode, %s UTC, %s (%d cores), wall %.0f s (%.1f min), %d traces."
         % (mode, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), pyplatform.node(), os.cpu_count(), wall,
            wall / 60, len(cases)))
L.append("")
L.append("Times in us. Suggestions: rank. `kind` where: estimated / measured saving, status. "
         "Headroom: the run over its own lower bound. Together: the verified suggestions that compose, replayed "
         "together. Rounds: `xpu_analyze OUT --rounds %d` (bar (c) traces only), the first run's time minus the last "
         "round's. Recovered: (planted - patched) / (planted - clean) with `--apply 1`." % ROUNDS)
L.append("")
L.append("| trace | platform | simulated | lower bound (set by) | headroom | suggestions | together | rounds | recovered | bars |")
L.append("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if r.get("error"):
        L.append("| %s | %s | run failed: %s | | | | | | | |" % (r["trace"], r["platform"], r["error"]))
        continue
    barcell = " ".join("%s %s" % (k, r.get("bar_" + k)) for k in "abc" if r.get("bar_" + k) not in (None, "n/a"))
    if r.get("c_ratio") is not None:
        barcell += " (%.0f%%)" % (100 * r["c_ratio"])
    L.append("| %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
        r["trace"], r["platform"],
        fmt_us(r["sim_ns"]), fmt_us(r["lower_bound_ns"]), r["bound_by"],
        "-" if r["headroom_pct"] is None else "%.1f%%" % r["headroom_pct"], md_sugg(r),
        "%s (%s)" % (fmt_us(r["together_ns"]), r["together_what"]),
        "-" if r.get("rounds_what") is None else "%s (%s)" % (fmt_us(r.get("rounds_ns")), r["rounds_what"]),
        "-" if r["kind"] == "clean" else ("?" if r.get("recovery") is None else "%.1f%%" % (100 * r["recovery"])),
        barcell or "-"))
L.append("")
summary = []
names = {"a": "(a) clean: no verified suggestion measures slower",
         "b": "(b) planted: top verified suggestion recovers >= 80%",
         "c": "(c) clean > 10% over bound: verified, together or in rounds, recovers >= 50% of the headroom"}
for k in "abc":
    n_pass = sum(1 for _, ok, _ in bars[k] if ok)
    summary.append("%s: %d/%d PASS" % (names[k], n_pass, len(bars[k])))
    L.append("**%s**: %d of %d pass." % (names[k], n_pass, len(bars[k])))
    L.append("")
    for name, ok, note in bars[k]:
        L.append("- %s %s%s" % ("PASS" if ok else "**FAIL**", name, (": " + note) if note else ""))
    L.append("")
if not_applicable:
    L.append("Planted cases that lose nothing at their size, so not counted in (b): " + "; ".join(not_applicable) + ".")
    L.append("")
# Per kind, over every replayed suggestion of every trace: how many, verified / no gain, the sums
# of the estimates and of the measurements, and the median of measured / estimated (what one
# kind's estimates are worth; advice kinds that are not replayed are left out).
per_kind = {}
for r in rows:
    for s in r.get("suggestions", []):
        if s["measured_saving_ns"] is None or not s["estimated_saving_ns"]:
            continue
        k = per_kind.setdefault(s["kind"], {"n": 0, "verified": 0, "est": 0.0, "meas": 0.0, "ratios": []})
        k["n"] += 1
        k["verified"] += s["status"] == "verified"
        k["est"] += s["estimated_saving_ns"]
        k["meas"] += s["measured_saving_ns"]
        k["ratios"].append(s["measured_saving_ns"] / s["estimated_saving_ns"])
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
L.append("Estimates against measurements per kind, every replayed suggestion of every trace (measured / estimated):")
L.append("")
L.append("| kind | replayed | verified | no gain | estimated, sum (us) | measured, sum (us) | median measured / estimated |")
L.append("|---|---|---|---|---|---|---|")
for kind in sorted(per_kind, key=lambda x: -per_kind[x]["n"]):
    k = per_kind[kind]
    L.append("| `%s` | %d | %d | %d | %s | %s | %.2f |" % (kind, k["n"], k["verified"], k["n"] - k["verified"], fmt_us(k["est"]),
                                                         fmt_us(k["meas"]), median(k["ratios"])))
L.append("")
slow_any = ["%s: #%d %s at %s measured %s us" % (r["trace"], s["rank"], s["kind"], s["where"],
             fmt_us(s["measured_saving_ns"])) for r in rows for s in r.get("slower_verified", [])]
L.append("Suggestions verified yet measured slower, on any trace (clean or planted): %s."
         % ("; ".join(slow_any) if slow_any else "none"))
L.append("")
L.append("Lower bounds above a run, a replay or the rounds' last run (the bound would be wrong): %s."
         % ("; ".join(bound_exceeds_run) if bound_exceeds_run else "none"))
L.append("")
if failed:
    L.append("Runs that failed outright: " + ", ".join(failed))
with open(os.path.join(out, "bench_suggestions.md"), "w") as f:
    f.write("\n".join(L) + "\n")

print("\n".join(L))
for k in "abc":
    for name, ok, note in bars[k]:
        print("bar (%s) %s: %s%s" % (k, name, "PASS" if ok else "FAIL", (" (" + note + ")") if note else ""))
print("summary: " + "; ".join(summary) + "; %d traces, %.0f s wall%s%s" % (
    len(cases), wall, ("; FAILED RUNS: " + ", ".join(failed)) if failed else "",
    ("; BOUND ABOVE A RUN: %d" % len(bound_exceeds_run)) if bound_exceeds_run else ""))
sys.exit(1 if failed or bound_exceeds_run else 0)
PYEOF
