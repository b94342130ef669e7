#include "traces/instruction.h"

#include <array>

namespace xpu {

namespace {
struct OpName {
    Opcode op;
    std::string_view name;
};
constexpr std::array<OpName, 18> kOps{{
    {Opcode::SAlu, "salu"},     {Opcode::Branch, "branch"}, {Opcode::Nop, "nop"},
    {Opcode::Halt, "halt"},     {Opcode::VLoad, "vld"},     {Opcode::VStore, "vst"},
    {Opcode::VAlu, "valu"},     {Opcode::VTrans, "vtrans"}, {Opcode::VReduce, "vreduce"},
    {Opcode::VPermute, "vperm"}, {Opcode::MPush, "mpush"},  {Opcode::MatMul, "matmul"},
    {Opcode::MPop, "mpop"},     {Opcode::Dma, "dma"},       {Opcode::SWait, "swait"},
    {Opcode::SSet, "sset"},     {Opcode::SAdd, "sadd"},     {Opcode::Barrier, "barrier"},
}};
constexpr std::array<std::string_view, 6> kDtypes{"bf16", "f32", "int8", "f16", "fp8", "int32"};
constexpr std::array<unsigned, 6> kDtypeBytes{2, 4, 1, 2, 1, 4};
constexpr std::array<std::string_view, 6> kConds{"eq", "ne", "ge", "gt", "le", "lt"};
constexpr std::array<std::string_view, 2> kSpaces{"vmem", "hbm"};
}  // namespace

bool is_valid_opcode(std::uint8_t raw) {
    // A table: every instruction of every run is checked against it (a loop over kOps was a
    // few percent of a run).
    static const std::array<bool, 256> valid = [] {
        std::array<bool, 256> v{};
        for (const auto& o : kOps) v[static_cast<std::uint8_t>(o.op)] = true;
        return v;
    }();
    return valid[raw];
}

std::string_view mnemonic(Opcode op) {
    for (const auto& o : kOps)
        if (o.op == op) return o.name;
    return "?";
}

std::optional<Opcode> opcode_from_mnemonic(std::string_view s) {
    for (const auto& o : kOps)
        if (o.name == s) return o.op;
    return std::nullopt;
}

std::string_view dtype_name(DType d) {
    auto i = static_cast<unsigned>(d);
    return i < kDtypes.size() ? kDtypes[i] : "?";
}
std::optional<DType> dtype_from_name(std::string_view s) {
    for (unsigned i = 0; i < kDtypes.size(); ++i)
        if (kDtypes[i] == s) return static_cast<DType>(i);
    return std::nullopt;
}
unsigned dtype_bytes(DType d) {
    auto i = static_cast<unsigned>(d);
    return i < kDtypeBytes.size() ? kDtypeBytes[i] : 0;
}
std::string_view cond_name(Cond c) {
    auto i = static_cast<unsigned>(c);
    return i < kConds.size() ? kConds[i] : "?";
}
std::optional<Cond> cond_from_name(std::string_view s) {
    for (unsigned i = 0; i < kConds.size(); ++i)
        if (kConds[i] == s) return static_cast<Cond>(i);
    return std::nullopt;
}
std::string_view space_name(Space s) {
    auto i = static_cast<unsigned>(s);
    return i < kSpaces.size() ? kSpaces[i] : "?";
}
std::optional<Space> space_from_name(std::string_view s) {
    for (unsigned i = 0; i < kSpaces.size(); ++i)
        if (kSpaces[i] == s) return static_cast<Space>(i);
    return std::nullopt;
}

bool cond_holds(Cond c, std::int64_t v, std::int64_t x) {
    switch (c) {
        case Cond::Eq: return v == x;
        case Cond::Ne: return v != x;
        case Cond::Ge: return v >= x;
        case Cond::Gt: return v > x;
        case Cond::Le: return v <= x;
        case Cond::Lt: return v < x;
    }
    return false;
}

// Equality over what is present: two records are equal when they say the same things.
bool Instruction::operator==(const Instruction& o) const {
    if (op != o.op || unit != o.unit || present != o.present) return false;
    if (has(kDst) && dst != o.dst) return false;
    for (int i = 0; i < 3; ++i)
        if (has(static_cast<Field>(kSrc0 << i)) && src[i] != o.src[i]) return false;
    if (has(kMemSrc) && !(mem_src == o.mem_src)) return false;
    if (has(kMemDst) && !(mem_dst == o.mem_dst)) return false;
    if (has(kBytes) && bytes != o.bytes) return false;
    if (has(kShape) && (m != o.m || n != o.n || k != o.k)) return false;
    if (has(kDtype) && dtype != o.dtype) return false;
    if (has(kCount) && count != o.count) return false;
    if (has(kFlag) && flag != o.flag) return false;
    if (has(kValue) && value != o.value) return false;
    if (has(kCond) && cond != o.cond) return false;
    if (has(kAnn) && ann != o.ann) return false;
    if (has(kTimestamp) && timestamp != o.timestamp) return false;
    return true;
}

}  // namespace xpu
