#include "traces/gen/gemm.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace xpu::gen {

namespace {
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
constexpr std::uint16_t kFlagBuf0 = 1;   // flags 1, 2: A/B buffers 0, 1
constexpr std::uint16_t kFlagC = 3;      // C write-back
constexpr unsigned kLhsRegs = 32;        // v0..v31 stream A rows
constexpr unsigned kWeightReg = 32;      // v32.. hold weight tiles
constexpr unsigned kOutReg = 48;         // v48..v55 epilogue
constexpr std::uint64_t kEpilogueDelayChunks = 40;  // > MXU queue (32 chunks) + drain
constexpr unsigned kAccPerMxu = 16;      // per MXU: two sets of 8, m(j*16 + set*8 + r%8)
}  // namespace

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
    if (!p.m || !p.n || !p.k || !p.tile_m || !p.mxus || !p.dim || p.mxus * 16 > 64 || p.tile_m % 8)
        throw std::invalid_argument("gemm: need m, n, k > 0, tile_m a multiple of 8, 1..4 MXUs");
    const std::uint64_t eb = dtype_bytes(p.dtype);
    const std::uint64_t block_cols = std::uint64_t(p.mxus) * p.dim;
    const std::uint64_t mblk = ceil_div(p.m, p.tile_m), nblk = ceil_div(p.n, block_cols), ksteps = ceil_div(p.k, p.dim);
    const std::uint64_t hbm_a = p.hbm_a, hbm_b = p.hbm_b ? p.hbm_b : hbm_a + p.m * p.k * eb;
    const std::uint64_t hbm_c = p.hbm_c ? p.hbm_c : hbm_b + p.k * p.n * eb;
    // VMEM: two A buffers, two B buffers, one C buffer.
    const std::uint64_t a_buf = std::uint64_t(p.tile_m) * p.dim * eb, b_buf = std::uint64_t(p.dim) * block_cols * eb;
    const std::uint64_t vm_a[2] = {0, a_buf}, vm_b[2] = {2 * a_buf, 2 * a_buf + b_buf}, vm_c = 2 * a_buf + 2 * b_buf;

    const std::string pre = p.prefix + "/";
    struct Step {
        std::uint64_t mb, nb, ks;
    };
    const std::uint64_t total_steps = mblk * nblk * ksteps;
    auto step_at = [&](std::uint64_t g) {
        Step s;
        s.ks = g % ksteps;
        s.nb = (g / ksteps) % nblk;
        s.mb = g / (ksteps * nblk);
        return s;
    };
    auto rows_of = [&](std::uint64_t mb) { return std::min<std::uint64_t>(p.tile_m, p.m - mb * p.tile_m); };
    auto cols_of = [&](std::uint64_t nb, unsigned j) -> std::uint64_t {
        std::uint64_t c0 = nb * block_cols + std::uint64_t(j) * p.dim;
        return c0 >= p.n ? 0 : std::min<std::uint64_t>(p.dim, p.n - c0);
    };
    auto depth_of = [&](std::uint64_t ks) { return std::min<std::uint64_t>(p.dim, p.k - ks * p.dim); };
    auto acc = [](unsigned j, unsigned set, std::uint64_t r) {
        return mreg(j * kAccPerMxu + set * 8 + static_cast<unsigned>(r % 8));
    };
    std::int64_t loads[2] = {0, 0};  // DMAs issued into each buffer (the flag counts them)
    unsigned engine = 0;
    auto load_step = [&](std::uint64_t g) {
        Step s = step_at(g);
        unsigned b = g % 2;
        std::uint64_t rows = rows_of(s.mb), depth = depth_of(s.ks);
        std::uint64_t cols = std::min<std::uint64_t>(block_cols, p.n - s.nb * block_cols);
        e.annotate(pre + "load_a");
        e.dma(engine++ % p.dma_engines, Space::Hbm, hbm_a + (s.mb * p.tile_m * p.k + s.ks * p.dim * rows) * eb,
              Space::Vmem, vm_a[b], rows * depth * eb, kFlagBuf0 + b);
        e.annotate(pre + "load_b");
        e.dma(engine++ % p.dma_engines, Space::Hbm, hbm_b + (s.ks * p.dim * p.n + s.nb * block_cols * depth) * eb,
              Space::Vmem, vm_b[b], depth * cols * eb, kFlagBuf0 + b);
        loads[b] += 2;
    };

    std::int64_t c_dmas = 0;
    const std::uint32_t ann_matmul = e.string_id(pre + "matmul"), ann_epi = e.string_id(pre + "epilogue");
    // Pops, epilogue and write-back of a finished block, in groups of 8 result vregs (pops,
    // then bias + activation, then stores), software-pipelined into the next block's first
    // step so that the MXUs keep streaming. Blocks alternate between two accumulator sets.
    struct Epilogue {
        Step s;
        unsigned j = 0;
        std::uint64_t g0 = 0, out_bytes = 0;
    };
    std::optional<Epilogue> epi;
    std::uint64_t epi_chunks = 0;
    auto start_epilogue = [&](const Step& s) {
        if (c_dmas > 0) {  // the C buffer must be free
            e.annotate(pre + "wait_c");
            e.swait(kFlagC, Cond::Ge, c_dmas);
        }
        epi = Epilogue{s};
        epi_chunks = 0;
    };
    auto epilogue_group = [&]() {  // emits one group; false when the block is done
        Epilogue& x = *epi;
        const std::uint64_t rows = rows_of(x.s.mb), chunks = (rows + 7) / 8;
        const unsigned set = static_cast<unsigned>((x.s.mb * nblk + x.s.nb) % 2);
        while (x.j < p.mxus && !cols_of(x.s.nb, x.j)) ++x.j;
        if (x.j >= p.mxus) return false;
        const std::uint64_t cols = cols_of(x.s.nb, x.j), g1 = std::min<std::uint64_t>(chunks, x.g0 + 8);
        e.annotate(ann_epi);
        for (std::uint64_t r = x.g0; r < g1; ++r)
            e.mpop(x.j, vreg(kOutReg + r % 8), acc(x.j, set, r),
                   static_cast<std::uint32_t>(std::min<std::uint64_t>(8, rows - r * 8)), static_cast<std::uint32_t>(cols));
        for (std::uint64_t r = x.g0; r < g1; ++r)
            e.vop(Opcode::VAlu, 0, vreg(kOutReg + r % 8), vreg(kOutReg + r % 8),
                  static_cast<std::uint32_t>(std::min<std::uint64_t>(8, rows - r * 8) * cols));
        for (std::uint64_t r = x.g0; r < g1; ++r) {
            std::uint64_t b = std::min<std::uint64_t>(8, rows - r * 8) * cols * eb;
            e.vst(0, vreg(kOutReg + r % 8), vm_c + x.out_bytes, b);
            x.out_bytes += b;
        }
        x.g0 = g1;
        if (x.g0 >= chunks) {
            x.g0 = 0;
            ++x.j;
        }
        return true;
    };
    auto finish_epilogue = [&]() {
        while (epilogue_group()) {
        }
        const Epilogue& x = *epi;
        e.annotate(pre + "store_c");
        e.dma(engine++ % p.dma_engines, Space::Vmem, vm_c, Space::Hbm,
              hbm_c + (x.s.mb * p.tile_m * p.n + x.s.nb * block_cols * rows_of(x.s.mb)) * eb, x.out_bytes, kFlagC);
        ++c_dmas;
        epi.reset();
    };
    std::optional<Step> finished;  // a block whose epilogue is due
    if (p.double_buffer) load_step(0);
    for (std::uint64_t g = 0; g < total_steps; ++g) {
        Step s = step_at(g);
        unsigned b = g % 2;
        if (p.double_buffer) {
            if (g + 1 < total_steps) load_step(g + 1);
        } else {
            load_step(g);
        }
        e.annotate(pre + "wait_data");
        e.swait(kFlagBuf0 + b, Cond::Ge, loads[b]);  // the prefetch just issued went to the other buffer
        const std::uint64_t rows = rows_of(s.mb), depth = depth_of(s.ks);
        e.annotate(pre + "push_weights");  // all loads first, so the four pushes overlap
        for (unsigned j = 0; j < p.mxus; ++j)
            if (std::uint64_t cols = cols_of(s.nb, j))
                e.vld(0, vreg(kWeightReg + j), vm_b[b] + std::uint64_t(j) * p.dim * depth * eb, depth * cols * eb);
        for (unsigned j = 0; j < p.mxus; ++j)
            if (std::uint64_t cols = cols_of(s.nb, j))
                e.mpush(j, vreg(kWeightReg + j), static_cast<std::uint32_t>(depth), static_cast<std::uint32_t>(cols),
                        p.dtype);
        if (finished) {
            start_epilogue(*finished);
            finished.reset();
        }
        for (std::uint64_t r = 0; r * 8 < rows; ++r) {
            std::uint64_t rr = std::min<std::uint64_t>(8, rows - r * 8);
            e.annotate(ann_matmul);
            e.vld(0, vreg(r % kLhsRegs), vm_a[b] + r * 8 * depth * eb, rr * depth * eb);
            for (unsigned j = 0; j < p.mxus; ++j) {
                std::uint64_t cols = cols_of(s.nb, j);
                if (!cols) continue;
                e.matmul(j, acc(j, static_cast<unsigned>((g / ksteps) % 2), r), vreg(r % kLhsRegs), static_cast<std::uint32_t>(rr),
                         static_cast<std::uint32_t>(cols), static_cast<std::uint32_t>(depth), p.dtype);
            }
            // One epilogue group every other chunk, once the finished block's last matmuls
            // (still queued when it started) have drained: a pop issued earlier would stall
            // the in-order core and starve the MXUs.
            if (epi && ++epi_chunks > kEpilogueDelayChunks && epi_chunks % 2 == 0 && !epilogue_group())
                finish_epilogue();
        }
        if (s.ks + 1 == ksteps) {
            if (epi) finish_epilogue();  // before its accumulators are written again
            finished = s;
        }
    }
    if (finished) {
        start_epilogue(*finished);
        finish_epilogue();
    }
    e.annotate(pre + "wait_c");
    e.swait(kFlagC, Cond::Ge, c_dmas);
}

}  // namespace xpu::gen
