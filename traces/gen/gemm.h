// A tiled GEMM, C[M x N] = A[M x K] * B[K x N], lowered by Lowering::matmuls (see lowering.h
// for the tiling and data movement).
#pragma once

#include <cstdint>
#include <string>

#include "traces/gen/lowering.h"

namespace xpu::gen {

struct GemmParams {
    std::uint64_t m = 1024, n = 1024, k = 1024;
    DType dtype = DType::Bf16;
    unsigned tile_m = 1024;
    unsigned mxus = 8;               // configs/xpu.yaml's megacore has 8
    unsigned dim = 128;
    bool double_buffer = true;       // prefetch tiles ahead of use
    unsigned dma_engines = 4;
    unsigned vpus = 1;                         // vector units the epilogue spreads over
    std::uint64_t vec_base = 24ull << 20;      // VMEM offset of the vector buffers (TileConfig::vec_base)
    std::uint64_t hbm_a = 0, hbm_b = 0, hbm_c = 0;  // 0: placed one after the other from 0
    std::string prefix = "gemm";                      // annotation prefix
    bool late_dma = false, false_dep = false, bad_order = false;  // planted inefficiencies
    unsigned split_dma = 1;                                       // planted: pieces per tile load
};

struct GemmCounts {
    std::uint64_t flops = 0;
    std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
};

// The analytic counts of the lowering (what tests compare the trace against).
GemmCounts gemm_expected(const GemmParams& p);
// Emits the GEMM into `e` (ending with a wait for the last C DMA, not with halt).
void emit_gemm(Emitter& e, const GemmParams& p);

}  // namespace xpu::gen
