#include "traces/gen/emit.h"

namespace xpu::gen {

Instruction Emitter::base(Opcode op, unsigned unit) {
    Instruction in;
    in.op = op;
    in.unit = static_cast<std::uint8_t>(unit);
    in.ann = ann_;
    in.set(kAnn);
    return in;
}

void Emitter::put(const Instruction& in) {
    w_.append(stream_, in);
    ++count_;
}

Instruction Emitter::dma_base(unsigned engine, const MemRef& src, const MemRef& dst, std::uint64_t bytes,
                              std::uint16_t flag) {
    Instruction in = base(Opcode::Dma, engine);
    in.mem_src = src;
    in.mem_dst = dst;
    in.bytes = bytes;
    in.flag = flag;
    in.set(kMemSrc | kMemDst | kBytes | kFlag);
    if (src.space == Space::Hbm) from_hbm_ += bytes;  // read on the issuing chip
    return in;
}

void Emitter::dma(unsigned engine, Space ss, std::uint64_t src, Space ds, std::uint64_t dst, std::uint64_t bytes,
                  std::uint16_t flag) {
    Instruction in = dma_base(engine, {ss, kLocalChip, src}, {ds, kLocalChip, dst}, bytes, flag);
    if (ds == Space::Hbm) to_hbm_ += bytes;
    put(in);
}

void Emitter::dma_remote(unsigned engine, Space ss, std::uint64_t src, std::uint16_t dst_chip, Space ds,
                         std::uint64_t dst, std::uint64_t bytes, std::uint16_t flag, bool reduce, DType dt) {
    Instruction in = dma_base(engine, {ss, kLocalChip, src}, {ds, dst_chip, dst}, bytes, flag);
    if (reduce) {
        in.dtype = dt;
        in.set(kDtype);
    }
    remote_ += bytes;
    put(in);
}

void Emitter::swait(std::uint16_t flag, Cond c, std::int64_t v) {
    Instruction in = base(Opcode::SWait, 0);
    in.flag = flag;
    in.cond = c;
    in.value = v;
    in.set(kFlag | kCond | kValue);
    put(in);
}

void Emitter::sset(std::uint16_t flag, std::int64_t v) {
    Instruction in = base(Opcode::SSet, 0);
    in.flag = flag;
    in.value = v;
    in.set(kFlag | kValue);
    put(in);
}

void Emitter::vld(unsigned unit, std::uint8_t d, std::uint64_t addr, std::uint64_t bytes) {
    Instruction in = base(Opcode::VLoad, unit);
    in.dst = d;
    in.mem_src = {Space::Vmem, kLocalChip, addr};
    in.bytes = bytes;
    in.set(kDst | kMemSrc | kBytes);
    put(in);
}

void Emitter::vst(unsigned unit, std::uint8_t s, std::uint64_t addr, std::uint64_t bytes) {
    Instruction in = base(Opcode::VStore, unit);
    in.src[0] = s;
    in.mem_dst = {Space::Vmem, kLocalChip, addr};
    in.bytes = bytes;
    in.set(kSrc0 | kMemDst | kBytes);
    put(in);
}

void Emitter::vop(Opcode op, unsigned unit, std::uint8_t d, std::uint8_t s0, std::uint32_t elements) {
    Instruction in = base(op, unit);
    in.dst = d;
    in.src[0] = s0;
    in.count = elements;
    in.set(kDst | kSrc0 | kCount);
    put(in);
}

void Emitter::vop2(Opcode op, unsigned unit, std::uint8_t d, std::uint8_t s0, std::uint8_t s1, std::uint32_t elements) {
    Instruction in = base(op, unit);
    in.dst = d;
    in.src[0] = s0;
    in.src[1] = s1;
    in.count = elements;
    in.set(kDst | kSrc0 | kSrc1 | kCount);
    put(in);
}

void Emitter::mpush(unsigned mxu, std::uint8_t s, std::uint32_t k, std::uint32_t n, DType dt) {
    Instruction in = base(Opcode::MPush, mxu);
    in.src[0] = s;
    in.m = 1;
    in.n = n;
    in.k = k;
    in.dtype = dt;
    in.set(kSrc0 | kShape | kDtype);
    put(in);
}

void Emitter::matmul(unsigned mxu, std::uint8_t d, std::uint8_t s, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                     DType dt) {
    Instruction in = base(Opcode::MatMul, mxu);
    in.dst = d;
    in.src[0] = s;
    in.m = m;
    in.n = n;
    in.k = k;
    in.dtype = dt;
    in.set(kDst | kSrc0 | kShape | kDtype);
    flops_ += 2ull * m * n * k;
    put(in);
}

void Emitter::mpop(unsigned mxu, std::uint8_t d, std::uint8_t s, std::uint32_t m, std::uint32_t n) {
    Instruction in = base(Opcode::MPop, mxu);
    in.dst = d;
    in.src[0] = s;
    in.m = m;
    in.n = n;
    in.k = 1;
    in.set(kDst | kSrc0 | kShape);
    put(in);
}

void Emitter::salu(std::uint8_t d, std::uint8_t s0) {
    Instruction in = base(Opcode::SAlu, 0);
    in.dst = d;
    in.src[0] = s0;
    in.set(kDst | kSrc0);
    put(in);
}

void Emitter::halt() { put(base(Opcode::Halt, 0)); }

}  // namespace xpu::gen
