#include "traces/gen/collective.h"

#include <stdexcept>

namespace xpu::gen {

namespace {

constexpr std::uint16_t kFlagRing0 = 10;  // flags 10..13: receive flags of up to 4 rings

// One ring a chip takes part in, over the data region [base, base + bytes).
struct RingPlan {
    std::vector<unsigned> members;
    unsigned pos = 0;  // this chip's place in members
    int dir = 1;
    std::uint16_t flag = kFlagRing0;
    std::uint64_t base = 0, bytes = 0;
    unsigned n() const { return static_cast<unsigned>(members.size()); }
    unsigned next() const { return members[(pos + n() + dir) % n()]; }
    std::uint64_t shard_bytes() const { return bytes / n(); }
    std::uint64_t shard(std::int64_t i) const {
        std::int64_t m = ((i % static_cast<std::int64_t>(n())) + n()) % n();
        return base + static_cast<std::uint64_t>(m) * shard_bytes();
    }
};

// One ring algorithm pass over every ring in `rings` (interleaved step by step), each shard in
// `chunks` pieces. Step t sends one shard to the next chip, into the same place of its buffer:
//  - reduce-scatter (reduce = true): the running sum of shard pos - t, added into the
//    destination by a reducing DMA (dst += src); after N-1 steps chip pos holds the full sum of
//    shard pos + 1;
//  - all-gather: shard pos + 1 - t, which chip pos holds complete (its own at t = 0, then
//    what arrived at step t - 1).
// Pipelined: a piece moves on as soon as it has arrived; --serial-collective instead finishes
// every step, all pieces, before the next starts.
void ring_pass(Lowering& lo, const std::vector<RingPlan>& rings, unsigned chunks, bool serial, bool reduce,
               const std::string& op) {
    const unsigned n = rings.front().n();
    if (n < 2) return;
    auto piece = [&](const RingPlan& r) { return r.shard_bytes() / chunks; };
    auto send = [&](const RingPlan& r, unsigned t, unsigned k) {
        lo.emitter().annotate(op + "/send");
        const std::int64_t shard = std::int64_t(r.pos) + (reduce ? 0 : 1) - std::int64_t(t);
        const std::uint64_t at = r.shard(shard) + k * piece(r);
        lo.send(at, static_cast<std::uint16_t>(r.next()), at, piece(r), r.flag, reduce);
    };
    auto receive = [&](const RingPlan& r) {
        lo.emitter().annotate(op + "/wait");
        lo.wait_flag(r.flag, lo.expect_arrival(r.flag));
    };
    if (serial) {
        for (unsigned t = 0; t + 1 < n; ++t) {
            for (const auto& r : rings)
                for (unsigned k = 0; k < chunks; ++k) send(r, t, k);
            for (const auto& r : rings)
                for (unsigned k = 0; k < chunks; ++k) receive(r);
        }
        return;
    }
    for (const auto& r : rings)
        for (unsigned k = 0; k < chunks; ++k) send(r, 0, k);
    for (unsigned t = 0; t + 1 < n; ++t)
        for (unsigned k = 0; k < chunks; ++k)
            for (const auto& r : rings) {
                receive(r);
                if (t + 2 < n) send(r, t + 1, k);
            }
}

std::vector<unsigned> iota_ring(unsigned n) {
    std::vector<unsigned> v(n);
    for (unsigned i = 0; i < n; ++i) v[i] = i;
    return v;
}

}  // namespace

void emit_all_reduce(Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes,
                     const std::string& op) {
    RingPlan r;
    r.members = iota_ring(ring.chips);
    r.pos = chip;
    r.base = buf;
    r.bytes = bytes - bytes % (ring.chips * dtype_bytes(lo.config().dtype));  // whole elements per shard
    ring_pass(lo, {r}, 1, false, true, op + "/reduce_scatter");
    ring_pass(lo, {r}, 1, false, false, op + "/all_gather");
}

CollectiveSummary emit_collective(trace::TraceWriter& w, const CollectiveParams& p) {
    const bool torus = p.algo == "torus2d";
    if (p.algo != "ring" && p.algo != "bidir-ring" && !torus)
        throw std::invalid_argument("collective: --algo must be ring, bidir-ring or torus2d");
    if (p.op != "all-gather" && p.op != "reduce-scatter" && p.op != "all-reduce")
        throw std::invalid_argument("collective: --op must be all-gather, reduce-scatter or all-reduce");
    if (p.chips < 2) throw std::invalid_argument("collective: needs at least 2 chips");
    if (torus && p.dims_x * p.dims_y != p.chips)
        throw std::invalid_argument("collective: --dims XxY must multiply to --chips for torus2d");
    const unsigned rings = p.algo == "bidir-ring" ? 2 : 1;
    const std::uint64_t unit = std::uint64_t(p.chips) * rings * std::max(1u, p.chunks) * dtype_bytes(p.tiles.dtype);
    if (!p.bytes || p.bytes % unit)
        throw std::invalid_argument("collective: --bytes must be a multiple of chips x rings x chunks x element size (" +
                                    std::to_string(unit) + ")");
    const unsigned chunks = std::max(1u, p.chunks);
    const std::uint64_t buf = 0;  // per chip HBM: the tensor
    CollectiveSummary sum;
    for (unsigned chip = 0; chip < p.chips; ++chip) {
        Emitter e(w, w.add_stream(static_cast<std::uint16_t>(chip), 0));
        Lowering lo(e, p.tiles);
        const std::string op = p.op + "/" + p.algo;
        auto plan = [&](std::vector<unsigned> members, unsigned pos, int dir, std::uint16_t flag, std::uint64_t base,
                        std::uint64_t bytes) {
            RingPlan r;
            r.members = std::move(members);
            r.pos = pos;
            r.dir = dir;
            r.flag = flag;
            r.base = base;
            r.bytes = bytes;
            return r;
        };
        std::vector<RingPlan> phase1, phase2;
        if (!torus) {
            const std::uint64_t part = p.bytes / rings;
            phase1.push_back(plan(iota_ring(p.chips), chip, 1, kFlagRing0, buf, part));
            if (rings == 2) phase1.push_back(plan(iota_ring(p.chips), chip, -1, kFlagRing0 + 1, buf + part, part));
        } else {
            const unsigned x = chip % p.dims_x, y = chip / p.dims_x;
            std::vector<unsigned> row, col;
            for (unsigned i = 0; i < p.dims_x; ++i) row.push_back(y * p.dims_x + i);
            for (unsigned j = 0; j < p.dims_y; ++j) col.push_back(j * p.dims_x + x);
            phase1.push_back(plan(row, x, 1, kFlagRing0, buf, p.bytes));
            // After the X phase of a reduce-scatter this chip holds shard x + 1 of its row.
            const std::uint64_t sub = p.bytes / p.dims_x;
            phase2.push_back(plan(col, y, 1, kFlagRing0 + 1, buf + ((x + 1) % p.dims_x) * sub, sub));
        }
        const bool rs = p.op != "all-gather", ag = p.op != "reduce-scatter";
        if (rs) {
            ring_pass(lo, phase1, chunks, p.serial, true, op + "/reduce_scatter");
            if (torus) ring_pass(lo, phase2, chunks, p.serial, true, op + "/reduce_scatter_y");
        }
        if (ag) {
            if (torus) ring_pass(lo, phase2, chunks, p.serial, false, op + "/all_gather_y");
            ring_pass(lo, phase1, chunks, p.serial, false, op + "/all_gather");
        }
        e.halt();
        sum.instructions += e.instructions();
        sum.remote_bytes += e.dma_bytes_remote();
    }
    return sum;
}

}  // namespace xpu::gen
