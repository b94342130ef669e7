#include "traces/gen/lowering.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace xpu::gen {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

bool conv_windows_disjoint(const ConvInput& x) {
    return (x.kh - 1) * x.dh + 1 <= x.sh && (x.kw - 1) * x.dw + 1 <= x.sw && x.ph == 0 && x.pw == 0;
}

std::vector<BandSegment> conv_band(const ConvInput& x, std::uint64_t r0, std::uint64_t r1) {
    std::vector<BandSegment> out;
    const std::uint64_t per_img = x.ho * x.wo;
    const std::int64_t H = std::int64_t(x.h), W = std::int64_t(x.w);
    for (std::uint64_t img = r0 / per_img; r0 < r1 && img <= (r1 - 1) / per_img; ++img) {
        const std::uint64_t a = std::max(r0, img * per_img) - img * per_img, b = std::min(r1, (img + 1) * per_img) - img * per_img;
        if (conv_windows_disjoint(x)) {  // exactly the block's taps, by a strided DMA
            const std::uint64_t oh = a / x.wo, ow = a % x.wo;
            out.push_back({img, oh * x.sh * x.w + ow * x.sw, (b - a) * x.kh * x.kw});
            continue;
        }
        const std::int64_t oh0 = std::int64_t(a / x.wo), ow0 = std::int64_t(a % x.wo);
        const std::int64_t oh1 = std::int64_t((b - 1) / x.wo), ow1 = std::int64_t((b - 1) % x.wo);
        // First position: the first output pixel's top-left tap (its row is read by no other
        // output row of the block), or the image's start when that is in the padding.
        const std::int64_t top = oh0 * std::int64_t(x.sh) - std::int64_t(x.ph);
        const std::int64_t first = top >= 0 ? top * W + std::clamp<std::int64_t>(ow0 * std::int64_t(x.sw) - std::int64_t(x.pw), 0, W - 1) : 0;
        // Last position: the last output pixel's bottom-right tap, or the image's end.
        const std::int64_t bottom = oh1 * std::int64_t(x.sh) - std::int64_t(x.ph) + std::int64_t((x.kh - 1) * x.dh);
        const std::int64_t right = ow1 * std::int64_t(x.sw) - std::int64_t(x.pw) + std::int64_t((x.kw - 1) * x.dw);
        const std::int64_t last = bottom <= H - 1 ? bottom * W + std::clamp<std::int64_t>(right, 0, W - 1) : H * W - 1;
        if (last >= first && first < H * W) out.push_back({img, std::uint64_t(first), std::uint64_t(last - first + 1)});
    }
    return out;
}

namespace {
constexpr unsigned kBuffers = 3;          // matmul tile buffers: prefetch two steps ahead
constexpr unsigned kBandBuffers = 4;      // convolution bands: the next one loads while this one is read
constexpr std::uint16_t kFlagBuf0 = 1;    // flags 1..3: matmul tile buffers
constexpr std::uint16_t kFlagC = 4;       // matmul write-back
constexpr std::uint16_t kFlagVecIn0 = 5;  // flags 5, 6: vector pass input buffers
constexpr std::uint16_t kFlagVecOut0 = 7; // flags 7, 8: vector pass output buffers
constexpr std::uint16_t kFlagCopy = 9;
constexpr std::uint16_t kFlagBand = 16;    // convolution input bands (flags 10..15: collectives)
constexpr unsigned kDmaSpread = 2;                 // engines a large transfer is spread over
constexpr std::uint64_t kMinDmaPiece = 128 << 10;  // transfers below twice this stay one DMA
constexpr std::uint64_t kDmaAlign = 4096;         // pieces start on a DMA chunk boundary
constexpr unsigned kLhsRegs = 24;         // v0..v23 stream A rows
// Weight tiles (one register per MXU) in two sets, v24..v31 and v32..v39, alternating by K
// step: the next step's tiles load while this step's are still being pushed. With one set,
// every load waited for the previous push to finish reading its register, serialising vld and
// mpush at each step. Measured on a 2-layer llama2-7b decode with doubled HBM bandwidth: 1.21x
// with this alone, 1.17x with the DMA spread alone (spread_dma), 1.56x with both.
constexpr unsigned kWeightReg = 24;
constexpr unsigned kLoadLeadChunks = 4;   // A-row loads run up to this many chunks ahead of their matmuls
constexpr unsigned kOutReg = 40;          // v40..v63 epilogue: three stages of 8
constexpr std::uint64_t kEpilogueDelayChunks = 40;  // > MXU queue (32 chunks) + drain
constexpr unsigned kVregElements = 1024;  // 128 lanes x 8 sublanes
constexpr std::uint64_t kVecChunkElements = 64 * kVregElements;
}  // namespace

Lowering::Lowering(Emitter& e, const TileConfig& cfg) : e_(e), cfg_(cfg) {
    if (!cfg.tile_m || cfg.tile_m % 8 || !cfg.mxus || cfg.mxus > 8 || !cfg.dim || !cfg.dma_engines || !cfg.vpus)
        throw std::invalid_argument(
            "tiling: need tile_m a positive multiple of 8, 1..8 MXUs, dim > 0, DMA engines > 0, vector units > 0");
}

