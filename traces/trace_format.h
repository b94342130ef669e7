// Binary trace format v1 ("t.bin"): constants and the instruction codec.
//
// docs/trace-format.md is the normative description (byte offsets, varint rules, operand
// conventions, a worked example). This header is what the reader and the writer share; it is
// header-only on purpose so that a converter written in C++ can encode instructions with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/instruction.h"

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
inline const std::uint8_t* get_varint(const std::uint8_t* p, std::uint64_t& v, DecodeError& err) {
    if (p[0] < 0x80) {
        v = p[0];
        return p + 1;
    }
    return detail::get_varint_slow(p, v, err);
}

inline bool is_known_opcode(std::uint8_t raw) { return detail::kOpcodeValid[raw]; }

// Encodes `in` at p (which needs kMaxInstructionBytes of room); returns the end. The caller
// guarantees a valid opcode, no reserved present bit and known dtype/cond/space (see
// encodable()); fields that are absent are not written.
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

// Decodes one instruction at p into `out` (every absent field is reset to its default).
// Reads at most kMaxInstructionBytes bytes from p, so the caller pads its buffer and checks
// afterwards that the returned end lies within the payload. Returns nullptr on a malformed
// instruction, with `fail` saying what and where.
inline const std::uint8_t* decode_instruction(const std::uint8_t* p, Instruction& out, DecodeFailure& fail) {
    const std::uint8_t* const start = p;
    DecodeError err = DecodeError::None;
    std::uint64_t v = 0;
    auto bad = [&](DecodeError e, const std::uint8_t* at, const char* field, std::uint64_t value) {
        fail.error = e;
        fail.offset = static_cast<std::size_t>(at - start);
        fail.field = field;
        fail.value = value;
        return static_cast<const std::uint8_t*>(nullptr);
    };
#define XPU_VARINT(field_name, limit)                                                  \
    do {                                                                               \
        const std::uint8_t* at_ = p;                                                   \
        p = get_varint(p, v, err);                                                     \
        if (!p) return bad(err, at_, field_name, 0);                                   \
        if (v > (limit)) return bad(DecodeError::OutOfRange, at_, field_name, v);      \
    } while (0)

    out = Instruction{};
    if (!detail::kOpcodeValid[p[0]]) return bad(DecodeError::UnknownOpcode, p, "opcode", p[0]);
    out.op = static_cast<Opcode>(p[0]);
    out.unit = p[1];
    const std::uint16_t m = get_u16(p + 2);
    if (m & kReservedFieldBits) return bad(DecodeError::ReservedBit, p + 2, "present", m);
    out.present = m;
    p += 4;
    if (m & (kDst | kSrc0 | kSrc1 | kSrc2)) {
        if (m & kDst) out.dst = *p++;
        if (m & kSrc0) out.src[0] = *p++;
        if (m & kSrc1) out.src[1] = *p++;
        if (m & kSrc2) out.src[2] = *p++;
    }
    if (m & kMemSrc) {
        if (*p >= detail::kNumSpaces) return bad(DecodeError::UnknownSpace, p, "src.space", *p);
        out.mem_src.space = static_cast<Space>(*p++);
        XPU_VARINT("src.chip", 0xFFFFu);
        out.mem_src.chip = static_cast<std::uint16_t>(v);
        XPU_VARINT("src.addr", ~std::uint64_t{0});
        out.mem_src.addr = v;
    }
    if (m & kMemDst) {
        if (*p >= detail::kNumSpaces) return bad(DecodeError::UnknownSpace, p, "dst.space", *p);
        out.mem_dst.space = static_cast<Space>(*p++);
        XPU_VARINT("dst.chip", 0xFFFFu);
        out.mem_dst.chip = static_cast<std::uint16_t>(v);
        XPU_VARINT("dst.addr", ~std::uint64_t{0});
        out.mem_dst.addr = v;
    }
    if (m & kBytes) {
        XPU_VARINT("bytes", ~std::uint64_t{0});
        out.bytes = v;
    }
    if (m & kShape) {
        XPU_VARINT("shape.m", 0xFFFFFFFFu);
        out.m = static_cast<std::uint32_t>(v);
        XPU_VARINT("shape.n", 0xFFFFFFFFu);
        out.n = static_cast<std::uint32_t>(v);
        XPU_VARINT("shape.k", 0xFFFFFFFFu);
        out.k = static_cast<std::uint32_t>(v);
    }
    if (m & kDtype) {
        if (*p >= detail::kNumDtypes) return bad(DecodeError::UnknownDtype, p, "dtype", *p);
        out.dtype = static_cast<DType>(*p++);
    }
    if (m & kCount) {
        XPU_VARINT("count", 0xFFFFFFFFu);
        out.count = static_cast<std::uint32_t>(v);
    }
    if (m & kFlag) {
        XPU_VARINT("flag", 0xFFFFu);
        out.flag = static_cast<std::uint16_t>(v);
    }
    if (m & kValue) {
        XPU_VARINT("value", ~std::uint64_t{0});
        out.value = unzigzag(v);
    }
    if (m & kCond) {
        if (*p >= detail::kNumConds) return bad(DecodeError::UnknownCond, p, "cond", *p);
        out.cond = static_cast<Cond>(*p++);
    }
    if (m & kAnn) {
        XPU_VARINT("ann", 0xFFFFFFFFu);
        out.ann = static_cast<std::uint32_t>(v);
    }
    if (m & kTimestamp) {
        XPU_VARINT("timestamp", ~std::uint64_t{0});
        out.timestamp = v;
    }
#undef XPU_VARINT
    return p;
}

// The 64-byte file header, CRC included.
void encode_header(const FileHeader& h, std::uint8_t out[kHeaderSize]);

}  // namespace codec
}  // namespace xpu::trace
