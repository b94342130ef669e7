// Binary trace format v1 ("t.bin"): constants and the instruction codec.
//
// docs/trace-format.md is the normative description (byte offsets, varint rules, operand
// conventions, a worked example). This header is what the reader and the writer share; it is
// header-only on purpose so that a converter written in C++ can encode instructions with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "traces/instruction.h"

namespace xpu::trace {

// Every problem with a trace file (or a text trace) is reported as a TraceError whose message
// names the file and the place: byte offset, stream (with its chip and core), block, instruction
// index within the stream, or file:line:col for text.
struct TraceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One (chip, core) instruction stream, as recorded in the stream table.
struct StreamInfo {
    std::uint16_t chip = 0, core = 0;
    std::uint64_t instructions = 0;
    std::uint64_t first_block_offset = 0;  // 0 if the stream has no instructions
    std::uint64_t blocks = 0;
};

inline constexpr char kFileMagic[8] = {'X', 'P', 'U', 'T', 'R', 'A', 'C', 'E'};
inline constexpr char kBlockMagic[4] = {'X', 'B', 'L', 'K'};
inline constexpr char kStreamTableMagic[4] = {'X', 'S', 'T', 'R'};
inline constexpr char kStringTableMagic[4] = {'X', 'S', 'T', 'S'};

inline constexpr std::uint16_t kVersionMajor = 1;
inline constexpr std::uint16_t kVersionMinor = 0;
inline constexpr std::uint32_t kKnownFlags = 0;  // no flag bits are defined in v1.0

inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::size_t kHeaderCrcOffset = 60;  // CRC32 of bytes [0, 60)
inline constexpr std::size_t kBlockHeaderSize = 20;
inline constexpr std::size_t kStreamEntrySize = 28;  // u16 chip, u16 core, u64 x3
// The writer closes a stream's block as soon as its payload reaches this many bytes.
inline constexpr std::size_t kBlockPayloadTarget = 64 * 1024;
// Readers reject larger blocks (bounds a reader's memory whatever the file says).
inline constexpr std::size_t kMaxBlockPayload = 16 * 1024 * 1024;

inline constexpr std::size_t kMaxVarintBytes = 10;
inline constexpr std::size_t kMinInstructionBytes = 4;  // opcode, unit, present mask
// Largest possible encoding: 4 + 4 registers + 2 x (1 + 3 + 10) memrefs + bytes 10 +
// shape 3 x 5 + dtype 1 + count 5 + flag 3 + value 10 + cond 1 + ann 5 + timestamp 10.
inline constexpr std::size_t kMaxInstructionBytes = 96;
// A decoder may read this far past the start of an instruction; buffers are padded by it.
inline constexpr std::size_t kDecodePadding = 128;

inline constexpr std::uint16_t kReservedFieldBits = 0x8000;

// Header fields at offset 0 (everything but magic, the reserved bytes and the CRC).
struct FileHeader {
    std::uint16_t version_major = kVersionMajor;
    std::uint16_t version_minor = kVersionMinor;
    std::uint32_t flags = 0;
    std::uint32_t stream_count = 0;
    std::uint32_t block_count = 0;
    std::uint64_t stream_table_offset = 0;
    std::uint64_t string_table_offset = 0;
    std::uint64_t file_size = 0;
};

namespace codec {

inline void put_u16(std::uint8_t* p, std::uint16_t v) {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
}
inline void put_u32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline void put_u64(std::uint8_t* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint16_t get_u16(const std::uint8_t* p) {
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
inline std::uint64_t get_u64(const std::uint8_t* p) {
    return static_cast<std::uint64_t>(get_u32(p)) | (static_cast<std::uint64_t>(get_u32(p + 4)) << 32);
}

// LEB128, unsigned, canonical (shortest) form.
inline std::uint8_t* put_varint(std::uint8_t* p, std::uint64_t v) {
    while (v >= 0x80) {
        *p++ = static_cast<std::uint8_t>(v | 0x80);
        v >>= 7;
    }
    *p++ = static_cast<std::uint8_t>(v);
    return p;
}
inline std::size_t varint_size(std::uint64_t v) {
    std::size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}
inline std::uint64_t zigzag(std::int64_t v) {
    const auto u = static_cast<std::uint64_t>(v);
    return (u << 1) ^ (0 - (u >> 63));
}
inline std::int64_t unzigzag(std::uint64_t z) {
    return static_cast<std::int64_t>((z >> 1) ^ (0 - (z & 1)));
}

enum class DecodeError : std::uint8_t {
    None,
    UnknownOpcode,
    ReservedBit,     // bit 15 of the present mask
    OverlongVarint,  // non-canonical: a multi-byte varint whose last byte is 0x00
    VarintTooLong,   // more than 10 bytes
    VarintOverflow,  // 10th byte > 1: the value does not fit 64 bits
    OutOfRange,      // the value does not fit the field (e.g. flag > 0xFFFF)
    UnknownSpace,
    UnknownDtype,
    UnknownCond,
};

struct DecodeFailure {
    DecodeError error = DecodeError::None;
    std::size_t offset = 0;      // of the offending byte, from the start of the instruction
    const char* field = "";      // which field ("opcode", "present", "addr", ...)
    std::uint64_t value = 0;     // the offending value, where there is one
};

const char* describe(DecodeError e);

namespace detail {
constexpr std::array<bool, 256> make_opcode_table() {
    std::array<bool, 256> t{};
    for (auto op : {Opcode::SAlu, Opcode::Branch, Opcode::Nop, Opcode::Halt, Opcode::VLoad, Opcode::VStore,
                    Opcode::VAlu, Opcode::VTrans, Opcode::VReduce, Opcode::VPermute, Opcode::MPush,
                    Opcode::MatMul, Opcode::MPop, Opcode::Dma, Opcode::SWait, Opcode::SSet, Opcode::SAdd,
                    Opcode::Barrier})
        t[static_cast<std::uint8_t>(op)] = true;
    return t;
}
inline constexpr std::array<bool, 256> kOpcodeValid = make_opcode_table();
inline const Instruction kDefaultInstruction{};

inline constexpr unsigned kNumSpaces = 2;
inline constexpr unsigned kNumDtypes = 6;
inline constexpr unsigned kNumConds = 6;

// Multi-byte varint (the first byte has its continuation bit set).
inline const std::uint8_t* get_varint_slow(const std::uint8_t* p, std::uint64_t& v, DecodeError& err) {
    std::uint64_t r = p[0] & 0x7Fu;
    for (unsigned i = 1; i < kMaxVarintBytes; ++i) {
        const std::uint64_t b = p[i];
        r |= (b & 0x7Fu) << (7 * i);
        if (b < 0x80) {
            if (b == 0) {
                err = DecodeError::OverlongVarint;
                return nullptr;
            }
            if (i == kMaxVarintBytes - 1 && b > 1) {
                err = DecodeError::VarintOverflow;
                return nullptr;
            }
            v = r;
            return p + i + 1;
        }
    }
    err = DecodeError::VarintTooLong;
    return nullptr;
}
}  // namespace detail

// Reads one varint at p; returns the byte after it, or nullptr (and err) if it is malformed.
// Needs up to kMaxVarintBytes readable bytes at p.
//
// The length is found with explicit branches: in real traces a field's length is regular, the
// branches predict well and the position of the next field is known without waiting for this
// one's data (a branch-free length computation with a bit scan was measured slower).
inline const std::uint8_t* get_varint(const std::uint8_t* p, std::uint64_t& v, DecodeError& err) {
    const std::uint64_t b0 = p[0];
    if (b0 < 0x80) {
        v = b0;
        return p + 1;
    }
    const std::uint64_t b1 = p[1];
    if (b1 < 0x80) {
        if (b1 == 0) {
            err = DecodeError::OverlongVarint;
            return nullptr;
        }
        v = (b0 & 0x7Fu) | (b1 << 7);
        return p + 2;
    }
    const std::uint64_t b2 = p[2];
    if (b2 < 0x80) {
        if (b2 == 0) {
            err = DecodeError::OverlongVarint;
            return nullptr;
        }
        v = (b0 & 0x7Fu) | ((b1 & 0x7Fu) << 7) | (b2 << 14);
        return p + 3;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // 4..8 bytes: the length from byte tests (predicted, so the next field's position does
    // not wait for this one's data), the value from one 8-byte load with the continuation bits
    // squeezed out.
    unsigned len;
    if (p[3] < 0x80) len = 4;
    else if (p[4] < 0x80) len = 5;
    else if (p[5] < 0x80) len = 6;
    else if (p[6] < 0x80) len = 7;
    else if (p[7] < 0x80) len = 8;
    else return detail::get_varint_slow(p, v, err);
    if (p[len - 1] == 0) {  // last byte 0x00: a shorter encoding exists
        err = DecodeError::OverlongVarint;
        return nullptr;
    }
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    if (len < 8) x &= (std::uint64_t{1} << (8 * len)) - 1;
    x &= 0x7F7F7F7F7F7F7F7Full;
    x = ((x & 0x7F007F007F007F00ull) >> 1) | (x & 0x007F007F007F007Full);
    x = ((x & 0x3FFF00003FFF0000ull) >> 2) | (x & 0x00003FFF00003FFFull);
    x = ((x & 0x0FFFFFFF00000000ull) >> 4) | (x & 0x000000000FFFFFFFull);
    v = x;
    return p + len;
#endif
    return detail::get_varint_slow(p, v, err);
}

inline bool is_known_opcode(std::uint8_t raw) { return detail::kOpcodeValid[raw]; }

// Encodes `in` at p (which needs kMaxInstructionBytes of room); returns the end. The caller
// guarantees what unencodable_reason() checks (valid opcode, no reserved present bit, known
// dtype/cond/space); fields that are absent are not written.
inline std::uint8_t* encode_instruction(const Instruction& in, std::uint8_t* p) {
    const std::uint16_t m = in.present;
    p[0] = static_cast<std::uint8_t>(in.op);
    p[1] = in.unit;
    put_u16(p + 2, m);
    p += 4;
    if (m & (kDst | kSrc0 | kSrc1 | kSrc2)) {
        if (m & kDst) *p++ = in.dst;
        if (m & kSrc0) *p++ = in.src[0];
        if (m & kSrc1) *p++ = in.src[1];
        if (m & kSrc2) *p++ = in.src[2];
    }
    if (m & kMemSrc) {
        *p++ = static_cast<std::uint8_t>(in.mem_src.space);
        p = put_varint(p, in.mem_src.chip);
        p = put_varint(p, in.mem_src.addr);
    }
    if (m & kMemDst) {
        *p++ = static_cast<std::uint8_t>(in.mem_dst.space);
        p = put_varint(p, in.mem_dst.chip);
        p = put_varint(p, in.mem_dst.addr);
    }
    if (m & kBytes) p = put_varint(p, in.bytes);
    if (m & kShape) {
        p = put_varint(p, in.m);
        p = put_varint(p, in.n);
        p = put_varint(p, in.k);
    }
    if (m & kDtype) *p++ = static_cast<std::uint8_t>(in.dtype);
    if (m & kCount) p = put_varint(p, in.count);
    if (m & kFlag) p = put_varint(p, in.flag);
    if (m & kValue) p = put_varint(p, zigzag(in.value));
    if (m & kCond) *p++ = static_cast<std::uint8_t>(in.cond);
    if (m & kAnn) p = put_varint(p, in.ann);
    if (m & kTimestamp) p = put_varint(p, in.timestamp);
    return p;
}

// Why `in` cannot be encoded (nullptr if it can): unknown opcode, reserved present bit, or an
// enum field (space, dtype, cond) outside its range. Decoders reject the same things.
inline const char* unencodable_reason(const Instruction& in) {
    if (!is_known_opcode(static_cast<std::uint8_t>(in.op))) return "unknown opcode";
    if (in.present & kReservedFieldBits) return "reserved present bit 15 set";
    if ((in.present & kMemSrc) && static_cast<unsigned>(in.mem_src.space) >= detail::kNumSpaces)
        return "unknown memory space in src";
    if ((in.present & kMemDst) && static_cast<unsigned>(in.mem_dst.space) >= detail::kNumSpaces)
        return "unknown memory space in dst";
    if ((in.present & kDtype) && static_cast<unsigned>(in.dtype) >= detail::kNumDtypes) return "unknown dtype";
    if ((in.present & kCond) && static_cast<unsigned>(in.cond) >= detail::kNumConds) return "unknown cond";
    return nullptr;
}

namespace detail {

#if defined(__GNUC__)
#define XPU_TRACE_INLINE inline __attribute__((always_inline))
#define XPU_TRACE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define XPU_TRACE_INLINE inline
#define XPU_TRACE_UNLIKELY(x) (x)
#endif

inline const std::uint8_t* failed(DecodeFailure& f, DecodeError e, const std::uint8_t* at, const std::uint8_t* start,
                                  const char* field, std::uint64_t value) {
    f.error = e;
    f.offset = static_cast<std::size_t>(at - start);
    f.field = field;
    f.value = value;
    return nullptr;
}

// One varint field no larger than `limit`; p advances past it. False (and f filled) if malformed.
XPU_TRACE_INLINE bool varint_field(const std::uint8_t*& p, std::uint64_t& v, std::uint64_t limit, const char* name,
                                   const std::uint8_t* start, DecodeFailure& f) {
    DecodeError err = DecodeError::None;
    const std::uint8_t* q = get_varint(p, v, err);
    if (XPU_TRACE_UNLIKELY(q == nullptr)) return failed(f, err, p, start, name, 0), false;
    if (XPU_TRACE_UNLIKELY(v > limit)) return failed(f, DecodeError::OutOfRange, p, start, name, v), false;
    p = q;
    return true;
}

XPU_TRACE_INLINE bool mem_field(const std::uint8_t*& p, MemRef& m, bool is_src, const std::uint8_t* start,
                                DecodeFailure& f) {
    if (XPU_TRACE_UNLIKELY(*p >= kNumSpaces))
        return failed(f, DecodeError::UnknownSpace, p, start, is_src ? "src.space" : "dst.space", *p), false;
    m.space = static_cast<Space>(*p++);
    std::uint64_t v;
    if (!varint_field(p, v, 0xFFFFu, is_src ? "src.chip" : "dst.chip", start, f)) return false;
    m.chip = static_cast<std::uint16_t>(v);
    return varint_field(p, m.addr, ~std::uint64_t{0}, is_src ? "src.addr" : "dst.addr", start, f);
}

}  // namespace detail

// Decodes one instruction at p into `out` (every absent field is reset to its default).
// Reads at most kMaxInstructionBytes bytes from p, so the caller pads its buffer and checks
// afterwards that the returned end lies within the payload. Returns nullptr on a malformed
// instruction, with `fail` saying what and where.
inline const std::uint8_t* decode_instruction(const std::uint8_t* p, Instruction& out, DecodeFailure& fail) {
    const std::uint8_t* const start = p;
    out = detail::kDefaultInstruction;  // a copy, not Instruction{}: GCC zeroes with slow `rep stos`
    if (XPU_TRACE_UNLIKELY(!detail::kOpcodeValid[p[0]]))
        return detail::failed(fail, DecodeError::UnknownOpcode, p, start, "opcode", p[0]);
    out.op = static_cast<Opcode>(p[0]);
    out.unit = p[1];
    const unsigned m = get_u16(p + 2);
    if (XPU_TRACE_UNLIKELY(m & kReservedFieldBits))
        return detail::failed(fail, DecodeError::ReservedBit, p + 2, start, "present", m);
    out.present = static_cast<std::uint16_t>(m);
    p += 4;
    {
        // Branch-free: the register fields are one byte each (absent ones stay 0).
        const unsigned b0 = m & 1u, b1 = (m >> 1) & 1u, b2 = (m >> 2) & 1u, b3 = (m >> 3) & 1u;
        out.dst = static_cast<std::uint8_t>(p[0] & (0u - b0));
        p += b0;
        out.src[0] = static_cast<std::uint8_t>(p[0] & (0u - b1));
        p += b1;
        out.src[1] = static_cast<std::uint8_t>(p[0] & (0u - b2));
        p += b2;
        out.src[2] = static_cast<std::uint8_t>(p[0] & (0u - b3));
        p += b3;
    }
    // One predictable branch per field: measured faster than jump tables over groups of
    // present bits, and than branch-free decoding, on regular and on random instruction mixes.
    std::uint64_t v;
    if (m & kMemSrc)
        if (!detail::mem_field(p, out.mem_src, true, start, fail)) return nullptr;
    if (m & kMemDst)
        if (!detail::mem_field(p, out.mem_dst, false, start, fail)) return nullptr;
    if (m & kBytes)
        if (!detail::varint_field(p, out.bytes, ~std::uint64_t{0}, "bytes", start, fail)) return nullptr;
    if (m & kShape) {
        if (!detail::varint_field(p, v, 0xFFFFFFFFu, "shape.m", start, fail)) return nullptr;
        out.m = static_cast<std::uint32_t>(v);
        if (!detail::varint_field(p, v, 0xFFFFFFFFu, "shape.n", start, fail)) return nullptr;
        out.n = static_cast<std::uint32_t>(v);
        if (!detail::varint_field(p, v, 0xFFFFFFFFu, "shape.k", start, fail)) return nullptr;
        out.k = static_cast<std::uint32_t>(v);
    }
    if (m & kDtype) {
        if (XPU_TRACE_UNLIKELY(*p >= detail::kNumDtypes))
            return detail::failed(fail, DecodeError::UnknownDtype, p, start, "dtype", *p);
        out.dtype = static_cast<DType>(*p++);
    }
    if (m & kCount) {
        if (!detail::varint_field(p, v, 0xFFFFFFFFu, "count", start, fail)) return nullptr;
        out.count = static_cast<std::uint32_t>(v);
    }
    if (m & kFlag) {
        if (!detail::varint_field(p, v, 0xFFFFu, "flag", start, fail)) return nullptr;
        out.flag = static_cast<std::uint16_t>(v);
    }
    if (m & kValue) {
        if (!detail::varint_field(p, v, ~std::uint64_t{0}, "value", start, fail)) return nullptr;
        out.value = unzigzag(v);
    }
    if (m & kCond) {
        if (XPU_TRACE_UNLIKELY(*p >= detail::kNumConds))
            return detail::failed(fail, DecodeError::UnknownCond, p, start, "cond", *p);
        out.cond = static_cast<Cond>(*p++);
    }
    if (m & kAnn) {
        if (!detail::varint_field(p, v, 0xFFFFFFFFu, "ann", start, fail)) return nullptr;
        out.ann = static_cast<std::uint32_t>(v);
    }
    if (m & kTimestamp)
        if (!detail::varint_field(p, out.timestamp, ~std::uint64_t{0}, "timestamp", start, fail)) return nullptr;
    return p;
}

// The 64-byte file header, CRC included.
void encode_header(const FileHeader& h, std::uint8_t out[kHeaderSize]);

}  // namespace codec
}  // namespace xpu::trace

#undef XPU_TRACE_INLINE
#undef XPU_TRACE_UNLIKELY