void Lowering::dma_in(std::uint64_t hbm, std::uint64_t vmem, std::uint64_t bytes, std::uint16_t flag) {
    if (cfg_.split_dma > 1) {
        // Planted: the load as split_dma back-to-back DMAs of contiguous pieces, all on one
        // engine and raising the same flag; the waits count every piece (flag_count_), so the
        // program stays correct and only pays the per-DMA cost split_dma times.
        const unsigned engine = next_engine();
        const std::uint64_t piece = ceil_div(bytes, cfg_.split_dma);
        for (std::uint64_t off = 0; off < bytes; off += piece) {
            e_.dma(engine, Space::Hbm, hbm + off, Space::Vmem, vmem + off, std::min(piece, bytes - off), flag);
            ++flag_count_[flag];
        }
        return;
    }
    spread_dma(Space::Hbm, hbm, Space::Vmem, vmem, bytes, flag);
}

void Lowering::dma_out(std::uint64_t vmem, std::uint64_t hbm, std::uint64_t bytes, std::uint16_t flag) {
    spread_dma(Space::Vmem, vmem, Space::Hbm, hbm, bytes, flag);
}

// A large transfer is spread over two DMA engines in contiguous pieces, as a compiler for a chip
// with several engines does: one engine's bandwidth is no more than HBM's, so a tile on one
// engine takes its full transfer time and only the transfers the prefetch depth keeps in flight
// overlap. On configs/xpu.yaml this costs nothing while HBM sets the pace, and is what lets a
// decode (one weight tile per step) run faster on faster HBM (see kWeightReg for the figures).
// Two, not every engine: measured on GEMMs of three shapes, four pieces cost 1-2.5% against
// one piece, two 0.8-2% (before the A loads ran ahead of their matmuls, which since recovered
// more than that: docs/tracegen.md has the before/after table).
void Lowering::spread_dma(Space src_space, std::uint64_t src, Space dst_space, std::uint64_t dst, std::uint64_t bytes,
                          std::uint16_t flag) {
    const std::uint64_t pieces = std::min<std::uint64_t>(std::min(cfg_.dma_engines, kDmaSpread), std::max<std::uint64_t>(1, bytes / kMinDmaPiece));
    const std::uint64_t piece = ceil_div(ceil_div(bytes, pieces), kDmaAlign) * kDmaAlign;
    for (std::uint64_t off = 0; off < bytes; off += piece) {
        e_.dma(next_engine(), src_space, src + off, dst_space, dst + off, std::min(piece, bytes - off), flag);
        ++flag_count_[flag];
    }
}

void Lowering::wait_all(std::uint16_t flag) {
    if (flag_count_[flag]) e_.swait(flag, Cond::Ge, flag_count_[flag]);
}

void Lowering::copy(std::uint64_t src, std::uint64_t dst, std::uint64_t bytes, const std::string& op) {
    e_.annotate(op);
    e_.dma(next_engine(), Space::Hbm, src, Space::Hbm, dst, bytes, kFlagCopy);
    ++flag_count_[kFlagCopy];
    wait_all(kFlagCopy);
}

void Lowering::send(std::uint64_t src, std::uint16_t chip, std::uint64_t dst, std::uint64_t bytes, std::uint16_t flag,
                    bool reduce) {
    e_.dma_remote(next_engine(), Space::Hbm, src, chip, Space::Hbm, dst, bytes, flag, reduce, cfg_.dtype);
}

void Lowering::wait_flag(std::uint16_t flag, std::int64_t count) { e_.swait(flag, Cond::Ge, count); }

