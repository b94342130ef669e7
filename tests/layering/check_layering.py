#!/usr/bin/env python3
"""Checks that the top folders of the source tree depend on each other one way only.

Reads every #include "FOLDER/..." in the C++ files of each top folder and checks
  1. that each folder includes only the folders it is allowed to (ALLOWED below), and
  2. that the folder graph the includes form has no cycle (whatever ALLOWED says).
usage: check_layering.py SOURCE_ROOT [--self-test]
--self-test builds small trees in a temporary folder (one legal, one with a cycle, one with a
forbidden edge) and checks that the checker accepts and rejects them, so the check cannot pass
vacuously. Exit 0 when the tree is layered, 1 with one line per offending include otherwise.
"""
import os
import re
import sys
import shutil
import tempfile

# The layering of docs/architecture.md: traces/ is the base; models/ uses it; platform/ uses
# both (and its sim_main runs the analysis at the end of a run); analysis/ reads the log and
# the trace, so traces/ only. tests/ may use everything and nothing may use tests/.
ALLOWED = {
    "traces": set(),
    "models": {"traces"},
    "analysis": {"traces"},
    "platform": {"traces", "models", "analysis"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)
EXTS = (".h", ".hpp", ".cpp", ".cc")


def edges(root):
    """{(from_folder, to_folder): [file:line, ...]} for every include across top folders."""
    out = {}
    for top in ALLOWED:
        base = os.path.join(root, top)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    to = m.group(1)
                    if to == top or (to not in ALLOWED and to != "tests"):
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    out.setdefault((top, to), []).append("%s:%d" % (os.path.relpath(path, root), line))
    return out


def find_cycle(graph):
    """A list of folders forming a cycle in {folder: {folders}}, or None."""
    state = {}

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if state.get(m) is None:
                c = visit(m, stack)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if state.get(n) is None:
            c = visit(n, [])
            if c:
                return c
    return None


def check(root):
    """Problems found under root, one string each."""
    e = edges(root)
    problems = []
    for (a, b), where in sorted(e.items()):
        if b not in ALLOWED.get(a, set()):
            problems.append("%s/ must not include %s/ (allowed: %s): %s" % (
                a, b, ", ".join(sorted(ALLOWED[a])) or "nothing of ours", ", ".join(where[:5])))
    graph = {}
    for (a, b) in e:
        graph.setdefault(a, set()).add(b)
    cycle = find_cycle(graph)
    if cycle:
        problems.append("include cycle between folders: " + " -> ".join(cycle))
    return problems


def self_test():
    made = []

    def tree(files):
        d = tempfile.mkdtemp(prefix="layering_")
        made.append(d)  # removed below: every run of the suite left three folders in /tmp
        for path, text in files.items():
            full = os.path.join(d, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)
        return d

    legal = tree({"traces/a.h": "#pragma once\n", "models/m.h": '#include "traces/a.h"\n',
                  "platform/p.cpp": '#include "models/m.h"\n#include "analysis/x.h"\n',
                  "analysis/x.h": '#include "traces/a.h"\n'})
    cyclic = tree({"traces/a.h": '#include "models/m.h"\n', "models/m.h": '#include "traces/a.h"\n'})
    forbidden = tree({"analysis/x.cpp": '#include "platform/p.h"\n', "platform/p.h": "\n"})
    ok = True
    if check(legal):
        print("self-test: a layered tree was rejected: %s" % check(legal))
        ok = False
    p = check(cyclic)
    if not any("cycle" in x for x in p):
        print("self-test: a cycle traces <-> models was not reported: %s" % p)
        ok = False
    if not check(forbidden):
        print("self-test: analysis/ including platform/ was not reported")
        ok = False
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
    return ok


def main():
    if len(sys.argv) < 2:
        print("usage: check_layering.py SOURCE_ROOT [--self-test]", file=sys.stderr)
        return 2
    if "--self-test" in sys.argv[2:] and not self_test():
        return 1
    problems = check(sys.argv[1])
    for p in problems:
        print("FAIL: " + p)
    if problems:
        print("0 passed, %d failed" % len(problems))
        return 1
    n = sum(len(v) for v in edges(sys.argv[1]).values())
    print("layering: %d includes across folders, all one way (%s)" % (
        n, "; ".join("%s -> %s" % (a, ", ".join(sorted(b)) or "-") for a, b in ALLOWED.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
