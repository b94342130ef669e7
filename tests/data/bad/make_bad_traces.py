#!/usr/bin/env python3
"""Derives malformed binary traces from a good one (base.xtr assembled by xpu_trace asm).

usage: make_bad_traces.py BASE.bin OUTDIR

Each output is BASE with one change (names below; manifest.txt says what each must produce).
Where a checksum would otherwise catch the change first, it is recomputed, so that the reader
meets the intended problem. Every patch checks the bytes it replaces: if the base trace or the
writer's layout changes, this script fails loudly instead of producing meaningless files.
"""
import os
import random
import struct
import sys
import zlib


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


class Trace:
    """The layout of the (canonical, one-stream, one-block) base trace."""

    def __init__(self, data):
        self.b = bytes(data)
        b = self.b
        assert b[:8] == b"XPUTRACE", "base: not a binary trace"
        self.stream_table = u64(b, 24)
        self.string_table = u64(b, 32)
        assert u32(b, 16) == 1 and u32(b, 20) == 1, "base: expected one stream in one block"
        assert b[64:68] == b"XBLK"
        self.block = 64
        self.payload = 64 + 20
        self.payload_len = u32(b, 64 + 12)
        assert self.payload + self.payload_len == self.stream_table < self.string_table, "base: unexpected layout"

    def copy(self):
        return bytearray(self.b)


def fix_header_crc(b):
    struct.pack_into("<I", b, 60, zlib.crc32(bytes(b[:60])))


def fix_payload_crc(t, b):
    struct.pack_into("<I", b, t.block + 16, zlib.crc32(bytes(b[t.payload:t.payload + t.payload_len])))


def fix_stream_table_crc(t, b):
    n = u32(b, t.stream_table + 4)
    end = t.stream_table + 8 + 28 * n
    struct.pack_into("<I", b, end, zlib.crc32(bytes(b[t.stream_table:end])))


def patch(b, offset, expect, new):
    """Replaces bytes `expect` at offset by `new` (same length), checking the old bytes."""
    assert len(expect) == len(new)
    got = bytes(b[offset:offset + len(expect)])
    assert got == expect, "offset 0x%x: expected %s, found %s" % (offset, expect.hex(), got.hex())
    b[offset:offset + len(new)] = new


