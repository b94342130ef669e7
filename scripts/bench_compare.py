#!/usr/bin/env python3
"""The production-scale targets (issue 14, item 4) measured against a baseline build.

Run by `scripts/bench.sh --baseline REV` (which builds both sides); usable alone:

    bench_compare.py --ours BUILD --base BUILD --base-name NAME --root REPO [--runs N] [--small]

Both builds replay the same traces (generated once, by ours) on the same platforms. Every
measurement alternates the two builds, the order swapped from one round to the next so that a
drift of the shared machine's load hits both alike; each figure is the median of --runs rounds,
and each ratio is taken from the medians of the same run. Host figures are noisy on a shared
machine: the ratios are what to read, and one run of this script is one sample of them.

--small replaces the issue's workloads by small ones of the same shapes (the test suite runs
it: it checks that every target line is produced, not the speed).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def run(cmd, timeout=None, may_fail=False):
    """Runs cmd (its output discarded); returns its wall seconds, None past `timeout`. With
    may_fail, a failure returns (None, the last line of its stderr) instead of ending the bench."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None
    wall = time.monotonic() - t0
    if p.returncode != 0 and may_fail:
        lines = p.stderr.decode(errors="replace").strip().splitlines()
        return None, lines[0] if lines else "exit %d" % p.returncode
    if p.returncode != 0:
        sys.exit("bench: failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode(errors="replace")[-2000:]))
    return wall, None


def peak_rss(cmd):
    """Runs cmd under /usr/bin/time; returns (wall seconds, peak RSS bytes)."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("bench: failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode(errors="replace")[-2000:]))
    kib = int(p.stderr.decode().strip().splitlines()[-1])
    return wall, kib * 1024


def stats(out):
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f)


def folder_bytes(d):
    total = 0
    for dirpath, _, files in os.walk(d):
        for name in files:
            total += os.path.getsize(os.path.join(dirpath, name))
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--base-name", default="baseline")
    ap.add_argument("--root", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--scratch")
    ap.add_argument("--startup-timeout", type=float, default=120.0)
    a = ap.parse_args()

    scratch = a.scratch or tempfile.mkdtemp(prefix="xpubench-")
    os.makedirs(scratch, exist_ok=True)
    cfg = os.path.join(a.root, "configs")
    sides = {"base": a.base, "ours": a.ours}
    gen = os.path.join(a.ours, "traces", "xpu_tracegen")

    # The workloads of the table (--small: the same shapes, smaller).
    if a.small:
        gemm_args = ["gemm", "--m", "512", "--n", "512", "--k", "1024"]
        dec_args = ["transformer", "--model", "llama2-7b", "--phase", "decode", "--batch", "1", "--seq", "256", "--layers", "1"]
        ar_chips, ar_dims, ar_bytes = 16, "4x4", 1 << 20
        start_chips = [16, 64]
    else:
        gemm_args = ["gemm", "--m", "16384", "--n", "8192", "--k", "8448"]
        dec_args = ["transformer", "--model", "llama2-7b", "--phase", "decode", "--batch", "1", "--seq", "2048"]
        ar_chips, ar_dims, ar_bytes = 256, "16x16", 16 << 20
        start_chips = [256, 4096]
    traces = {}
    for name, args in (("gemm", gemm_args), ("decode", dec_args)):
        traces[name] = os.path.join(scratch, name + ".bin")
        log("generating the %s trace" % name)
        subprocess.run([gen] + args + ["-o", traces[name]], check=True, stdout=subprocess.DEVNULL)
    traces["allreduce"] = os.path.join(scratch, "allreduce.bin")
    subprocess.run([gen, "collective", "--op", "all-reduce", "--algo", "torus2d", "--dims", ar_dims, "--chips",
                    str(ar_chips), "--bytes", str(ar_bytes), "-o", traces["allreduce"]], check=True, stdout=subprocess.DEVNULL)
    ar_cfg = os.path.join(cfg, "xpu-torus%s.yaml" % ar_dims)
    xpu = os.path.join(cfg, "xpu.yaml")
    one_chip = os.path.join(a.root, "traces", "samples", "gemm-1k.bin")

    m = {s: {} for s in sides}  # side -> figure -> [samples]

    def add(side, key, v):
        m[side].setdefault(key, []).append(v)

    def sim(side, platform, trace, out, *extra):
        return [os.path.join(sides[side], "platform", "sim_main"), "--quiet", "--platform", platform, "--trace", trace,
                "--out", out] + list(extra)

    # --no-verify: replays of suggestions are not part of the targets; a build older than the
    # verification (be4474b) has no such option and verifies nothing anyway.
    no_verify = {}
    for side in sides:
        h = subprocess.run([os.path.join(sides[side], "platform", "sim_main"), "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        no_verify[side] = ["--no-verify"] if "--no-verify" in h else []

    for r in range(a.runs):
        order = ["base", "ours"] if r % 2 == 0 else ["ours", "base"]
        for side in order:
            out = os.path.join(scratch, "out-" + side)
            tag = "round %d of %d, %s" % (r + 1, a.runs, a.base_name if side == "base" else "ours")
            for w in ("gemm", "decode"):
                log("%s: %s --no-txlog" % (tag, w))
                wall, _ = run(sim(side, xpu, traces[w], out, "--no-txlog"))
                s = stats(out)
                add(side, w + ".instr", s["instructions_retired"])
                add(side, w + ".ips", s["instructions_per_second"])
                add(side, w + ".wall_notxlog", wall)
                add(side, w + ".sim_ns", s["simulated_time_ns"])
                log("%s: %s with the log and the analysis (--no-verify)" % (tag, w))
                wall, rss = peak_rss(sim(side, xpu, traces[w], out, *no_verify[side]))
                add(side, w + ".wall_full", wall)
                add(side, w + ".rss_full", rss)
                add(side, w + ".folder", folder_bytes(out))
                add(side, w + ".txlog", os.path.getsize(os.path.join(out, "txlog.bin")))
                add(side, w + ".timeline", os.path.getsize(os.path.join(out, "timeline.json")))
                add(side, w + ".ips_log", stats(out)["instructions_per_second"])
            log("%s: all-reduce on %d chips --no-txlog" % (tag, ar_chips))
            wall, _ = run(sim(side, ar_cfg, traces["allreduce"], out, "--no-txlog"))
            add(side, "ar.wall", wall)
            add(side, "ar.sim_wall", stats(out)["wall_seconds"])
            add(side, "ar.sim_ns", stats(out)["simulated_time_ns"])
            # Start-up: the whole process minus the simulation proper, on a ring of N chips
            # whose chip 0 runs a small GEMM (the others idle): parsing, building, checking.
            for n in start_chips[:1]:
                log("%s: start-up of a %d-chip ring" % (tag, n))
                wall, _ = run(sim(side, os.path.join(cfg, "xpu-ring4.yaml"), one_chip, out, "--no-txlog", "--set",
                                  "chips=%d" % n, "--set", "topology.dims=[%d]" % n))
                add(side, "start%d" % n, wall - stats(out)["wall_seconds"])
                # The platform's build alone (modules made and bound), as the run reports it
                # (stats.json build_seconds; a build older than that figure reports none).
                add(side, "build%d" % n, stats(out).get("build_seconds"))
    # The largest ring once per side (it is slow on old builds: bounded by --startup-timeout).
    n = start_chips[-1]
    failed = {}
    for side in ("base", "ours"):
        out = os.path.join(scratch, "out-" + side)
        log("%s: start-up of a %d-chip ring (once, at most %.0f s)" % (side, n, a.startup_timeout))
        # (It may fail where the host cannot give every SystemC thread its stack, e.g. past
        # vm.max_map_count: reported in the table, the other figures kept.)
        wall, err = run(sim(side, os.path.join(cfg, "xpu-ring4.yaml"), one_chip, out, "--no-txlog", "--set",
                            "chips=%d" % n, "--set", "topology.dims=[%d]" % n), timeout=a.startup_timeout, may_fail=True)
        if err:
            failed[side] = err
            log("%s: the %d-chip ring failed: %s" % (side, n, err))
        m[side]["start%d" % n] = [None if wall is None else wall - stats(out)["wall_seconds"]]

    def med(side, key):
        v = m[side].get(key)
        if not v or any(x is None for x in v):
            return None
        return statistics.median(v)

    # Simulated figures must agree between the builds (unless the model changed on purpose).
    for key in ("gemm.sim_ns", "decode.sim_ns", "ar.sim_ns"):
        b, o = med("base", key), med("ours", key)
        if b and o and abs(o - b) / b > 1e-3:
            print("WARNING   %s: simulated time differs by %.3f%% (%s %.1f ns, ours %.1f ns)"
                  % (key, 100 * (o - b) / b, a.base_name, b, o))

    rows = []

    def fmt(v, unit):
        if v is None:
            return "> %.0f s" % a.startup_timeout if unit == "s" else "not reported" if unit == "s reported" else "-"
        if unit == "s reported":
            unit = "s"
        if unit == "M/s":
            return "%.2f M/s" % (v / 1e6)
        if unit == "MB":
            return "%.1f MB" % (v / 1e6)
        if unit == "B/i":
            return "%.0f B/instr" % v
        if unit == "s":
            return "%.3f s" % v
        if unit == "x":
            return "x%.2f" % v
        return "%.3g" % v

    def row(what, key_or_fn, unit, better, target_text, target_ok):
        """better: 'higher' or 'lower' (which way the figure improves), for the ratio column."""
        vb = key_or_fn("base") if callable(key_or_fn) else med("base", key_or_fn)
        vo = key_or_fn("ours") if callable(key_or_fn) else med("ours", key_or_fn)
        ratio = "-"
        if vb and vo:
            ratio = "x%.2f" % (vo / vb if better == "higher" else vb / vo)
        verdict = "-" if target_ok is None else ("met" if target_ok(vb, vo) else "NOT met")
        rows.append((what, fmt(vb, unit), fmt(vo, unit), ratio, target_text, verdict))

    def per_instr(w, key):
        return lambda s: (med(s, w + "." + key) / med(s, w + ".instr")) if med(s, w + ".instr") else None

    def wall_ratio(w):
        return lambda s: med(s, w + ".wall_full") / med(s, w + ".wall_notxlog")

    def ips_ratio(s):
        return med(s, "decode.ips") / med(s, "gemm.ips")

    ge = lambda x: (lambda vb, vo: vb is not None and vo is not None and vo / vb >= x)
    le_base = lambda x: (lambda vb, vo: vb is not None and vo is not None and vb / vo >= x)
    row("decode --no-txlog (sim instr/s)", "decode.ips", "M/s", "higher", ">= x3 vs base", ge(3))
    row("decode --no-txlog (process wall)", "decode.wall_notxlog", "s", "lower", "", None)
    row("decode log + analysis, --no-verify (wall)", "decode.wall_full", "s", "lower", ">= x5 vs base", le_base(5))
    row("decode: log+analysis wall / --no-txlog wall", wall_ratio("decode"), "x", "lower", "<= 2.5",
        lambda vb, vo: vo is not None and vo <= 2.5)
    row("GEMM log + analysis, --no-verify (wall)", "gemm.wall_full", "s", "lower", "", None)
    row("GEMM: log+analysis wall / --no-txlog wall", wall_ratio("gemm"), "x", "lower", "<= 2.5",
        lambda vb, vo: vo is not None and vo <= 2.5)
    row("decode instr/s / GEMM instr/s (--no-txlog)", ips_ratio, "x", "higher", ">= 1/3",
        lambda vb, vo: vo is not None and vo >= 1 / 3)
    row("GEMM --no-txlog (sim instr/s)", "gemm.ips", "M/s", "higher", ">= 20 M/s",
        lambda vb, vo: vo is not None and vo >= 20e6)
    row("decode output folder (--no-verify)", "decode.folder", "MB", "lower", "<= 200 MB",
        lambda vb, vo: vo is not None and vo <= 200e6)
    row("decode txlog.bin per instruction", per_instr("decode", "txlog"), "B/i", "lower", "<= 64 B/instr",
        lambda vb, vo: vo is not None and vo <= 64)
    row("GEMM txlog.bin per instruction", per_instr("gemm", "txlog"), "B/i", "lower", "", None)
    row("decode timeline.json", "decode.timeline", "MB", "lower", "", None)
    row("decode run peak RSS per instruction", per_instr("decode", "rss_full"), "B/i", "lower", "<= 96 B/instr",
        lambda vb, vo: vo is not None and vo <= 96)
    row("GEMM run peak RSS per instruction", per_instr("gemm", "rss_full"), "B/i", "lower", "<= 96 B/instr",
        lambda vb, vo: vo is not None and vo <= 96)
    row("all-reduce %d chips --no-txlog (process wall)" % ar_chips, "ar.wall", "s", "lower", "", None)
    row("%d-chip platform built (stats.json build_seconds)" % start_chips[0], "build%d" % start_chips[0], "s reported",
        "lower", "< 0.1 s", lambda vb, vo: vo is not None and vo < 0.1)
    row("%d-chip ring start-up (whole process - the run)" % start_chips[0], "start%d" % start_chips[0], "s", "lower", "",
        None)
    row("%d-chip ring start-up (one run)" % start_chips[-1], "start%d" % start_chips[-1], "s", "lower", "< 10 s",
        lambda vb, vo: vo is not None and vo < 10)
    if failed:  # "failed", not "> timeout"
        r = list(rows[-1])
        for side in failed:
            r[1 if side == "base" else 2] = "failed"
        r[5] = "NOT met" if "ours" in failed else r[5]
        rows[-1] = tuple(r)

    head = ("target (medians of %d rounds)" % a.runs, a.base_name, "ours", "ratio", "target", "")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(6)]
    line = lambda r: "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    for side, err in failed.items():
        print("%d-chip ring, %s: failed: %s" % (start_chips[-1], a.base_name if side == "base" else "ours", err))
    print("ratio: how many times better ours is (> 1 = better); start-up = process wall - the simulation's wall_seconds "
          "(process start, parse, build, check, stats.json, exit)")
    if not a.scratch:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
