// Lowering: the code generator shared by the workloads. It turns tensor operations into the
// instruction stream an XLA-style compiler emits for one TensorCore:
//   matmuls()     a batch of independent matmuls C = A B (tiles DMA'd HBM -> VMEM, weight tiles
//                 pushed into the MXUs, A streamed eight rows a vreg at a time, results popped,
//                 epilogue on the vector unit, C DMA'd back), as one continuous pipeline;
//   vector_pass() an elementwise / reduction pass on the vector unit over a tensor in HBM;
//   copy()        an HBM -> HBM DMA (e.g. appending to a KV cache).
// Every call ends with its results in HBM (it waits for its last write-back), so calls chain
// by data through HBM, as unfused XLA ops do. Flag counters persist across calls.
//
// Matmul tiling: N in blocks of mxus x dim columns (one dim-wide weight tile per MXU), M in
// blocks of tile_m rows, K in steps of dim. Per step the A tile (rows x depth) and the B tile
// (depth x block columns) come from HBM; A is therefore read once per N block and B once per
// M block: HBM bytes = A x n_blocks + B x m_blocks + C, which is what the tests check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/gen/emit.h"

namespace xpu::gen {

struct TileConfig {
    DType dtype = DType::Bf16;
    unsigned tile_m = 1024;   // rows of A per block (multiple of 8)
    unsigned mxus = 8;        // configs/xpu.yaml's megacore has 8
    unsigned dim = 128;       // systolic array size
    unsigned dma_engines = 4;
    unsigned vpus = 1;        // vector units: vector passes spread their vregs over them
    std::uint64_t vec_base = 24ull << 20;  // VMEM offset of the vector passes' buffers (above the matmul buffers)
    bool prefetch = true;     // DMA tiles two steps ahead (three VMEM buffers); off: one buffer, loaded just before use
    // Planted inefficiencies (each documented in docs/tracegen.md with the finding it should
    // produce): all but `prefetch` are off in a clean trace.
    bool late_dma = false;    // the weight (B) tiles of every step are loaded just before use
    bool false_dep = false;   // after each C write-back, wait for it although nothing reads it
    bool bad_order = false;   // the vector epilogue of a block waits behind the next step's data
    unsigned split_dma = 1;   // > 1: every HBM -> VMEM tile load is N contiguous DMAs on one engine (same flag)
};

struct Matmul {
    std::uint64_t m = 0, n = 0, k = 0;
    std::uint64_t hbm_a = 0, hbm_b = 0, hbm_c = 0;
    // > 1: `packed` independent groups side by side in one block-diagonal weight tile (grouped
    // and depthwise convolutions): each of the n output columns reduces over its own k inputs,
    // so a row of A carries packed x k values (A tiles and loads are that wide) while the
    // matmul instructions record the useful shape m x n x k: 2 m n k FLOPs, the graph's MACs,
    // and the idle part of the array shows as lower utilisation. Needs packed x k <= dim.
    std::uint64_t packed = 1;
};

class Lowering {
public:
    Lowering(Emitter& e, const TileConfig& cfg);
    void matmuls(const std::vector<Matmul>& batch, const std::string& op);
    // Per vreg of `elements` values: vld (and a second operand, if hbm_in2), the ops in order,
    // vst. The tensor is streamed through VMEM in double-buffered chunks.
    // `out_elements` (default: elements) shrinks the output for reductions and pooling: each
    // chunk writes back its share of it.
    void vector_pass(std::uint64_t hbm_in, std::uint64_t hbm_in2, std::uint64_t hbm_out, std::uint64_t elements,
                     const std::vector<Opcode>& ops, const std::string& op, std::uint64_t out_elements = ~0ull);
    void copy(std::uint64_t hbm_src, std::uint64_t hbm_dst, std::uint64_t bytes, const std::string& op);
    // Collective building blocks: an HBM -> remote HBM DMA raising `flag` on `chip`, and a wait
    // until this chip's `flag` has been raised `count` times.
    void send(std::uint64_t hbm_src, std::uint16_t chip, std::uint64_t hbm_dst, std::uint64_t bytes, std::uint16_t flag,
              bool reduce = false);
    void wait_flag(std::uint16_t flag, std::int64_t count);
    // Arrivals expected on a flag raised by other chips: one more, and the new total.
    std::int64_t expect_arrival(std::uint16_t flag) { return ++arrivals_[flag]; }
    const TileConfig& config() const { return cfg_; }
    Emitter& emitter() { return e_; }

private:
    Emitter& e_;
    TileConfig cfg_;
    std::int64_t flag_count_[16] = {};  // DMAs issued that raise each flag, over the whole trace
    std::int64_t arrivals_[16] = {};    // remote DMAs expected to have raised each flag
    unsigned engine_ = 0;
    unsigned next_engine() { return engine_++ % cfg_.dma_engines; }
    void dma_in(std::uint64_t hbm, std::uint64_t vmem, std::uint64_t bytes, std::uint16_t flag);
    void dma_out(std::uint64_t vmem, std::uint64_t hbm, std::uint64_t bytes, std::uint16_t flag);
    void spread_dma(Space src_space, std::uint64_t src, Space dst_space, std::uint64_t dst, std::uint64_t bytes,
                    std::uint16_t flag);
    void wait_all(std::uint16_t flag);
};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b);

}  // namespace xpu::gen
