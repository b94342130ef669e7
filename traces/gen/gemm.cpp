#include "traces/gen/gemm.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace xpu::gen {

namespace {
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
constexpr unsigned kBuffers = 3;         // VMEM tile buffers: prefetch two steps ahead
constexpr std::uint16_t kFlagBuf0 = 1;   // flags 1..3: A/B buffers 0..2
constexpr std::uint16_t kFlagC = 4;      // C write-back
constexpr unsigned kLhsRegs = 32;        // v0..v31 stream A rows
constexpr unsigned kWeightReg = 32;      // v32..v39 hold weight tiles (one per MXU)
constexpr unsigned kOutReg = 40;         // v40..v63 epilogue: three stages of 8
constexpr std::uint64_t kEpilogueDelayChunks = 40;  // > MXU queue (32 chunks) + drain
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
    if (!p.m || !p.n || !p.k || !p.tile_m || !p.mxus || !p.dim || p.mxus > 8 || p.tile_m % 8)
        throw std::invalid_argument("gemm: need m, n, k > 0, tile_m a multiple of 8, 1..8 MXUs");
    const std::uint64_t eb = dtype_bytes(p.dtype);
    const std::uint64_t block_cols = std::uint64_t(p.mxus) * p.dim;
    const std::uint64_t mblk = ceil_div(p.m, p.tile_m), nblk = ceil_div(p.n, block_cols), ksteps = ceil_div(p.k, p.dim);
    const std::uint64_t hbm_a = p.hbm_a, hbm_b = p.hbm_b ? p.hbm_b : hbm_a + p.m * p.k * eb;
    const std::uint64_t hbm_c = p.hbm_c ? p.hbm_c : hbm_b + p.k * p.n * eb;
    // VMEM: kBuffers A buffers, kBuffers B buffers, one C buffer.
    const std::uint64_t a_buf = std::uint64_t(p.tile_m) * p.dim * eb, b_buf = std::uint64_t(p.dim) * block_cols * eb;
    std::uint64_t vm_a[kBuffers], vm_b[kBuffers];
    for (unsigned i = 0; i < kBuffers; ++i) {
        vm_a[i] = i * a_buf;
        vm_b[i] = kBuffers * a_buf + i * b_buf;
    }
    const std::uint64_t vm_c = kBuffers * (a_buf + b_buf);

