// Small builders for instruction records, so that workload generators read like the code a
// compiler would emit: emit.dma(...), emit.matmul(...).
#pragma once

#include <cstdint>
#include <string>

#include "traces/instruction.h"
#include "traces/trace_writer.h"

namespace xpu::gen {

inline std::uint8_t sreg(unsigned i) { return static_cast<std::uint8_t>(kScalarRegBase + i); }
inline std::uint8_t vreg(unsigned i) { return static_cast<std::uint8_t>(kVectorRegBase + i); }
inline std::uint8_t mreg(unsigned i) { return static_cast<std::uint8_t>(kMatrixRegBase + i); }

// Appends instructions to one stream of a TraceWriter and counts what they do.
class Emitter {
public:
    Emitter(trace::TraceWriter& w, std::size_t stream) : w_(w), stream_(stream) {}

    // Following instructions carry this annotation (op/layer path).
    void annotate(const std::string& op) { ann_ = w_.add_string(op); }
    std::uint32_t string_id(const std::string& op) { return w_.add_string(op); }
    void annotate(std::uint32_t id) { ann_ = id; }

    void dma(unsigned engine, Space src_space, std::uint64_t src, Space dst_space, std::uint64_t dst,
             std::uint64_t bytes, std::uint16_t flag);
    // A DMA from this chip to memory of chip `dst_chip`; the flag is raised on that chip.
    // With `reduce`, the destination accumulates (dst += src in `dt`).
    void dma_remote(unsigned engine, Space src_space, std::uint64_t src, std::uint16_t dst_chip, Space dst_space,
                    std::uint64_t dst, std::uint64_t bytes, std::uint16_t flag, bool reduce = false,
                    DType dt = DType::Bf16);
    void swait(std::uint16_t flag, Cond c, std::int64_t v);
    void sset(std::uint16_t flag, std::int64_t v);
    void vld(unsigned unit, std::uint8_t d, std::uint64_t vmem_addr, std::uint64_t bytes);
    void vst(unsigned unit, std::uint8_t s, std::uint64_t vmem_addr, std::uint64_t bytes);
    void vop(Opcode op, unsigned unit, std::uint8_t d, std::uint8_t s0, std::uint32_t elements);
    void vop2(Opcode op, unsigned unit, std::uint8_t d, std::uint8_t s0, std::uint8_t s1, std::uint32_t elements);
    void mpush(unsigned mxu, std::uint8_t s, std::uint32_t k, std::uint32_t n, DType dt);
    void matmul(unsigned mxu, std::uint8_t d, std::uint8_t s, std::uint32_t m, std::uint32_t n, std::uint32_t k, DType dt);
    void mpop(unsigned mxu, std::uint8_t d, std::uint8_t s, std::uint32_t m, std::uint32_t n);
    void salu(std::uint8_t d, std::uint8_t s0);
    void halt();

    std::uint64_t instructions() const { return count_; }
    std::uint64_t flops() const { return flops_; }
    std::uint64_t dma_bytes_from_hbm() const { return from_hbm_; }
    std::uint64_t dma_bytes_to_hbm() const { return to_hbm_; }
    std::uint64_t dma_bytes_remote() const { return remote_; }

private:
    Instruction base(Opcode op, unsigned unit);
    Instruction dma_base(unsigned engine, const MemRef& src, const MemRef& dst, std::uint64_t bytes, std::uint16_t flag);
    void put(const Instruction& in);
    trace::TraceWriter& w_;
    std::size_t stream_;
    std::uint32_t ann_ = 0;
    std::uint64_t count_ = 0, flops_ = 0, from_hbm_ = 0, to_hbm_ = 0, remote_ = 0;
};

}  // namespace xpu::gen