def with_strings(t, strings):
    """The base with another string table (it is the last thing in the file)."""
    b = t.copy()[:t.string_table]
    table = bytearray(b"XSTS" + struct.pack("<I", len(strings)))
    for s in strings:
        n = len(s)
        while n >= 0x80:
            table.append((n & 0x7F) | 0x80)
            n >>= 7
        table.append(n)
        table += s
    table += struct.pack("<I", zlib.crc32(bytes(table)))
    b += table
    struct.pack_into("<Q", b, 40, len(b))
    fix_header_crc(b)
    return b


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    base, out = sys.argv[1], sys.argv[2]
    with open(base, "rb") as f:
        t = Trace(f.read())
    os.makedirs(out, exist_ok=True)
    p = t.payload
    # The payload: matmul d=m0 s0=v2 shape=128x128x64 dtype=bf16 ann=0 at p, then
    # dma src=hbm:0x0 dst=vmem:0x0 bytes=4096 flag=1 ann=1 at p+13, swait, halt.
    matmul, dma = p, p + 13
    patch(t.copy(), matmul, bytes.fromhex("21008321804280018001400000"), bytes.fromhex("21008321804280018001400000"))
    patch(t.copy(), dma, bytes.fromhex("3000702401ffff030000ffff0300802001"), bytes.fromhex("3000702401ffff030000ffff0300802001"))
    files = {}

    def header(name, field_offset, fmt, value, fix_crc=True):
        b = t.copy()
        struct.pack_into(fmt, b, field_offset, value)
        if fix_crc:
            fix_header_crc(b)
        files[name] = b

    def payload(name, offset, expect, new, fix_crc=True):
        b = t.copy()
        patch(b, offset, expect, new)
        if fix_crc:
            fix_payload_crc(t, b)
        files[name] = b

    files["empty.bin"] = b""
    files["short.bin"] = t.b[:40]
    files["truncated.bin"] = t.b[:len(t.b) // 2]
    files["appended.bin"] = t.b + b"\0" * 7
    b = t.copy()
    patch(b, 0, b"XPUTRACE", b"XPUTRACF")
    files["bad-magic.bin"] = b
    header("version-2.bin", 8, "<H", 2)
    b = t.copy()
    b[50] = 1  # a reserved byte, CRC left as it was
    files["header-crc.bin"] = b
    header("unknown-flag.bin", 12, "<I", 4)
    header("reserved-nonzero.bin", 50, "<B", 1)
    header("stream-count.bin", 16, "<I", 2)
    header("block-count.bin", 20, "<I", 3)
    header("table-offset.bin", 24, "<Q", 0x10000)
    b = t.copy()
    struct.pack_into("<Q", b, t.stream_table + 8 + 4, 5)  # instruction count, table CRC not fixed
    files["stream-table-crc.bin"] = b
    b = t.copy()
    struct.pack_into("<Q", b, t.stream_table + 8 + 4, 5)
    fix_stream_table_crc(t, b)
    files["stream-instructions.bin"] = b
    b = t.copy()
    struct.pack_into("<Q", b, t.stream_table + 8 + 12, 0x44)  # first_block_offset: not a block
    fix_stream_table_crc(t, b)
    files["first-block-offset.bin"] = b
    b = t.copy()
    patch(b, t.string_table, b"XSTS", b"XSTX")
    files["string-table-magic.bin"] = b
    b = t.copy()
    patch(b, t.string_table + 9, b"base", b"bass")
    files["string-table-crc.bin"] = b
    b = t.copy()
    patch(b, t.block, b"XBLK", b"XBLQ")
    files["block-magic.bin"] = b
    b = t.copy()
    struct.pack_into("<I", b, t.block + 8, 3)  # instruction_count
    files["count-too-small.bin"] = b
    b = t.copy()
    struct.pack_into("<I", b, t.block + 8, 5)
    files["count-too-large.bin"] = b
    payload("payload-crc.bin", matmul + 10, b"\x40", b"\x41", fix_crc=False)
    payload("unknown-opcode.bin", matmul, b"\x21", b"\x99")
    payload("reserved-present-bit.bin", matmul + 3, b"\x21", b"\xa1")
    payload("unknown-dtype.bin", matmul + 11, b"\x00", b"\x09")
    payload("unknown-space.bin", dma + 4, b"\x01", b"\x05")
    payload("overlong-varint.bin", dma + 14, b"\x80\x20", b"\x80\x00")
    payload("chip-out-of-range.bin", dma + 5, b"\xff\xff\x03", b"\xff\xff\x07")
    payload("ann-out-of-range.bin", matmul + 12, b"\x00", b"\x05")
    files["nul-string.bin"] = with_strings(t, [b"base", b"d\x00ma"])
    # A stream table that claims more instructions than the file has bytes for (a reader sizing
    # arrays by the claim once allocated gigabytes for a small file).
    b = t.copy()
    struct.pack_into("<Q", b, t.stream_table + 8 + 4, 3000000)
    fix_stream_table_crc(t, b)
    files["claims-too-many.bin"] = b

    def cut_payload(name, length, count):
        """The block's payload declared `length` bytes holding `count` instructions (the bytes
        after it stay where they were, unread): the decoder meets the payload's end early."""
        b = t.copy()
        struct.pack_into("<I", b, t.block + 8, count)
        struct.pack_into("<I", b, t.block + 12, length)
        struct.pack_into("<I", b, t.block + 16, zlib.crc32(bytes(b[t.payload:t.payload + length])))
        files[name] = b

    # The DMA's bytes varint (0x80 0x20 at dma + 14) cut after its first byte: a truncated
    # instruction, not an "overlong varint" read from the zero padding.
    cut_payload("varint-cut.bin", dma + 15 - p, 2)
    # Three instructions declared, two in the payload: the third would start at its end.
    cut_payload("third-past-payload.bin", dma + 18 - p, 3)
    files["dup-strings.bin"] = with_strings(t, [b"base", b"base"])
    files["bad-utf8-string.bin"] = with_strings(t, [b"base", b"\xffdma"])
    # Not derived from the base: a string table squeezed into 10 bytes before the stream table
    # (whose count, 2^31 - 1, once made the reader reserve 64 GiB).
    strtab = b"XSTS" + struct.pack("<I", 0x7FFFFFFF) + b"\0\0"
    sttab = b"XSTR" + struct.pack("<I", 0)
    sttab += struct.pack("<I", zlib.crc32(sttab))
    hdr = bytearray(b"XPUTRACE" + struct.pack("<HHIIIQQQ", 1, 0, 0, 0, 0, 64 + len(strtab), 64,
                                                 64 + len(strtab) + len(sttab)) + b"\0" * 12)
    hdr += b"\0" * 4
    fix_header_crc(hdr)
    files["string-table-squeezed.bin"] = bytes(hdr) + strtab + sttab
    rng = random.Random(20240601)
    files["garbage.bin"] = bytes(rng.randrange(256) for _ in range(256))

    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(data))
    print("%d files in %s" % (len(files), out))


if __name__ == "__main__":
    main()
