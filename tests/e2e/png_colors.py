#!/usr/bin/python3
"""Reads a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's screenshots are) with the
standard library alone and prints, as JSON: its size, how many distinct colours it has, and
how many pixels have each of the given colours (exactly, or within 2 per channel).

usage: png_colors.py SHOT.png [#rrggbb ...]
"""
import json
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    p = 0
    for _ in range(h):
        f = raw[p]
        line = bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        elif f != 0:
            raise ValueError("bad filter %d" % f)
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    w, h, bpp, rows = read_png(argv[1])
    hist = {}
    for line in rows:
        for i in range(0, len(line), bpp):
            key = line[i:i + 3]
            hist[key] = hist.get(key, 0) + 1
    wanted = {}
    for col in argv[2:]:
        rgb = bytes.fromhex(col.lstrip("#"))
        exact = hist.get(rgb, 0)
        near = sum(n for k, n in hist.items() if all(abs(k[j] - rgb[j]) <= 2 for j in range(3)))
        wanted[col] = {"exact": exact, "near": near}
    print(json.dumps({"width": w, "height": h, "distinct_colors": len(hist), "colors": wanted}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
