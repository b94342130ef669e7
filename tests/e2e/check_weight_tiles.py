#!/usr/bin/env python3
"""Every matmul of a patched trace multiplies by the weight tile it multiplied by in the
original: the tile pushed last before it on its unit (models/matrix_unit.h), state no register
names. For patches that rewrite instructions in place and insert pushes right after pushes
(spread_matmuls: a matmul may change unit, the push it multiplies by issued to the new unit
too). Reads both traces as text (xpu_trace dis); a push inserted after push P stands for P's
tile on its own unit. Also checks that the matmuls of one accumulation (into a register since its
last pops) stay on one unit, and that every pop reads an accumulator last written on its own
unit. Exit 1 with the first instruction that breaks one of these.

usage: check_weight_tiles.py ORIGINAL.xtr PATCHED.xtr
"""
import re
import sys


def program(path):
    out = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("."):
            continue
        op = line.split()[0]
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        out.append((op, int(f.get("u", 0)), f, line))
    return out


def main():
    orig, patched = program(sys.argv[1]), program(sys.argv[2])
    # Walk both: patched[j] is orig[i] (perhaps on another unit), or a push inserted after a push.
    tile_o, tile_p = {}, {}  # unit -> the original index of the push whose tile it holds
    acc_unit = {}            # accumulator register -> the unit that last wrote it (patched)
    acc_open = set()         # accumulators written since their last pop
    i = j = 0
    matmuls = moved = inserted = 0

    def same_but_unit(x, y):
        return x[0] == y[0] and {k: v for k, v in x[2].items() if k != "u"} == {k: v for k, v in y[2].items() if k != "u"}

    while j < len(patched):
        op, unit, f, text = patched[j]
        if i < len(orig) and same_but_unit(patched[j], orig[i]) and (op != "mpush" or unit == orig[i][1]):
            o_op, o_unit, o_f, _ = orig[i]
            if op == "mpush":
                tile_o[o_unit] = i
                tile_p[unit] = i
            elif op == "matmul":
                matmuls += 1
                moved += unit != o_unit
                if tile_p.get(unit) != tile_o.get(o_unit):
                    sys.exit("patched instruction %d (original %d, %s): multiplies by the tile of push %s, originally %s"
                             % (j, i, text, tile_p.get(unit), tile_o.get(o_unit)))
                # One accumulation (its matmuls since the register's last pops) stays on one unit.
                d = f.get("d")
                if d in acc_open and acc_unit.get(d) != unit:
                    sys.exit("patched instruction %d (original %d, %s): adds to an accumulation begun on unit %d"
                             % (j, i, text, acc_unit[d]))
                acc_unit[d] = unit
                acc_open.add(d)
            elif op == "mpop":
                acc_open.discard(f.get("s0"))
                if acc_unit.get(f.get("s0"), unit) != unit:
                    sys.exit("patched instruction %d (%s): pops an accumulator written on unit %d" % (j, text, acc_unit[f["s0"]]))
            i += 1
        elif op == "mpush" and i > 0 and same_but_unit(patched[j], orig[i - 1]):
            inserted += 1
            tile_p[unit] = i - 1  # the tile of the push it follows
        else:
            sys.exit("patched instruction %d (%s) matches neither original instruction %d nor a push inserted after a push" % (j, text, i))
        j += 1
    if i != len(orig):
        sys.exit("the patched trace ends at original instruction %d of %d" % (i, len(orig)))
    print("%d matmuls (%d on another unit), %d pushes inserted: each multiplies by its original tile" % (matmuls, moved, inserted))


main()
