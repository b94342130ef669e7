#!/usr/bin/env python3
"""Writes a binary trace of STREAMS streams (chip 0, cores 0..STREAMS-1) of BLOCKS one-nop blocks
each, the blocks either round-robin (interleaved) or stream after stream (in order): the same
content in two layouts, for tests/e2e/hardening.sh (reading must be linear in both).

usage: make_interleaved.py STREAMS BLOCKS interleaved|in-order OUT.bin
"""
import struct
import sys
import zlib

NOP = bytes([0x03, 0x00, 0x00, 0x00])  # opcode nop, unit 0, no operands (xpu_trace asm of 'nop')


def main():
    streams, blocks, layout, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    order = [(b, s) for b in range(blocks) for s in range(streams)] if layout == "interleaved" else \
        [(b, s) for s in range(streams) for b in range(blocks)]
    body = bytearray()
    first = {}
    for _, s in order:
        first.setdefault(s, 64 + len(body))
        body += b"XBLK" + struct.pack("<IIII", s, 1, len(NOP), zlib.crc32(NOP)) + NOP
    st_off = 64 + len(body)
    table = b"XSTR" + struct.pack("<I", streams)
    for s in range(streams):
        table += struct.pack("<HHQQQ", 0, s, blocks, first[s], blocks)
    table += struct.pack("<I", zlib.crc32(table))
    ss_off = st_off + len(table)
    strings = b"XSTS" + struct.pack("<I", 0)
    strings += struct.pack("<I", zlib.crc32(strings))
    size = ss_off + len(strings)
    header = bytearray(b"XPUTRACE" + struct.pack("<HHIIIQQQ", 1, 0, 0, streams, streams * blocks, st_off, ss_off, size))
    header += bytes(60 - len(header))
    header += struct.pack("<I", zlib.crc32(bytes(header)))
    with open(out, "wb") as f:
        f.write(bytes(header) + bytes(body) + table + strings)


if __name__ == "__main__":
    main()