void Lowering::vector_pass(std::uint64_t in, std::uint64_t in2, std::uint64_t out, std::uint64_t elements,
                           const std::vector<Opcode>& ops, const std::string& op, std::uint64_t out_elements) {
    if (!elements) return;
    if (out_elements > elements) out_elements = elements;
    const std::uint64_t eb = dtype_bytes(cfg_.dtype);
    const std::uint64_t chunk_bytes = kVecChunkElements * eb;
    // VMEM above the matmul buffers: per buffer an input, a second input and an output chunk.
    const std::uint64_t base = cfg_.vec_base;  // above the matmul buffers (under 12 MiB by default)
    auto vm_in = [&](unsigned b) { return base + b * 3 * chunk_bytes; };
    auto vm_in2 = [&](unsigned b) { return vm_in(b) + chunk_bytes; };
    auto vm_out = [&](unsigned b) { return vm_in(b) + 2 * chunk_bytes; };
    const std::uint64_t chunks = ceil_div(elements, kVecChunkElements);
    const std::uint32_t ann = e_.string_id(op);
    auto load = [&](std::uint64_t c) {
        const unsigned b = c % 2;
        const std::uint64_t n = std::min(kVecChunkElements, elements - c * kVecChunkElements) * eb;
        dma_in(in + c * chunk_bytes, vm_in(b), n, kFlagVecIn0 + b);
        if (in2) dma_in(in2 + c * chunk_bytes, vm_in2(b), n, kFlagVecIn0 + b);
    };
    e_.annotate(ann);
    load(0);
    std::int64_t outs[2] = {0, 0};
    for (std::uint64_t c = 0; c < chunks; ++c) {
        const unsigned b = c % 2;
        e_.annotate(ann);
        if (c + 1 < chunks) load(c + 1);  // double-buffered
        wait_all(kFlagVecIn0 + b);
        if (outs[b]) e_.swait(kFlagVecOut0 + b, Cond::Ge, flag_count_[kFlagVecOut0 + b]);  // its output buffer is free
        const std::uint64_t n = std::min(kVecChunkElements, elements - c * kVecChunkElements);
        for (std::uint64_t v = 0; v * kVregElements < n; ++v) {
            const std::uint32_t cnt = static_cast<std::uint32_t>(std::min<std::uint64_t>(kVregElements, n - v * kVregElements));
            const std::uint8_t a = vreg(v % 16), x = vreg(16 + v % 16);
            const unsigned u = static_cast<unsigned>(v % cfg_.vpus);  // vregs round-robin over the vector units
            e_.vld(u, a, vm_in(b) + v * kVregElements * eb, cnt * eb);
            if (in2) e_.vld(u, x, vm_in2(b) + v * kVregElements * eb, cnt * eb);
            for (std::size_t i = 0; i < ops.size(); ++i) {
                if (i == 0 && in2) e_.vop2(ops[i], u, a, a, x, cnt);
                else e_.vop(ops[i], u, a, a, cnt);
            }
            e_.vst(u, a, vm_out(b) + v * kVregElements * eb, cnt * eb);
        }
        // A reduction writes back its share of the (smaller) output.
        const std::uint64_t out_n = out_elements == elements ? n : ceil_div(n * out_elements, elements);
        const std::uint64_t out_at = out_elements == elements ? c * chunk_bytes
                                                              : (c * kVecChunkElements * out_elements / elements) * eb;
        dma_out(vm_out(b), out + out_at, out_n * eb, kFlagVecOut0 + b);
        ++outs[b];
    }
    wait_all(kFlagVecOut0);
    wait_all(kFlagVecOut0 + 1);
}

