#!/usr/bin/python3
"""Checks that a timeline.json is valid JSON in the Chrome trace-event format, as Perfetto's
JSON importer reads it, and prints what it holds.

usage: check_timeline.py TIMELINE.json [--expect KEY=N ...] [--expect-process NAME ...]
                                       [--expect-thread NAME ...] [--min KEY=N ...]
  KEY: a slice category (instr, stall, unit, dma, link), "counters" (counter tracks),
       "processes", "threads".

Checked: the object form {"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {...}};
UTF-8; no duplicate keys; every event has ph, pid, tid (integers >= 0), ts (a number >= 0) and
a non-empty name; "X" events have dur >= 0, a cat and args as an object; "M" events are
process_name / thread_name (with args.name) or *_sort_index (with an integer args.sort_index);
"C" events have numeric args. Every thread with slices has a thread_name, in a process with a
process_name; a tid belongs to one process. The slices of one thread never overlap, neither in
us nor in whole ns as Perfetto rounds them (round(ts*1000) + round(dur*1000)): Perfetto drops a
slice that overlaps another of its track without nesting in it.
Exit 0 and a JSON summary on stdout, or exit 1 with the first problems on stderr.
"""
import json
import math
import sys
from collections import defaultdict


def fail(problems):
    for p in problems[:20]:
        print("check_timeline: " + p, file=sys.stderr)
    if len(problems) > 20:
        print("check_timeline: ... %d problems in all" % len(problems), file=sys.stderr)
    sys.exit(1)


def no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def is_num(x):
    return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[1]
    expect, minimum, want_proc, want_thread = {}, {}, [], []
    i = 2
    while i < len(argv):
        opt = argv[i]
        val = argv[i + 1] if i + 1 < len(argv) else None
        if val is None:
            print("check_timeline: %s needs a value" % opt, file=sys.stderr)
            return 2
        if opt in ("--expect", "--min"):
            k, n = val.split("=", 1)
            (expect if opt == "--expect" else minimum)[k] = int(n)
        elif opt == "--expect-process":
            want_proc.append(val)
        elif opt == "--expect-thread":
            want_thread.append(val)
        else:
            print("check_timeline: unknown option " + opt, file=sys.stderr)
            return 2
        i += 2

    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(["%s: not UTF-8: %s" % (path, e)])
    try:
        doc = json.loads(text, object_pairs_hook=no_duplicates,
                         parse_constant=lambda c: (_ for _ in ()).throw(ValueError("non-JSON constant " + c)))
    except ValueError as e:
        fail(["%s: not valid JSON: %s" % (path, e)])

    problems = []
    if not isinstance(doc, dict):
        fail(["%s: the top level is not an object" % path])
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        fail(["%s: no traceEvents array" % path])
    if doc.get("displayTimeUnit") != "ns":
        problems.append('displayTimeUnit is not "ns"')
    if not isinstance(doc.get("metadata"), dict):
        problems.append("no metadata object")

    slices = defaultdict(list)  # (pid, tid) -> [(ts, dur, name)]
    cats = defaultdict(int)
    pnames, tnames, tid_pid = {}, {}, {}
    counters = set()
    for n, e in enumerate(events):
        where = "event %d" % n
        if not isinstance(e, dict):
            problems.append(where + ": not an object")
            continue
        ph, pid, tid, ts, name = e.get("ph"), e.get("pid"), e.get("tid"), e.get("ts"), e.get("name")
        bad = [k for k, ok in (("ph", isinstance(ph, str) and len(ph) == 1),
                               ("pid", is_int(pid) and pid >= 0), ("tid", is_int(tid) and tid >= 0),
                               ("ts", is_num(ts) and ts >= 0),
                               ("name", isinstance(name, str) and name != "")) if not ok]
        if bad:
            problems.append("%s: missing or bad %s: %s" % (where, ", ".join(bad), json.dumps(e)[:200]))
            continue
        if ph == "X":
            dur, cat, args = e.get("dur"), e.get("cat"), e.get("args")
            if not (is_num(dur) and dur >= 0):
                problems.append("%s: X event with dur %r" % (where, dur))
                continue
            if not isinstance(cat, str) or (args is not None and not isinstance(args, dict)):
                problems.append("%s: X event without cat, or args not an object" % where)
            slices[(pid, tid)].append((ts, dur, name))
            cats[cat] += 1
        elif ph == "M":
            args = e.get("args")
            if not isinstance(args, dict):
                problems.append(where + ": M event without args")
                continue
            if name in ("process_name", "thread_name"):
                if not isinstance(args.get("name"), str) or not args["name"]:
                    problems.append(where + ": %s without args.name" % name)
                    continue
                if name == "process_name":
                    pnames[pid] = args["name"]
                else:
                    tnames[(pid, tid)] = args["name"]
                    if tid_pid.setdefault(tid, pid) != pid:
                        problems.append("%s: tid %d named in pids %d and %d" % (where, tid, tid_pid[tid], pid))
            elif name in ("process_sort_index", "thread_sort_index"):
                if not is_int(args.get("sort_index")):
                    problems.append(where + ": %s without an integer args.sort_index" % name)
            else:
                problems.append(where + ": unknown metadata event " + name)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(is_num(v) for v in args.values()):
                problems.append(where + ": C event without numeric args")
            counters.add((pid, name))
        else:
            problems.append(where + ": unexpected phase " + ph)

    for key, v in slices.items():
        if key not in tnames:
            problems.append("pid %d tid %d has slices but no thread_name" % key)
        if key[0] not in pnames:
            problems.append("pid %d has slices but no process_name" % key[0])
        v.sort(key=lambda s: (s[0], s[1]))
        for a, b in zip(v, v[1:]):
            a_end = a[0] + a[1]
            if a_end > b[0] + 1e-9:
                problems.append("%s: %r [%f, %f] overlaps %r at %f" % (tnames.get(key, key), a[2], a[0], a_end, b[2], b[0]))
            elif round(a[0] * 1000) + round(a[1] * 1000) > round(b[0] * 1000):
                # Python rounds ties to even, Perfetto away from zero: both are checked by the writer's tie rule
                problems.append("%s: %r ends after %r starts at ns resolution" % (tnames.get(key, key), a[2], b[2]))
            else:
                a_ns = math.floor(a[0] * 1000 + 0.5) + math.floor(a[1] * 1000 + 0.5)
                if a_ns > math.floor(b[0] * 1000 + 0.5):
                    problems.append("%s: %r ends after %r starts at ns resolution (half up)" % (tnames.get(key, key), a[2], b[2]))

    summary = {
        "events": len(events),
        "processes": len(pnames),
        "threads": len(tnames),
        "counters": len(counters),
        "slices": dict(sorted(cats.items())),
        "process_names": sorted(set(pnames.values())),
        "metadata": doc.get("metadata"),
    }
    counts = dict(cats)
    counts.update({"processes": len(pnames), "threads": len(tnames), "counters": len(counters)})
    for k, n in expect.items():
        if counts.get(k, 0) != n:
            problems.append("expected %d %s, found %d" % (n, k, counts.get(k, 0)))
    for k, n in minimum.items():
        if counts.get(k, 0) < n:
            problems.append("expected at least %d %s, found %d" % (n, k, counts.get(k, 0)))
    for p in want_proc:
        if p not in pnames.values():
            problems.append("no process named %r (have %s)" % (p, sorted(set(pnames.values()))))
    for t in want_thread:
        if t not in tnames.values():
            problems.append("no thread named %r" % t)
    if problems:
        fail(problems)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
