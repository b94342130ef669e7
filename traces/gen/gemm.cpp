#include "traces/gen/gemm.h"

namespace xpu::gen {

GemmCounts gemm_expected(const GemmParams& p) {
    const std::uint64_t eb = dtype_bytes(p.dtype);
    const std::uint64_t nblk = ceil_div(p.n, std::uint64_t(p.mxus) * p.dim);
    const std::uint64_t mblk = ceil_div(p.m, p.tile_m);
    GemmCounts c;
    c.flops = 2 * p.m * p.n * p.k;
    // A is read once per N block, B once per M block, C written once.
    c.hbm_bytes_read = p.m * p.k * eb * nblk + p.k * p.n * eb * mblk;
    c.hbm_bytes_written = p.m * p.n * eb;
    return c;
}

void emit_gemm(Emitter& e, const GemmParams& p) {
    TileConfig t;
    t.dtype = p.dtype;
    t.tile_m = p.tile_m;
    t.mxus = p.mxus;
    t.dim = p.dim;
    t.dma_engines = p.dma_engines;
    t.vpus = p.vpus;
    t.vec_base = p.vec_base;
    t.prefetch = p.double_buffer;
    t.late_dma = p.late_dma;
    t.false_dep = p.false_dep;
    t.bad_order = p.bad_order;
    t.split_dma = p.split_dma;
    const std::uint64_t eb = dtype_bytes(p.dtype);
    Matmul m;
    m.m = p.m;
    m.n = p.n;
    m.k = p.k;
    m.hbm_a = p.hbm_a;
    m.hbm_b = p.hbm_b ? p.hbm_b : m.hbm_a + p.m * p.k * eb;
    m.hbm_c = p.hbm_c ? p.hbm_c : m.hbm_b + p.k * p.n * eb;
    Lowering(e, t).matmuls({m}, p.prefix);
}

}  // namespace xpu::gen