void Lowering::matmuls(const std::vector<Matmul>& batch, const std::string& op) {
    if (batch.empty()) return;
    for (const auto& m : batch) {
        if (!m.m || !m.n || !m.k) throw std::invalid_argument(op + ": matmul with a zero dimension");
        if (m.packed > 1 && (m.packed * m.k > cfg_.dim || m.n > cfg_.dim))
            throw std::invalid_argument(op + ": packed groups wider than the systolic array");
        if (m.conv && (m.m != m.conv->n * m.conv->ho * m.conv->wo || m.packed * m.k != m.conv->kh * m.conv->kw * m.conv->c ||
                       !m.conv->sh || !m.conv->sw || !m.conv->dh || !m.conv->dw))
            throw std::invalid_argument(op + ": convolution input inconsistent with its matmul (m = n ho wo, packed k = kh kw c)");
    }
    Emitter& e = e_;
    const TileConfig& p = cfg_;
    const std::uint64_t eb = dtype_bytes(p.dtype);
    const std::uint64_t block_cols = std::uint64_t(p.mxus) * p.dim;

    // The work as blocks of output, each handled by the MXUs ("lanes") together:
    //  - wide problems: a block is tile_m rows x (mxus x dim) columns of one problem, each MXU a
    //    dim-wide column tile, all fed the same A rows;
    //  - a batch of narrow problems (n <= dim, e.g. attention's P V per head): up to mxus
    //    problems side by side, each MXU one problem with its own A and B.
    struct Lane {
        std::size_t i = 0;
        std::uint64_t col0 = 0, cols = 0;
    };
    struct Block {
        std::vector<Lane> lanes;
        std::uint64_t mb = 0, row0 = 0, rows = 0, k = 0, ksteps = 0;
        bool shared_a = true;
    };
    std::vector<Block> blocks;
    const bool any_conv = std::any_of(batch.begin(), batch.end(), [](const Matmul& m) { return m.conv.has_value(); });
    const bool grouped = batch.size() > 1 && std::all_of(batch.begin(), batch.end(), [&](const Matmul& m) { return m.n <= p.dim; });
    // Rows per block: tile_m, or fewer when a convolution's bands (four buffers of one band per
    // lane, above the C block) would not fit below the vector passes' buffers.
    const std::uint64_t band_lanes = grouped ? p.mxus : 1;
    const std::uint64_t vm_band0 = kBuffers * (std::uint64_t(p.tile_m) * p.dim * eb * (grouped ? p.mxus : 1) + std::uint64_t(p.dim) * p.dim * eb * p.mxus) +
                                   std::uint64_t(p.tile_m) * block_cols * eb;
    auto band_bytes = [&](const ConvInput& x, std::uint64_t r0, std::uint64_t r1) {
        std::uint64_t b = 0;
        for (const auto& s : conv_band(x, r0, r1)) b += s.pixels * x.c * eb;
        return b;
    };
    auto max_band = [&](std::uint64_t tm) {
        std::uint64_t most = 0;
        for (const auto& m : batch)
            if (m.conv)
                for (std::uint64_t r0 = 0; r0 < m.m; r0 += tm) most = std::max(most, band_bytes(*m.conv, r0, std::min(m.m, r0 + tm)));
        return most;
    };
    std::uint64_t tm = p.tile_m, band_max = 0;
    if (any_conv) {
        while ((band_max = max_band(tm)), tm > 8 && vm_band0 + kBandBuffers * band_lanes * band_max > p.vec_base) tm -= 8;
        if (vm_band0 + kBandBuffers * band_lanes * band_max > p.vec_base)
            throw std::invalid_argument(op + ": the input of 8 output pixels (" + std::to_string(band_max) +
                                        " bytes) does not fit in VMEM four times over");
    }
    // The blocks are listed before the first is lowered: bounded, so that an absurd size is refused
    // rather than exhausting memory on its list (2^20 blocks hold more than 10^8 matmuls).
    {
        constexpr std::uint64_t kMaxBlocks = 1u << 20;
        std::uint64_t n_blocks = 0;
        for (std::size_t i = 0; i < batch.size(); ++i)
            n_blocks += ceil_div(batch[i].m, tm) * (grouped ? 1 : ceil_div(batch[i].n, block_cols));
        if (n_blocks > kMaxBlocks)
            throw std::invalid_argument(op + ": " + std::to_string(n_blocks) + " blocks of " + std::to_string(tm) +
                                        " rows, more than the " + std::to_string(kMaxBlocks) +
                                        " one operation may have: smaller sizes, or the work split over several");
    }
    if (!grouped) {
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const Matmul& m = batch[i];
            for (std::uint64_t mb = 0; mb * tm < m.m; ++mb)
                for (std::uint64_t nb = 0; nb * block_cols < m.n; ++nb) {
                    Block b;
                    b.mb = mb;
                    b.row0 = mb * tm;
                    b.rows = std::min<std::uint64_t>(tm, m.m - mb * tm);
                    b.k = m.k;
                    b.ksteps = ceil_div(m.k, p.dim);
                    for (unsigned j = 0; j < p.mxus; ++j) {
                        const std::uint64_t c0 = nb * block_cols + std::uint64_t(j) * p.dim;
                        if (c0 < m.n) b.lanes.push_back({i, c0, std::min<std::uint64_t>(p.dim, m.n - c0)});
                    }
                    blocks.push_back(b);
                }
        }
    } else {
        for (std::size_t g = 0; g < batch.size();) {
            std::size_t end = g + 1;  // problems of one shape share a block
            while (end < batch.size() && end - g < p.mxus && batch[end].m == batch[g].m && batch[end].k == batch[g].k) ++end;
            for (std::uint64_t mb = 0; mb * tm < batch[g].m; ++mb) {
                Block b;
                b.mb = mb;
                b.row0 = mb * tm;
                b.rows = std::min<std::uint64_t>(tm, batch[g].m - mb * tm);
                b.k = batch[g].k;
                b.ksteps = ceil_div(b.k, p.dim);
                b.shared_a = false;
                for (std::size_t i = g; i < end; ++i) b.lanes.push_back({i, 0, batch[i].n});
                blocks.push_back(b);
            }
            g = end;
        }
    }
    std::vector<std::uint64_t> first_step;
    std::uint64_t total_steps = 0;
    for (const auto& b : blocks) {
        first_step.push_back(total_steps);
        total_steps += b.ksteps;
    }
    struct Step {
        std::size_t block = 0;
        std::uint64_t ks = 0;
        bool last_k = false;
    };
    auto step_at = [&](std::uint64_t g) {
        Step s;
        s.block = static_cast<std::size_t>(std::upper_bound(first_step.begin(), first_step.end(), g) - first_step.begin() - 1);
        s.ks = g - first_step[s.block];
        s.last_k = s.ks + 1 == blocks[s.block].ksteps;
        return s;
    };
    auto depth_of = [&](const Step& s) { return std::min<std::uint64_t>(p.dim, blocks[s.block].k - s.ks * p.dim); };

    // VMEM: kBuffers A buffers (one tile per lane when lanes have their own A), kBuffers B
    // buffers (a dim x dim tile per lane), one C block.
    const std::uint64_t a_tile = std::uint64_t(p.tile_m) * p.dim * eb, b_tile = std::uint64_t(p.dim) * p.dim * eb;
    const std::uint64_t a_buf = a_tile * (grouped ? p.mxus : 1), b_buf = b_tile * p.mxus;
    std::uint64_t vm_a[kBuffers], vm_b[kBuffers];
    for (unsigned i = 0; i < kBuffers; ++i) {
        vm_a[i] = i * a_buf;
        vm_b[i] = kBuffers * a_buf + i * b_buf;
    }
    const std::uint64_t vm_c = kBuffers * (a_buf + b_buf);
    // Without prefetch there is nothing to overlap: every step loads into the same buffers,
    // under the same flag (single buffering).
    const unsigned nbuf = p.prefetch ? kBuffers : 1;
    auto lane_a = [&](std::uint64_t g, unsigned j) { return vm_a[g % nbuf] + (grouped ? j * a_tile : 0); };
    auto lane_b = [&](std::uint64_t g, unsigned j, std::uint64_t depth) { return vm_b[g % nbuf] + j * p.dim * depth * eb; };
    auto weight_reg = [](std::uint64_t g, unsigned j) { return kWeightReg + static_cast<unsigned>(g % 2) * 8 + j; };
    // Convolution bands: a block needs a new band set unless it is the next N block of the row
    // block before it (same problem, same rows); sets rotate over four buffers, one band per lane.
    // With prefetch, a set's band is requested when the set before it starts (two steps ahead of
    // that), so it has the whole previous set's time to arrive; its buffer's last reader, three
    // sets back, has issued all its loads by then. Without prefetch: at its own first step.
    std::vector<std::uint64_t> band_set(blocks.size(), 0);
    std::vector<bool> new_band(blocks.size(), false);
    for (std::size_t bi = 0, set = 0; bi < blocks.size(); ++bi) {
        const bool same = bi > 0 && blocks[bi].shared_a && blocks[bi - 1].shared_a && blocks[bi].lanes[0].i == blocks[bi - 1].lanes[0].i &&
                          blocks[bi].mb == blocks[bi - 1].mb;
        if (bi > 0 && !same) ++set;
        band_set[bi] = set;
        new_band[bi] = !same;
    }
    auto band_at = [&](std::size_t bi, unsigned j) {
        return vm_band0 + ((p.prefetch ? band_set[bi] % kBandBuffers : 0) * band_lanes + j) * band_max;
    };
    std::vector<std::size_t> set_block;  // the first block of each band set
    for (std::size_t bi = 0; bi < blocks.size(); ++bi)
        if (new_band[bi]) set_block.push_back(bi);
    // kFlagBand counts once each set's channel slabs are in (see load_bands).
    std::vector<std::vector<std::int64_t>> band_landed(blocks.empty() ? 0 : band_set.back() + 1);
    // A step of a convolution reads its A chunks straight from the band (one shifted or strided
    // load per chunk) when every chunk's rows are one contiguous piece of it: the step's K range
    // within one kernel row's run of kw x c elements (one tap's c when dilated), and no chunk
    // spanning two output rows (W a multiple of 8, or each output row a whole input row).
    // Otherwise the DMA engines gather the step's A tile from the band into an A buffer (a
    // strided VMEM -> VMEM transfer; the vector unit's loads then read it as a plain tile).
    auto step_reads_band = [&](const Step& s) {
        const Block& bl = blocks[s.block];
        for (const auto& l : bl.lanes) {
            const Matmul& m = batch[l.i];
            if (!m.conv) return false;
            const ConvInput& x = *m.conv;
            const std::uint64_t run = x.dw == 1 ? x.kw * x.c : x.c;
            const std::uint64_t e0 = s.ks * p.dim * m.packed, e1 = e0 + std::min<std::uint64_t>(p.dim, bl.k - s.ks * p.dim) * m.packed;
            const bool rows_contiguous = x.kw == 1 && x.sw == 1 && x.sh == 1 && x.pw == 0 && x.w == x.wo;
            if (conv_windows_disjoint(x)) continue;  // the band is the A tile itself, row by row
            if (e0 / run != (e1 - 1) / run || (!rows_contiguous && x.wo % 8 != 0)) return false;
        }
        return true;
    };

    // Accumulators: the 64 m registers split evenly over the MXUs, two sets per MXU (a block
    // drains one while the next fills the other); result chunks share a register modulo the set.
    const unsigned acc_per_set = kRegsPerClass / p.mxus / 2;
    auto acc = [&](unsigned j, unsigned set, std::uint64_t r) {
        return mreg(j * 2 * acc_per_set + set * acc_per_set + static_cast<unsigned>(r % acc_per_set));
    };
    const std::string pre = op + "/";
    const std::uint32_t ann_load_a = e.string_id(pre + "load_a"), ann_load_b = e.string_id(pre + "load_b"),
                        ann_wait = e.string_id(pre + "wait_data"), ann_weights = e.string_id(pre + "load_weights"),
                        ann_push = e.string_id(pre + "push_weights"), ann_matmul = e.string_id(pre + "matmul"),
                        ann_epi = e.string_id(pre + "epilogue"), ann_store = e.string_id(pre + "store_c"),
                        ann_wait_c = e.string_id(pre + "wait_c");
    // A convolution band set's DMAs (one band per lane), raising kFlagBand, in slabs of dim
    // channels (the band is channel-blocked in VMEM, as the (8, 128) tiling lays it out), so
    // that a K step waits only for the slabs it reads: the first step of a wide 1x1
    // convolution needs 128 channels, not all of them. band_landed[set][k]: the flag's count
    // once slabs 0..k of the set are in.
    auto slabs_of = [&](const ConvInput& x) { return ceil_div(x.c, p.dim); };
    auto load_bands = [&](std::size_t set) {
        if (set >= set_block.size()) return;
        const Block& bl = blocks[set_block[set]];
        const unsigned lanes = bl.shared_a ? 1u : static_cast<unsigned>(bl.lanes.size());
        std::uint64_t slabs = 0;
        for (unsigned j = 0; j < lanes; ++j) slabs = std::max(slabs, slabs_of(*batch[bl.lanes[j].i].conv));
        std::vector<std::uint64_t> off(lanes, 0);
        for (std::uint64_t k = 0; k < slabs; ++k) {
            for (unsigned j = 0; j < lanes; ++j) {
                const ConvInput& x = *batch[bl.lanes[j].i].conv;
                if (k >= slabs_of(x)) continue;
                const std::uint64_t ch = std::min<std::uint64_t>(p.dim, x.c - k * p.dim);
                for (const auto& seg : conv_band(x, bl.row0, bl.row0 + bl.rows)) {
                    const std::uint64_t bytes = seg.pixels * ch * eb;
                    dma_in(x.hbm_x + ((seg.img * x.h * x.w + seg.first) * x.c + k * p.dim) * eb, band_at(set_block[set], j) + off[j],
                           bytes, kFlagBand);
                    off[j] += bytes;
                }
            }
            band_landed[set].push_back(flag_count_[kFlagBand]);
        }
    };
    // A: tile-major in HBM, the (row block, K step) tile at rows x depth. B: the (K step,
    // columns) tile at depth x cols. C: the block's rows x cols per lane (or per block).
    auto load_a = [&](std::uint64_t g) {
        const Step s = step_at(g);
        const Block& bl = blocks[s.block];
        const std::uint64_t depth = depth_of(s);
        e.annotate(ann_load_a);
        for (unsigned j = 0; j < (bl.shared_a ? 1u : bl.lanes.size()); ++j) {
            const Matmul& m = batch[bl.lanes[j].i];
            if (m.conv) {  // bands are loaded by set (load_bands), not per step
                if (j == 0 && new_band[s.block] && !s.ks) {
                    if (!p.prefetch) load_bands(band_set[s.block]);
                    else {
                        if (s.block == 0) load_bands(0);
                        load_bands(band_set[s.block] + 1);
                    }
                }
                continue;
            }
            dma_in(m.hbm_a + (bl.row0 * m.k + s.ks * p.dim * bl.rows) * m.packed * eb, lane_a(g, j),
                   bl.rows * depth * m.packed * eb, kFlagBuf0 + g % nbuf);
        }
    };
    auto load_b = [&](std::uint64_t g) {
        const Step s = step_at(g);
        const Block& bl = blocks[s.block];
        const std::uint64_t depth = depth_of(s);
        e.annotate(ann_load_b);
        if (bl.shared_a) {  // one problem: its block's columns are one tile
            const Matmul& m = batch[bl.lanes[0].i];
            std::uint64_t cols = 0;
            for (const auto& l : bl.lanes) cols += l.cols;
            dma_in(m.hbm_b + (s.ks * p.dim * m.n + bl.lanes[0].col0 * depth) * eb, lane_b(g, 0, depth), depth * cols * eb,
                   kFlagBuf0 + g % nbuf);
        } else {
            for (unsigned j = 0; j < bl.lanes.size(); ++j) {
                const Matmul& m = batch[bl.lanes[j].i];
                dma_in(m.hbm_b + s.ks * p.dim * m.n * eb, lane_b(g, j, depth), depth * m.n * eb, kFlagBuf0 + g % nbuf);
            }
        }
    };
    auto load_step = [&](std::uint64_t g) {
        load_a(g);
        if (!p.late_dma) load_b(g);
    };
    // The A tile of a convolution step that does not read the band directly, gathered from the
    // band once it has landed; issued a step ahead (after the band, before the step's wait).
    auto wait_band = [&](const Step& s) {
        const Block& bl = blocks[s.block];
        std::uint64_t need = 0;  // the last slab the step reads
        for (const auto& l : bl.lanes) {
            const Matmul& m = batch[l.i];
            const ConvInput& x = *m.conv;
            const std::uint64_t e0 = s.ks * p.dim * m.packed, e1 = e0 + depth_of(s) * m.packed;
            need = std::max(need, e1 - e0 >= x.c || e0 / x.c != (e1 - 1) / x.c ? slabs_of(x) - 1 : ((e1 - 1) % x.c) / p.dim);
        }
        const auto& landed = band_landed[band_set[s.block]];
        if (!landed.empty()) e.swait(kFlagBand, Cond::Ge, landed[std::min<std::size_t>(need, landed.size() - 1)]);
    };
    auto gather = [&](std::uint64_t g) {
        const Step s = step_at(g);
        const Block& bl = blocks[s.block];
        if (!batch[bl.lanes[0].i].conv || step_reads_band(s)) return;
        e.annotate(ann_wait);
        wait_band(s);
        e.annotate(ann_load_a);
        const std::uint64_t depth = depth_of(s);
        for (unsigned j = 0; j < (bl.shared_a ? 1u : bl.lanes.size()); ++j)
            spread_dma(Space::Vmem, band_at(s.block, j), Space::Vmem, lane_a(g, j),
                       bl.rows * depth * batch[bl.lanes[j].i].packed * eb, kFlagBuf0 + g % nbuf);
    };

    // Pops, epilogue and write-back of a finished block, in groups of 8 result vregs,
    // software-pipelined in three stages (pops of group g, bias + activation of g-1, stores of
    // g-2, each stage in its own 8 registers) so that no stage waits on the one before, and
    // interleaved into the next block's first steps so that the MXUs keep streaming.
    struct Group {
        unsigned j = 0;
        std::uint64_t r0 = 0, r1 = 0, cols = 0, rows = 0;
        unsigned regs = 0;  // first of its 8 vector registers
    };
    struct Epilogue {
        std::size_t block = 0;
        unsigned j = 0;
        std::uint64_t next_r = 0, out_bytes = 0, groups = 0;
        std::vector<std::uint64_t> lane_start;  // where each lane's rows begin in the C buffer
        std::optional<Group> alu, store;        // groups waiting for their next stage
    };
    std::optional<Epilogue> epi;
    std::uint64_t epi_chunks = 0;
    auto start_epilogue = [&](std::size_t block) {
        e.annotate(ann_wait_c);
        wait_all(kFlagC);  // the C buffer must be free
        epi.emplace();
        epi->block = block;
        epi_chunks = 0;
    };
    auto epilogue_group = [&]() {  // advances the pipeline by one group; false when drained
        Epilogue& x = *epi;
        const Block& bl = blocks[x.block];
        const std::uint64_t chunks = (bl.rows + 7) / 8;
        const unsigned set = static_cast<unsigned>(x.block % 2);
        std::optional<Group> pop;
        if (x.j < bl.lanes.size()) {
            Group g{x.j, x.next_r, std::min<std::uint64_t>(chunks, x.next_r + 8), bl.lanes[x.j].cols, bl.rows,
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
                if (r == 0) x.lane_start.push_back(x.out_bytes);
                std::uint64_t b = rows_in(*x.store, r) * x.store->cols * eb;
                e.vst(static_cast<unsigned>(r % p.vpus), vreg(x.store->regs + static_cast<unsigned>(r - x.store->r0)),
                      vm_c + x.out_bytes, b);  // result vregs round-robin over the vector units
                x.out_bytes += b;
            }
        if (x.alu)
            for (std::uint64_t r = x.alu->r0; r < x.alu->r1; ++r) {
                std::uint8_t v = vreg(x.alu->regs + static_cast<unsigned>(r - x.alu->r0));
                e.vop(Opcode::VAlu, static_cast<unsigned>(r % p.vpus), v, v, static_cast<std::uint32_t>(rows_in(*x.alu, r) * x.alu->cols));
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
        const Block& bl = blocks[x.block];
        e.annotate(ann_store);
        if (bl.shared_a) {
            const Matmul& m = batch[bl.lanes[0].i];
            dma_out(vm_c, m.hbm_c + (bl.row0 * m.n + bl.lanes[0].col0 * bl.rows) * eb, x.out_bytes, kFlagC);
        } else {
            for (std::size_t j = 0; j < bl.lanes.size(); ++j) {
                const Matmul& m = batch[bl.lanes[j].i];
                const std::uint64_t end = j + 1 < x.lane_start.size() ? x.lane_start[j + 1] : x.out_bytes;
                dma_out(vm_c + x.lane_start[j], m.hbm_c + bl.row0 * m.n * eb, end - x.lane_start[j], kFlagC);
            }
        }
        if (p.false_dep) {  // planted: nothing below reads C, yet the core waits for it
            e.annotate(ann_wait_c);
            wait_all(kFlagC);
        }
        epi.reset();
    };
    // Wait for a step's tiles, then load each MXU's weight tile into its register (all loads
    // first, so that the pushes after them overlap).
    bool weights_loaded = false;
    auto load_weights = [&](std::uint64_t g) {
        const Step s = step_at(g);
        const Block& bl = blocks[s.block];
        const std::uint64_t depth = depth_of(s);
        if (p.late_dma) load_b(g);  // planted: the weight tile is fetched only now
        e.annotate(ann_wait);
        wait_all(kFlagBuf0 + g % nbuf);
        if (step_reads_band(s)) wait_band(s);
        e.annotate(ann_weights);
        for (unsigned j = 0; j < bl.lanes.size(); ++j)
            e.vld(0, vreg(weight_reg(g, j)), lane_b(g, j, depth), depth * bl.lanes[j].cols * eb);
    };

    // A block whose epilogue is due (a sentinel, not std::optional: GCC 12 warns about the optional
    // as maybe uninitialised once this function inlines more).
    constexpr std::size_t kNoBlock = ~std::size_t(0);
    std::size_t finished = kNoBlock;  // a block whose epilogue is due
    const std::uint64_t ahead = p.prefetch ? kBuffers - 1 : 0;
    for (std::uint64_t g = 0; g < ahead && g < total_steps; ++g) load_step(g);
    if (p.prefetch && total_steps) gather(0);
    for (std::uint64_t g = 0; g < total_steps; ++g) {
        const Step s = step_at(g);
        const Block& bl = blocks[s.block];
        if (p.prefetch && g + 1 < total_steps) gather(g + 1);  // its band was requested a step ago
        if (g + ahead < total_steps) load_step(g + ahead);
        if (!p.prefetch) gather(g);
        if (finished != kNoBlock && p.bad_order) {
            // Planted: the finished block's whole epilogue is emitted here, behind a wait for
            // the data just requested, although it needs none of it.
            e.annotate(ann_wait);
            wait_all(kFlagBuf0 + (g + ahead) % nbuf);
            start_epilogue(finished);
            finish_epilogue();
            finished = kNoBlock;
        }
        const std::uint64_t rows = bl.rows, depth = depth_of(s);
        if (!weights_loaded) load_weights(g);  // not hoisted into the previous step
        weights_loaded = false;
        e.annotate(ann_push);
        for (unsigned j = 0; j < bl.lanes.size(); ++j)
            e.mpush(j, vreg(weight_reg(g, j)), static_cast<std::uint32_t>(depth), static_cast<std::uint32_t>(bl.lanes[j].cols),
                    p.dtype);
        if (finished != kNoBlock) {
            start_epilogue(finished);
            finished = kNoBlock;
        }
        // Shared A: one load feeds every MXU; own A: a load per lane (registers rotate). The
        // loads run `lead` chunks ahead of their matmuls, as a compiler software-pipelines them
        // on an in-order machine: a matmul issued right behind its load waits out the load's
        // latency, which caps the chunk rate once the MXUs stream faster than that (measured on
        // a 4096^3 GEMM with rows_per_cycle 2: 1.18x over rows_per_cycle 1 with the load just
        // before its matmul, 1.71x with the lead).
        const std::uint64_t chunks = (rows + 7) / 8;
        const unsigned loads_per_chunk = bl.shared_a ? 1u : static_cast<unsigned>(bl.lanes.size());
        const std::uint64_t lead = std::max(1u, std::min(kLoadLeadChunks, kLhsRegs / 2 / loads_per_chunk));
        auto lhs_reg = [&](std::uint64_t r, unsigned j) {
            return static_cast<unsigned>((r * loads_per_chunk + (bl.shared_a ? 0 : j)) % kLhsRegs);
        };
        const bool from_band = step_reads_band(s);
        auto load_lhs = [&](std::uint64_t r) {
            const std::uint64_t rr = std::min<std::uint64_t>(8, rows - r * 8);
            for (unsigned j = 0; j < loads_per_chunk; ++j) {
                const Matmul& m = batch[bl.lanes[j].i];
                const std::uint64_t a_row = depth * m.packed * eb;  // bytes of one A row
                if (from_band) {
                    // A shifted (and, with a stride, strided) load of the chunk's rows from the
                    // band: where the chunk's first pixel's window starts, kept inside the buffer.
                    const ConvInput& x = *m.conv;
                    const std::uint64_t at = (r * 8 * x.sw * x.c + (s.ks * p.dim * m.packed) % (x.kw * x.c)) * eb;
                    e.vld(0, vreg(lhs_reg(r, j)), band_at(s.block, j) + std::min(at, band_max - std::min(band_max, rr * a_row)),
                          rr * a_row);
                } else {
                    e.vld(0, vreg(lhs_reg(r, j)), lane_a(g, j) + r * 8 * a_row, rr * a_row);
                }
            }
        };
        e.annotate(ann_matmul);
        for (std::uint64_t r = 0; r < lead - 1 && r < chunks; ++r) load_lhs(r);
        for (std::uint64_t r = 0; r < chunks; ++r) {
            const std::uint64_t rr = std::min<std::uint64_t>(8, rows - r * 8);
            e.annotate(ann_matmul);
            if (r + lead - 1 < chunks) load_lhs(r + lead - 1);
            for (unsigned j = 0; j < bl.lanes.size(); ++j)
                e.matmul(j, acc(j, static_cast<unsigned>(s.block % 2), r), vreg(lhs_reg(r, bl.shared_a ? 0 : j)),
                         static_cast<std::uint32_t>(rr), static_cast<std::uint32_t>(bl.lanes[j].cols),
                         static_cast<std::uint32_t>(depth), p.dtype);
            // With prefetch, the next step's weights come into registers three quarters into
            // this step (its data has landed by then), so that only the pushes are left at the
            // step boundary and they hide behind the queued matmuls.
            if (p.prefetch && !p.late_dma && g + 1 < total_steps && r == (rows / 8) * 3 / 4) {
                load_weights(g + 1);
                weights_loaded = true;
            }
            // One epilogue group every other chunk, once the finished block's last matmuls
            // (still queued when it started) have drained: a pop issued earlier would stall
            // the in-order core and starve the MXUs.
            if (epi && ++epi_chunks > kEpilogueDelayChunks && epi_chunks % 2 == 0 && !epilogue_group())
                finish_epilogue();
        }
        if (s.last_k) {
            if (epi) finish_epilogue();  // before its accumulators are written again
            finished = s.block;
        }
    }
    if (finished != kNoBlock) {
        start_epilogue(finished);
        finish_epilogue();
    }
    e.annotate(ann_wait_c);
    wait_all(kFlagC);
}

}  // namespace xpu::gen
