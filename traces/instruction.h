// The instruction record: the one vocabulary shared by the trace format, the models and the
// analysis. One record per executed instruction, per (chip, core) stream, in program order.
//
// Optional fields carry a presence bit (Field::*) so that the binary and text forms can say
// exactly what the recorder wrote: a field that was not recorded is absent, not zero. This is
// what makes asm(dis(x)) == x hold byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace xpu {

// Simulated time, in picoseconds (SystemC's default time resolution).
using Tick = std::uint64_t;

enum class Opcode : std::uint8_t {
    // scalar core
    SAlu = 0x01,    // scalar ALU op (address arithmetic, loop counters)
    Branch = 0x02,  // executed branch
    Nop = 0x03,
    Halt = 0x04,    // end of the stream
    // vector unit
    VLoad = 0x10,     // VMEM -> vector registers
    VStore = 0x11,    // vector registers -> VMEM
    VAlu = 0x12,      // elementwise op
    VTrans = 0x13,    // transcendental (exp, rsqrt, ...)
    VReduce = 0x14,   // cross-lane reduction
    VPermute = 0x15,  // transpose / rotate / shuffle
    // matrix unit
    MPush = 0x20,    // push a weight tile into the systolic array
    MatMul = 0x21,   // stream LHS rows through the array
    MPop = 0x22,     // pop results out of the accumulators
    // DMA engine
    Dma = 0x30,      // start a DMA (hbm<->vmem, or to/from a remote chip), with completion flag
    // sync
    SWait = 0x40,    // wait until flag <cond> value
    SSet = 0x41,     // flag = value
    SAdd = 0x42,     // flag += value
    Barrier = 0x43,  // all cores of the chip meet
};

// Which family of unit executes an opcode. The instruction's `unit` field is the index of the
// instance within the family (mxu0, mxu1, ...).
enum class UnitKind : std::uint8_t { Scalar, Vector, Matrix, Dma, Sync };

enum class Space : std::uint8_t { Vmem = 0, Hbm = 1 };
// A memory operand on the issuing chip has chip == kLocalChip; any other value names the chip
// (remote DMA, used by the multi-chip models).
inline constexpr std::uint16_t kLocalChip = 0xFFFF;

struct MemRef {
    Space space = Space::Vmem;
    std::uint16_t chip = kLocalChip;
    std::uint64_t addr = 0;
    bool operator==(const MemRef& o) const { return space == o.space && chip == o.chip && addr == o.addr; }
};

enum class DType : std::uint8_t { Bf16 = 0, F32 = 1, Int8 = 2, F16 = 3, Fp8 = 4, Int32 = 5 };
enum class Cond : std::uint8_t { Eq = 0, Ne = 1, Ge = 2, Gt = 3, Le = 4, Lt = 5 };

// Registers: one byte. s0..s63 scalar, v0..v63 vector, m0..m63 matrix accumulators.
inline constexpr std::uint8_t kScalarRegBase = 0x00;
inline constexpr std::uint8_t kVectorRegBase = 0x40;
inline constexpr std::uint8_t kMatrixRegBase = 0x80;
inline constexpr unsigned kRegsPerClass = 64;
inline constexpr unsigned kNumRegs = 3 * kRegsPerClass;  // valid register ids are < kNumRegs

// Presence bits of the optional fields, in encoding order.
enum Field : std::uint16_t {
    kDst = 1u << 0,
    kSrc0 = 1u << 1,
    kSrc1 = 1u << 2,
    kSrc2 = 1u << 3,
    kMemSrc = 1u << 4,
    kMemDst = 1u << 5,
    kBytes = 1u << 6,
    kShape = 1u << 7,   // m, n, k
    kDtype = 1u << 8,
    kCount = 1u << 9,   // element count (vector ops) or repeat count
    kFlag = 1u << 10,
    kValue = 1u << 11,
    kCond = 1u << 12,
    kAnn = 1u << 13,    // annotation id into the string table
    kTimestamp = 1u << 14,  // recorded hardware timestamp, ns
};
inline constexpr std::uint16_t kAllFields = 0x7FFF;

struct Instruction {
    Opcode op = Opcode::Nop;
    std::uint8_t unit = 0;
    std::uint16_t present = 0;  // Field bits
    std::uint8_t dst = 0;
    std::uint8_t src[3] = {0, 0, 0};
    DType dtype = DType::Bf16;
    Cond cond = Cond::Eq;
    std::uint16_t flag = 0;
    std::uint32_t ann = 0;  // here, in what would be padding before mem_src: 88 bytes, not 96
    MemRef mem_src;
    MemRef mem_dst;
    std::uint64_t bytes = 0;
    std::uint32_t m = 0, n = 0, k = 0;
    std::uint32_t count = 0;
    std::int64_t value = 0;
    std::uint64_t timestamp = 0;

    bool has(Field f) const { return (present & f) != 0; }
    void set(std::uint16_t fields) { present = static_cast<std::uint16_t>(present | fields); }  // Field bits, or-ed
    bool operator==(const Instruction& o) const;
    bool operator!=(const Instruction& o) const { return !(*this == o); }
};
// Held per instruction by the core's fetch buffer and by the analysis (a 100 M-instruction trace:
// 8.8 GB), so no padding.
static_assert(sizeof(Instruction) == 88, "Instruction: 88 bytes");

// Inline: the core asks it of every instruction it issues (a call per instruction before).
inline UnitKind unit_kind(Opcode op) {
    switch (static_cast<unsigned>(op) >> 4) {
        case 0x0: return UnitKind::Scalar;
        case 0x1: return UnitKind::Vector;
        case 0x2: return UnitKind::Matrix;
        case 0x3: return UnitKind::Dma;
        default: return UnitKind::Sync;
    }
}
bool is_valid_opcode(std::uint8_t raw);
std::string_view mnemonic(Opcode op);
std::optional<Opcode> opcode_from_mnemonic(std::string_view s);
std::string_view dtype_name(DType d);
std::optional<DType> dtype_from_name(std::string_view s);
unsigned dtype_bytes(DType d);
std::string_view cond_name(Cond c);
std::optional<Cond> cond_from_name(std::string_view s);
std::string_view space_name(Space s);
std::optional<Space> space_from_name(std::string_view s);
bool cond_holds(Cond c, std::int64_t flag_value, std::int64_t operand);

}  // namespace xpu
