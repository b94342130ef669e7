#include "traces/gen/collective.h"

#include <stdexcept>

namespace xpu::gen {

namespace {

constexpr std::uint16_t kFlagRing0 = 10;  // flags 10..15: receive flags of up to 6 rings (3 dims x 2 directions)

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
        // Going `dir` around the ring: step t sends shard pos - dir t of a reduce-scatter (it ends
        // holding shard pos + dir complete), shard pos + dir - dir t of an all-gather.
        const std::int64_t shard = std::int64_t(r.pos) + r.dir * ((reduce ? 0 : 1) - std::int64_t(t));
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

// The direct lowering: every chip exchanges with every other chip at once (the interconnect routes
// each DMA: at most N/2 hops on a ring), shard i being chip i's. Reduce-scatter: each chip adds
// every other chip's shard into that chip (reducing DMAs), and waits for the N - 1 contributions to
// its own; all-gather: each chip sends its shard to every other chip, and waits for the N - 1
// others. The other chips in the order nearest first around the ring (next, previous, two on...);
// each shard in `chunks` pieces. Two rounds of the farthest chip's latency, where a ring takes
// 2 (N - 1) steps of one hop: the lowering for small tensors (a decode's activations), where a
// step is the link's latency rather than its bandwidth.
void direct_pass(Lowering& lo, unsigned chips, unsigned chip, std::uint64_t buf, std::uint64_t shard, unsigned chunks,
                 bool reduce, std::uint16_t flag, const std::string& op) {
    std::vector<unsigned> others;
    for (unsigned d = 1; others.size() + 1 < chips; ++d) {
        others.push_back((chip + d) % chips);
        if (others.size() + 1 < chips) others.push_back((chip + chips - d) % chips);
    }
    const std::uint64_t piece = shard / chunks;
    lo.emitter().annotate(op + "/send");
    for (unsigned d : others)
        for (unsigned k = 0; k < chunks; ++k) {
            const std::uint64_t at = buf + (reduce ? d : chip) * shard + k * piece;
            lo.send(at, static_cast<std::uint16_t>(d), at, piece, flag, reduce);
        }
    lo.emitter().annotate(op + "/wait");
    std::int64_t count = 0;
    for (unsigned i = 0; i + 1 < chips; ++i)
        for (unsigned k = 0; k < chunks; ++k) count = lo.expect_arrival(flag);
    lo.wait_flag(flag, count);
}

std::vector<unsigned> iota_ring(unsigned n) {
    std::vector<unsigned> v(n);
    for (unsigned i = 0; i < n; ++i) v[i] = i;
    return v;
}

}  // namespace

namespace {

// Chip `chip`'s place in a ring over all the chips, on `bytes` of the buffer at `buf`.
RingPlan whole_ring(const Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes) {
    RingPlan r;
    r.members = iota_ring(ring.chips);
    r.pos = chip;
    r.base = buf;
    r.bytes = bytes - bytes % (ring.chips * dtype_bytes(lo.config().dtype));  // whole elements per shard
    return r;
}

}  // namespace

void emit_all_reduce(Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes,
                     const std::string& op) {
    const RingPlan r = whole_ring(lo, ring, chip, buf, bytes);
    if (ring.direct && ring.chips > 1) {
        direct_pass(lo, ring.chips, chip, r.base, r.shard_bytes(), 1, true, kFlagRing0, op + "/reduce_scatter");
        direct_pass(lo, ring.chips, chip, r.base, r.shard_bytes(), 1, false, kFlagRing0 + 1, op + "/all_gather");
        return;
    }
    ring_pass(lo, {r}, 1, false, true, op + "/reduce_scatter");
    ring_pass(lo, {r}, 1, false, false, op + "/all_gather");
}

void emit_all_gather(Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes,
                     const std::string& op) {
    ring_pass(lo, {whole_ring(lo, ring, chip, buf, bytes)}, 1, false, false, op);
}

namespace {

bool is_torus(const std::string& algo) {
    return algo == "torus2d" || algo == "torus3d" || algo == "bidir-torus2d" || algo == "bidir-torus3d";
}

}  // namespace

std::vector<unsigned> CollectiveParams::torus_dims() const {
    std::vector<unsigned> d{dims_x, dims_y};
    if (algo == "torus3d" || algo == "bidir-torus3d") d.push_back(dims_z);
    return d;
}

void CollectiveParams::set_torus_dims(const std::vector<unsigned>& d) {
    dims_x = d.size() > 0 ? d[0] : 0;
    dims_y = d.size() > 1 ? d[1] : 0;
    dims_z = d.size() > 2 ? d[2] : 0;
}

CollectiveSummary emit_collective(trace::TraceWriter& w, const CollectiveParams& p) {
    const bool torus = is_torus(p.algo);
    const bool bidir = p.algo == "bidir-ring" || p.algo == "bidir-torus2d" || p.algo == "bidir-torus3d";
    const bool direct = p.algo == "direct";
    if (p.algo != "ring" && p.algo != "bidir-ring" && !torus && !direct)
        throw std::invalid_argument(
            "collective: --algo must be ring, bidir-ring, torus2d, torus3d, bidir-torus2d, bidir-torus3d or direct");
    if (p.op != "all-gather" && p.op != "reduce-scatter" && p.op != "all-reduce")
        throw std::invalid_argument("collective: --op must be all-gather, reduce-scatter or all-reduce");
    if (p.chips < 2) throw std::invalid_argument("collective: needs at least 2 chips");
    if (direct && p.serial)
        throw std::invalid_argument("collective: --serial-collective plants a ring's steps finished one by one; --algo direct has no steps");
    const std::vector<unsigned> dims = torus ? p.torus_dims() : std::vector<unsigned>{p.chips};
    {
        std::uint64_t product = 1;
        for (unsigned d : dims) product *= d;
        if (torus && product != p.chips)
            throw std::invalid_argument(std::string("collective: --dims ") + (dims.size() == 3 ? "XxYxZ" : "XxY") +
                                        " must multiply to --chips for " + p.algo);
    }
    const unsigned rings = bidir ? 2 : 1;
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
        if (direct) {  // one exchange per phase, a flag each (an all-gather piece must not pass for a contribution)
            const std::uint64_t shard = p.bytes / p.chips;
            if (p.op != "all-gather")
                direct_pass(lo, p.chips, chip, buf, shard, chunks, true, kFlagRing0, op + "/reduce_scatter");
            if (p.op != "reduce-scatter")
                direct_pass(lo, p.chips, chip, buf, shard, chunks, false, kFlagRing0 + 1, op + "/all_gather");
            e.halt();
            sum.instructions += e.instructions();
            sum.remote_bytes += e.dma_bytes_remote();
            continue;
        }
        // One phase per dimension (a ring: one dimension, every chip). In each phase this chip
        // takes part in one ring per direction used (bidir: + on the first half of the data, -
        // on the second), each over the block it holds after the previous phases' reduce-scatter:
        // a ring of n members leaves shard pos + dir of its block at pos (ring_pass).
        std::vector<unsigned> coord;
        {
            unsigned rest = chip;
            for (unsigned d : dims) {
                coord.push_back(rest % d);
                rest /= d;
            }
        }
        std::vector<std::vector<RingPlan>> phases(dims.size());
        for (unsigned half = 0; half < rings; ++half) {
            const int dir = half == 0 ? 1 : -1;
            std::uint64_t base = buf + half * (p.bytes / rings), bytes = p.bytes / rings;
            for (std::size_t d = 0; d < dims.size(); ++d) {
                RingPlan r;
                unsigned stride = 1;
                for (std::size_t k = 0; k < d; ++k) stride *= dims[k];
                for (unsigned i = 0; i < dims[d]; ++i) r.members.push_back(chip + (i - coord[d]) * stride);
                r.pos = coord[d];
                r.dir = dir;
                r.flag = static_cast<std::uint16_t>(kFlagRing0 + d * rings + half);
                r.base = base;
                r.bytes = bytes;
                phases[d].push_back(r);
                const std::uint64_t sub = bytes / dims[d];
                base += ((coord[d] + dims[d] + dir) % dims[d]) * sub;
                bytes = sub;
            }
        }
        const std::vector<std::string> axis{"", "_y", "_z"};
        const bool rs = p.op != "all-gather", ag = p.op != "reduce-scatter";
        if (rs)
            for (std::size_t d = 0; d < dims.size(); ++d)
                ring_pass(lo, phases[d], chunks, p.serial, true, op + "/reduce_scatter" + axis[d]);
        if (ag)
            for (std::size_t d = dims.size(); d-- > 0;)
                ring_pass(lo, phases[d], chunks, p.serial, false, op + "/all_gather" + axis[d]);
        e.halt();
        sum.instructions += e.instructions();
        sum.remote_bytes += e.dma_bytes_remote();
    }
    return sum;
}

}  // namespace xpu::gen
