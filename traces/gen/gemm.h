// Tiled GEMM, C[M x N] = A[M x K] * B[K x N], lowered the way an XLA-style compiler targets a
// TensorCore with `mxus` systolic arrays of `dim` x `dim`:
//   - N is cut into blocks of mxus x dim columns (one dim-wide weight tile per MXU), M into
//     blocks of `tile_m` rows, K into steps of `dim`;
//   - per step, the A tile (tile_m x dim) and the B tile (dim x mxus*dim) come from HBM by DMA
//     into one of two VMEM buffers, each DMA adding 1 to that buffer's flag; with double
//     buffering the next step's DMAs are issued before this step's compute (prefetch);
//   - the core waits for the step's flag, loads each MXU's weights into a vector register and
//     pushes them, then streams A eight rows (one vreg) at a time into every MXU;
//   - after the last step it pops the accumulators, applies the epilogue (bias + activation
//     on the vector unit), stores to VMEM and DMAs the C block back to HBM.
// Matmuls accumulate into their destination accumulator in order; they do not name it as a
// source (the MXU keeps its own accumulation order).
#pragma once

#include <cstdint>

#include "traces/gen/emit.h"

namespace xpu::gen {

struct GemmParams {
    std::uint64_t m = 1024, n = 1024, k = 1024;
    DType dtype = DType::Bf16;
    unsigned tile_m = 1024;
    unsigned mxus = 8;               // configs/xpu.yaml's megacore has 8
    unsigned dim = 128;
    bool double_buffer = true;
    unsigned dma_engines = 4;
    std::uint64_t hbm_a = 0, hbm_b = 0, hbm_c = 0;  // 0: placed one after the other from 0
    std::string prefix = "gemm";                      // annotation prefix
};

struct GemmCounts {
    std::uint64_t flops = 0;
    std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
};

// The analytic counts of the lowering above (what tests compare the trace against).
GemmCounts gemm_expected(const GemmParams& p);
// Emits the GEMM into `e` (ending with a wait for the last C DMA, not with halt).
void emit_gemm(Emitter& e, const GemmParams& p);

}  // namespace xpu::gen