    const std::string pre = p.prefix + "/";
    struct Step {
        std::uint64_t mb = 0, nb = 0, ks = 0;
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
    // Accumulators: the 64 m registers split evenly over the MXUs, two sets per MXU (a block
    // drains one while the next fills the other); result chunks share a register modulo the set.
    const unsigned acc_per_set = kRegsPerClass / p.mxus / 2;
    auto acc = [&](unsigned j, unsigned set, std::uint64_t r) {
        return mreg(j * 2 * acc_per_set + set * acc_per_set + static_cast<unsigned>(r % acc_per_set));
    };
    std::int64_t loads[kBuffers] = {};  // DMAs issued into each buffer (its flag counts them)
    unsigned engine = 0;
    auto load_step = [&](std::uint64_t g) {
        Step s = step_at(g);
        unsigned b = g % kBuffers;
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
    // Pops, epilogue and write-back of a finished block, in groups of 8 result vregs,
    // software-pipelined in three stages (pops of group g, bias + activation of g-1, stores of
    // g-2, each stage in its own 8 registers) so that no stage waits on the one before, and
    // interleaved into the next block's first steps so that the MXUs keep streaming. Blocks
    // alternate between two accumulator sets.
    struct Group {
        unsigned j = 0;
        std::uint64_t r0 = 0, r1 = 0, cols = 0, rows = 0;
        unsigned regs = 0;  // first of its 8 vector registers
    };
    struct Epilogue {
        Step s;
        unsigned j = 0;
        std::uint64_t next_r = 0, out_bytes = 0, groups = 0;
        std::optional<Group> alu, store;  // groups waiting for their next stage
    };
    std::optional<Epilogue> epi;
    std::uint64_t epi_chunks = 0;
    auto start_epilogue = [&](const Step& s) {
        if (c_dmas > 0) {  // the C buffer must be free
            e.annotate(pre + "wait_c");
            e.swait(kFlagC, Cond::Ge, c_dmas);
        }
        epi.emplace();
        epi->s = s;
        epi_chunks = 0;
    };
    auto epilogue_group = [&]() {  // advances the pipeline by one group; false when drained
        Epilogue& x = *epi;
        const std::uint64_t rows = rows_of(x.s.mb), chunks = (rows + 7) / 8;
        const unsigned set = static_cast<unsigned>((x.s.mb * nblk + x.s.nb) % 2);
        while (x.j < p.mxus && !cols_of(x.s.nb, x.j)) ++x.j;
        std::optional<Group> pop;
        if (x.j < p.mxus) {
            Group g{x.j, x.next_r, std::min<std::uint64_t>(chunks, x.next_r + 8), cols_of(x.s.nb, x.j), rows,
                    kOutReg + static_cast<unsigned>(x.groups++ % 3) * 8};
            pop = g;
            x.next_r = g.r1;
            if (x.next_r >= chunks) {
                x.next_r = 0;
                ++x.j;
            }
        }
        if (!pop && !x.alu && !x.store) return false;
        e.annotate(ann_epi);
        auto rows_in = [](const Group& g, std::uint64_t r) { return std::min<std::uint64_t>(8, g.rows - r * 8); };
        if (x.store)
            for (std::uint64_t r = x.store->r0; r < x.store->r1; ++r) {
                std::uint64_t b = rows_in(*x.store, r) * x.store->cols * eb;
                e.vst(0, vreg(x.store->regs + (r - x.store->r0)), vm_c + x.out_bytes, b);
                x.out_bytes += b;
            }
        if (x.alu)
            for (std::uint64_t r = x.alu->r0; r < x.alu->r1; ++r) {
                std::uint8_t v = vreg(x.alu->regs + static_cast<unsigned>(r - x.alu->r0));
                e.vop(Opcode::VAlu, 0, v, v, static_cast<std::uint32_t>(rows_in(*x.alu, r) * x.alu->cols));
            }
        if (pop)
            for (std::uint64_t r = pop->r0; r < pop->r1; ++r)
                e.mpop(pop->j, vreg(pop->regs + static_cast<unsigned>(r - pop->r0)), acc(pop->j, set, r),
                       static_cast<std::uint32_t>(rows_in(*pop, r)), static_cast<std::uint32_t>(pop->cols));
        x.store = x.alu;
        x.alu = pop;
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
    // Wait for a step's tiles, then load each MXU's weight tile into its register (all loads
    // first, so that the pushes after them overlap).
    bool weights_loaded = false;
    auto load_weights = [&](std::uint64_t g) {
        const Step s = step_at(g);
        const unsigned b = g % kBuffers;
        const std::uint64_t depth = depth_of(s.ks);
        e.annotate(pre + "wait_data");
        e.swait(kFlagBuf0 + b, Cond::Ge, loads[b]);
        e.annotate(pre + "load_weights");
        for (unsigned j = 0; j < p.mxus; ++j)
            if (std::uint64_t cols = cols_of(s.nb, j))
                e.vld(0, vreg(kWeightReg + j), vm_b[b] + std::uint64_t(j) * p.dim * depth * eb, depth * cols * eb);
    };
    std::optional<Step> finished;  // a block whose epilogue is due
    if (p.double_buffer)
        for (std::uint64_t g = 0; g + 1 < kBuffers && g < total_steps; ++g) load_step(g);
    for (std::uint64_t g = 0; g < total_steps; ++g) {
        Step s = step_at(g);
        unsigned b = g % kBuffers;
        if (p.double_buffer) {
            if (g + kBuffers - 1 < total_steps) load_step(g + kBuffers - 1);
        } else {
            load_step(g);
        }
        const std::uint64_t rows = rows_of(s.mb);
        if (!weights_loaded) load_weights(g);  // not hoisted into the previous step
        weights_loaded = false;
        e.annotate(pre + "push_weights");
        const std::uint64_t depth = depth_of(s.ks);
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
            // With prefetch, the next step's weights come into registers three quarters into
            // this step (its data has landed by then), so that only the pushes are left at the
            // step boundary and they hide behind the queued matmuls.
            if (p.double_buffer && g + 1 < total_steps && r == (rows / 8) * 3 / 4) {
                load_weights(g + 1);
                weights_loaded = true;
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
