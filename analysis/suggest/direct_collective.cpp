// direct_collective: all-reduces lowered as rings whose steps are latency, not bandwidth. A ring
// all-reduce on N chips is 2 (N - 1) dependent steps (a reduce-scatter, then an all-gather), each
// a piece sent one hop to the next chip and a wait for the previous chip's piece. When a piece is
// small (a decode's activations: 1 KiB on a link of 50 GB/s is 22 ns on the wire, a hop 500 ns),
// every step costs a hop's latency and the all-reduce costs 2 (N - 1) of them while the links sit
// idle. Lowered as a direct exchange instead, every chip sends each piece straight to the chip
// that reduces it (the interconnect routes it, at most N / 2 hops away on a ring), waits for the
// pieces it reduces, then sends each reduced piece straight to every chip: two rounds of the
// farthest chip's latency.
//
// A reduce-scatter alone (reducing sends only) or an all-gather alone (plain ones) is taken the
// same way, rewritten in one round: a chip owns the pieces it never sends (reduce-scatter) or
// sends in its first step (all-gather), and the direct sends raise the ring's flag as the ring's did.
//
// When (the finding): on every chip taking part, one stream; each all-reduce is a run of its
// program made of remote DMAs and swaits only, on one flag F: first the reduce-scatter's sends
// (reducing: `dtype`), then the all-gather's (plain), every send from HBM to the same address on
// another chip of the group (the buffer's pieces, of the same size), the swaits `ge`; the chips
// have as many all-reduces each, and in the k-th the chip that owns a piece (the one that sends
// it first in the all-gather) owns it alone; F counts these sends alone on every chip
// (FlagCounting: monotone) and each all-reduce's last swait waits for every increment its sends
// bring; a piece takes a link no longer than a hop's latency; N >= 3. Local DMAs inside the run
// (loads that prefetch_ahead or double_buffer_store placed in the ring's steps, to issue while
// the core waits there) may stay in it if they touch none of the collective's pieces and raise
// another flag: each goes after the new code's sends of its phase (the reduce-scatter's or the
// all-gather's), in their order, so that it still issues while the core waits.
//
// The change, per chip and all-reduce: its run of sends and swaits becomes: for each other chip
// (the nearest in the group's order first), a reducing send of each piece that chip owns, raising
// G (a flag no program of the group names); a swait on G for the pieces it owns, from every
// other chip; for each other chip, a plain send of each piece it owns, raising F by as much as
// the ring's sends raised it on that chip in this all-reduce (shared between them); the ring's
// last swait on F. Every later wait on F keeps its meaning (F rises by as much per all-reduce),
// the reduced pieces are sent only once every contribution has landed (the all-gather's sends
// follow the swait on G, which counts the reduce-scatter alone: an early all-gather piece cannot
// pass for one), and each chip ends with every piece reduced from every chip's contribution, as
// the ring left it: destination-side reductions (the trace format's reducing DMA, a
// read-modify-write at the memory) from several chips at once, where the ring had one at a time.
//
// The estimate: per all-reduce, its time from the last chip's entry to the last chip's exit, L,
// over its S waits (a step each) gives a step's time: a send's issue, its data read, a hop, the
// write at the far end, the flag, the wait's wake. The direct exchange takes two rounds, each a
// step with the farthest chip's further hops (N/2 - 1 more: a ring's farthest; on a torus the
// farthest is nearer, so this is low) at the slowest link's latency. Saving
// L - 2 (L / S + (N/2 - 1) hop) (one round for a phase alone), summed over the collectives. An
// estimate: the verification replays it.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/suggest/finder.h"
#include "traces/link_wire.h"

namespace xpu::analysis {

namespace {

// One collective on one chip (an all-reduce, or a reduce-scatter or an all-gather alone):
// instructions [begin, end) of its stream.
struct Segment {
    std::uint64_t begin = 0, end = 0;
    static constexpr std::uint64_t kNo = ~std::uint64_t{0};
    // The templates of the new code: the first reducing send, the first swait, the first plain
    // send, the last swait.
    std::uint64_t rs_send = kNo, rs_wait = kNo, ag_send = kNo, ag_wait = kNo;
    std::vector<std::uint64_t> owned;  // the pieces (addresses) it sends in its all-gather's first step
    std::set<std::uint64_t> pieces;    // every piece it sends
    std::vector<std::uint8_t> engines; // its sends' engines, in order of first use
    // Local DMAs inside it (loads another suggestion placed in its steps), in the reduce-scatter
    // and in the all-gather: each goes after the new code's sends of its phase, in their order.
    std::vector<std::uint64_t> passengers_rs, passengers_ag;
    std::uint64_t waits = 0;
    std::uint64_t bytes = 0;
    bool rs = false, ag = false;  // has a reduce-scatter (reducing sends), an all-gather (plain ones)
    std::size_t all_pieces = 0;   // of the collective, every chip's (owners())
    unsigned rounds() const { return (rs ? 1u : 0u) + (ag ? 1u : 0u); }
};

struct Member {
    std::uint32_t stream = 0;
    std::uint16_t chip = 0;
    std::vector<Segment> segs;
};

class Finder {
public:
    explicit Finder(const SuggestContext& sc) : sc_(sc), run_(sc.run) {}

    // A DMA to another chip (the index's rule: its destination names a chip not its own).
    bool is_send(const Instruction& in, std::uint16_t chip) const { return in.op == Opcode::Dma && sc_.cx.ix.dma_remote(in, chip); }
    // A DMA of the chip's own memories (a load another suggestion placed in a collective's steps,
    // to issue while the core waits there).
    bool is_local_dma(const Instruction& in, std::uint16_t chip) const { return in.op == Opcode::Dma && sc_.cx.ix.dma_local(in, chip); }

    bool find(Suggestion& out) {
        if (!members() || !flag_ok() || !latency_bound() || !owners() || !counts()) return false;
        const Tick saving = estimate();
        if (saving == 0 || (needs_g() && !free_flag())) return false;
        out.kind = "direct_collective";
        out.estimated_saving = saving;
        patch(out);
        texts(out);
        return true;
    }

private:
    const SuggestContext& sc_;
    const RunData& run_;
    std::vector<Member> m_;                    // the group, by chip
    std::uint16_t flag_ = 0, g_ = 0;           // the ring's flag; the reduce-scatter's new one
    bool have_flag_ = false;
    std::size_t n_ = 0, k_ = 0;                // chips, all-reduces each
    std::vector<std::map<std::uint16_t, std::int64_t>> arrive_;  // per all-reduce: chip -> F increments its sends bring
    std::map<std::uint16_t, std::size_t> place_;                 // chip -> its place in m_

    // The runs of remote sends and swaits of every stream; the streams that have any form the group.
    bool members() {
        std::set<std::uint16_t> chips;
        for (std::uint32_t s = 0; s < run_.streams.size(); ++s) {
            const Stream& st = run_.streams[s];
            Member mb{s, st.chip, {}};
            const std::vector<std::uint64_t>& sd = sc_.plan.sync_and_dma(s);
            for (std::size_t i = 0; i < sd.size();) {
                if (!is_send(st.code[sd[i]], st.chip)) {
                    ++i;
                    continue;
                }
                // The run: consecutive in the program, sends and swaits on the first send's flag
                // and local DMAs, to its last swait.
                const std::uint16_t f = st.code[sd[i]].flag;
                std::size_t j = i + 1, last_wait = i;
                while (j < sd.size() && sd[j] == sd[j - 1] + 1) {
                    const Instruction& in = st.code[sd[j]];
                    if (in.op == Opcode::SWait && in.flag == f)
                        last_wait = j;
                    else if (!(is_send(in, st.chip) && in.flag == f) && !is_local_dma(in, st.chip))
                        break;
                    ++j;
                }
                if (last_wait == i) return false;  // sends with no wait after them
                j = last_wait + 1;
                Segment g;
                g.begin = sd[i];
                g.end = sd[j - 1] + 1;
                if (!segment(st, g)) return false;
                mb.segs.push_back(std::move(g));
                i = j;
            }
            if (mb.segs.empty()) continue;
            if (!chips.insert(st.chip).second) return false;  // one stream per chip
            m_.push_back(std::move(mb));
        }
        n_ = m_.size();
        if (n_ < 3) return false;
        k_ = m_[0].segs.size();
        for (std::size_t i = 0; i < n_; ++i) {
            if (m_[i].segs.size() != k_) return false;
            place_[m_[i].chip] = i;
        }
        for (const Member& mb : m_)  // every send stays in the group
            for (const Segment& g : mb.segs)
                for (std::uint64_t j = g.begin; j < g.end; ++j) {
                    const Instruction& in = run_.streams[mb.stream].code[j];
                    if (is_send(in, mb.chip) && !place_.count(in.mem_dst.chip)) return false;
                }
        return true;
    }

    // The shape of one all-reduce: reducing sends, then plain ones, on one flag, swaits `ge` on
    // it; it starts with a send and ends with a swait.
    bool segment(const Stream& st, Segment& g) {
        const Instruction& first = st.code[g.begin];
        const Instruction& last = st.code[g.end - 1];
        if (last.op != Opcode::SWait || !first.has(kFlag)) return false;
        if (!have_flag_) flag_ = first.flag;
        have_flag_ = true;
        if (first.flag != flag_) return false;
        bool gathering = false, stepped = false;
        for (std::uint64_t j = g.begin; j < g.end; ++j) {
            const Instruction& in = st.code[j];
            if (is_local_dma(in, st.chip)) {  // a passenger: kept in its phase (checked below)
                (gathering ? g.passengers_ag : g.passengers_rs).push_back(j);
                continue;
            }
            if (!in.has(kFlag) || in.flag != flag_) return false;
            if (in.op == Opcode::SWait) {
                if (in.cond != Cond::Ge || !in.has(kValue)) return false;
                ++g.waits;
                if (gathering) stepped = true;
                if (!gathering && g.rs_wait == Segment::kNo) g.rs_wait = j;
                g.ag_wait = j;
                continue;
            }
            if (in.mem_src.chip != kLocalChip || in.mem_src.space != Space::Hbm || in.mem_dst.space != Space::Hbm ||
                in.mem_dst.addr != in.mem_src.addr || !in.has(kBytes) || (g.bytes && in.bytes != g.bytes) ||
                (in.has(kValue) && in.value <= 0))
                return false;
            g.bytes = in.bytes;
            const bool reducing = in.has(kDtype);
            if (reducing && gathering) return false;  // the reduce-scatter first
            (reducing ? g.rs : g.ag) = true;
            if (reducing && g.rs_send == Segment::kNo) g.rs_send = j;
            if (!reducing && !gathering) {
                gathering = true;
                g.ag_send = j;
            }
            if (!reducing && !stepped) g.owned.push_back(in.mem_src.addr);
            g.pieces.insert(in.mem_src.addr);
            if (std::find(g.engines.begin(), g.engines.end(), in.unit) == g.engines.end()) g.engines.push_back(in.unit);
        }
        // A reduce-scatter with a wait, then an all-gather; or either alone.
        if (g.rs && g.ag && (g.rs_send != g.begin || g.rs_wait == Segment::kNo || g.rs_wait > g.ag_send)) return false;
        if (!g.ag && g.rs_send != g.begin) return false;
        if (!g.rs && g.ag_send != g.begin) return false;
        std::sort(g.owned.begin(), g.owned.end());
        g.owned.erase(std::unique(g.owned.begin(), g.owned.end()), g.owned.end());
        // A passenger touches none of the collective's pieces and raises another flag.
        const std::uint64_t lo = *g.pieces.begin(), hi = *g.pieces.rbegin() + g.bytes;
        for (const auto* list : {&g.passengers_rs, &g.passengers_ag})
            for (std::uint64_t j : *list) {
                const Instruction& in = st.code[j];
                if (in.has(kFlag) && in.flag == flag_) return false;
                Access acc[2];
                const int na = accesses(in, st, acc);
                for (int a = 0; a < na; ++a)
                    if (acc[a].space == Space::Hbm && acc[a].lo < hi && lo < acc[a].hi) return false;
            }
        return true;
    }

    // F: raised by these sends alone and only waited on `ge` (monotone), on every chip of the group.
    bool flag_ok() {
        for (const Member& mb : m_) {
            if (!sc_.plan.flag_counting(mb.chip, flag_).monotone) return false;
        }
        std::vector<const Member*> of_stream(run_.streams.size(), nullptr);
        for (const Member& x : m_) of_stream[x.stream] = &x;
        for (std::uint32_t s = 0; s < run_.streams.size(); ++s) {
            const Stream& st = run_.streams[s];
            const Member* mb = of_stream[s];
            std::size_t next = 0;
            for (std::uint64_t j : sc_.plan.sync_and_dma(s)) {
                const Instruction& in = st.code[j];
                if (!in.has(kFlag) || in.flag != flag_ || !place_.count(flag_chip(in, st.chip))) continue;
                if (!mb) return false;
                while (next < mb->segs.size() && mb->segs[next].end <= j) ++next;
                if (next == mb->segs.size() || j < mb->segs[next].begin) return false;  // outside an all-reduce
            }
        }
        return true;
    }

    // Each step a hop's latency: a piece on the wire no longer than the hop.
    bool latency_bound() const {
        const std::uint64_t bytes = m_[0].segs[0].bytes;
        bool any = false;
        for (const Unit& u : run_.units) {
            if (u.role != Role::Link || u.peak_gbps <= 0 || u.hop_latency_ps == 0) continue;
            any = true;
            const std::uint64_t wire = u.packet_bytes ? link_wire_bytes(bytes, u.packet_bytes, u.packet_overhead_bytes) : bytes;
            if (static_cast<double>(wire) * 1000.0 / u.peak_gbps > static_cast<double>(u.hop_latency_ps)) return false;
        }
        return any;
    }

    // In each all-reduce, the same pieces on every chip, each owned by one chip.
    // A reduce-scatter alone: a chip owns the pieces it never sends (the ring leaves each chip
    // the sum of one shard, and sends every other).
    bool owners() {
        for (std::size_t k = 0; k < k_; ++k) {
            std::set<std::uint64_t> all, owned;
            for (const Member& mb : m_) all.insert(mb.segs[k].pieces.begin(), mb.segs[k].pieces.end());
            std::size_t count = 0;
            for (Member& mb : m_) {
                Segment& g = mb.segs[k];
                const Segment& g0 = m_[0].segs[k];
                if (g.bytes != g0.bytes || g.rs != g0.rs || g.ag != g0.ag) return false;
                if (!g.ag && g.pieces.size() >= all.size()) return false;  // a reduce-scatter alone keeps one
                g.all_pieces = all.size();
                if (!g.ag)
                    for (std::uint64_t p : all)
                        if (!g.pieces.count(p)) g.owned.push_back(p);
                if (g.owned.empty()) return false;
                for (std::uint64_t p : g.owned) owned.insert(p);
                count += g.owned.size();
            }
            if (count != owned.size() || owned != all) return false;
        }
        return true;
    }

    // What each all-reduce's sends bring each chip on F, and its last wait waits for all of it.
    bool counts() {
        arrive_.assign(k_, {});
        for (std::size_t k = 0; k < k_; ++k)
            for (const Member& mb : m_)
                for (std::uint64_t j = mb.segs[k].begin; j < mb.segs[k].end; ++j) {
                    const Instruction& in = run_.streams[mb.stream].code[j];
                    if (is_send(in, mb.chip)) arrive_[k][in.mem_dst.chip] += flag_increment(in);
                }
        for (const Member& mb : m_) {
            std::int64_t total = 0;
            for (std::size_t k = 0; k < k_; ++k) {
                total += arrive_[k][mb.chip];
                if (run_.streams[mb.stream].code[mb.segs[k].ag_wait].value != total) return false;  // its last wait
                // The direct phase counted on the ring's flag brings it a send per piece it does
                // not own (an all-gather), or per other chip and piece it owns (a reduce-scatter alone).
                if (arrive_[k][mb.chip] < sends_on_flag(mb.segs[k])) return false;
            }
        }
        return true;
    }

    // The direct code's sends that raise the ring's flag on a chip with this segment.
    std::int64_t sends_on_flag(const Segment& g) const {
        return static_cast<std::int64_t>(g.ag ? g.all_pieces - g.owned.size() : (n_ - 1) * g.owned.size());
    }

    Tick estimate() const {
        Tick hop = 0;  // the slowest link's hop
        for (const Unit& u : run_.units)
            if (u.role == Role::Link) hop = std::max(hop, u.hop_latency_ps);
        Tick saving = 0;
        const std::uint64_t far = n_ / 2;  // a ring's farthest chip, in hops
        for (std::size_t k = 0; k < k_; ++k) {
            Tick entry = 0, exit = 0;
            std::uint64_t steps = 0;
            const unsigned rounds = m_[0].segs[k].rounds();
            for (const Member& mb : m_) {
                const Stream& st = run_.streams[mb.stream];
                const Segment& g = mb.segs[k];
                if (!st.life[g.begin].seen || !st.life[g.end - 1].seen) return 0;
                entry = std::max(entry, st.life[g.begin].issue);
                exit = std::max(exit, st.life[g.end - 1].issue);
                steps = std::max(steps, g.waits);
            }
            if (exit <= entry || steps == 0) continue;
            const Tick span = exit - entry;
            const Tick direct = rounds * (span / steps + (far - 1) * hop);
            if (direct < span) saving += span - direct;
        }
        return saving;
    }

    // Only an all-reduce needs G (its two phases counted apart).
    bool needs_g() const {
        for (const Segment& g : m_[0].segs)
            if (g.rs && g.ag) return true;
        return false;
    }

    // G: a flag no instruction names on any chip of the group.
    bool free_flag() {
        std::vector<bool> named;  // by any chip of the group; as many flags as the chip with the fewest
        for (std::size_t i = 0; i < n_; ++i) {
            const std::vector<bool> n = sc_.renamer.named_flags(m_[i].chip);
            if (i == 0 || n.size() < named.size()) named.resize(n.size());
            for (std::size_t f = 0; f < named.size(); ++f) named[f] = (i > 0 && named[f]) || n[f];
        }
        for (std::size_t f = 0; f < named.size(); ++f)
            if (!named[f]) {
                g_ = static_cast<std::uint16_t>(f);
                return true;
            }
        return false;
    }

    // The other chips of the group from `i`: the next, the previous, two on, two back...
    std::vector<std::size_t> others(std::size_t i) const {
        std::vector<std::size_t> o;
        for (std::size_t d = 1; o.size() + 1 < n_; ++d) {
            o.push_back((i + d) % n_);
            if (o.size() + 1 < n_) o.push_back((i + n_ - d) % n_);
        }
        return o;
    }

    void patch(Suggestion& out) {
        std::vector<std::int64_t> on_g(n_, 0);  // per chip, what G has reached
        for (std::size_t k = 0; k < k_; ++k) {
            // Per receiver, the sends that raise F on it in (sender's place, piece) order, and their
            // shares of what F gets: the all-gather's (each other chip's pieces), or with a
            // reduce-scatter alone its sends (each other chip's contribution to its own pieces).
            const bool ag = m_[0].segs[k].ag, both = m_[0].segs[k].rs && ag;
            std::vector<std::map<std::pair<std::size_t, std::uint64_t>, std::int64_t>> share(n_);
            for (std::size_t r = 0; r < n_; ++r) {
                for (std::size_t s = 0; s < n_; ++s)
                    if (s != r)
                        for (std::uint64_t p : m_[ag ? s : r].segs[k].owned) share[r][{s, p}] = 0;
                const std::int64_t total = arrive_[k].at(m_[r].chip);
                const std::int64_t each = total / static_cast<std::int64_t>(share[r].size());
                std::int64_t rest = total % static_cast<std::int64_t>(share[r].size());
                for (auto& [key, v] : share[r]) v = each + (rest-- > 0 ? 1 : 0);
            }
            for (std::size_t i = 0; i < n_; ++i) {
                const Member& mb = m_[i];
                const Stream& st = run_.streams[mb.stream];
                const Segment& g = mb.segs[k];
                std::vector<Instruction> code;
                std::size_t engine = 0;
                auto send = [&](std::uint64_t tmpl, std::size_t to, std::uint64_t piece, std::uint16_t flag, std::int64_t value) {
                    Instruction in = st.code[tmpl];
                    in.unit = g.engines[engine++ % g.engines.size()];
                    in.mem_src.addr = piece;
                    in.mem_dst.chip = m_[to].chip;
                    in.mem_dst.addr = piece;
                    in.flag = flag;
                    in.value = value;
                    in.present = static_cast<std::uint16_t>(in.present & ~kValue);
                    if (value != 1) in.set(kValue);
                    code.push_back(in);
                };
                const std::vector<std::size_t> to = others(i);
                if (g.rs) {
                    for (std::size_t d : to)
                        for (std::uint64_t p : m_[d].segs[k].owned)
                            both ? send(g.rs_send, d, p, g_, 1) : send(g.rs_send, d, p, flag_, share[d].at({i, p}));
                    for (std::uint64_t j : g.passengers_rs) code.push_back(st.code[j]);
                }
                if (both) {  // the reduce-scatter's arrivals, apart from the all-gather's
                    on_g[i] += static_cast<std::int64_t>((n_ - 1) * g.owned.size());
                    Instruction w = st.code[g.rs_wait];
                    w.flag = g_;
                    w.value = on_g[i];
                    code.push_back(w);
                }
                if (ag) {
                    for (std::size_t d : to)
                        for (std::uint64_t p : g.owned) send(g.ag_send, d, p, flag_, share[d].at({i, p}));
                    for (std::uint64_t j : g.passengers_ag) code.push_back(st.code[j]);
                }
                code.push_back(st.code[g.ag_wait]);  // the last wait, whichever phase
                Edit e{mb.stream, g.begin, code.front(), {}};
                e.then.assign(code.begin() + 1, code.end());
                out.edits.push_back(std::move(e));
                for (std::uint64_t j = g.begin + 1; j < g.end; ++j) out.moves.push_back(Move{mb.stream, j, Move::kDelete, 0});
            }
        }
    }

    void texts(Suggestion& out) const {
        std::set<std::string> ops, dma_ops;
        std::uint64_t steps = 0;
        for (const Member& mb : m_)
            for (const Segment& g : mb.segs) {
                const Stream& st = run_.streams[mb.stream];
                steps = std::max(steps, g.waits);
                for (std::uint64_t j = g.begin; j < g.end; ++j)
                    if (!is_local_dma(st.code[j], st.chip)) (st.code[j].op == Opcode::SWait ? ops : dma_ops).insert(run_.annotation(st.code[j]));
            }
        set_places(out, ops, dma_ops);
        const Segment& g = m_[0].segs[0];
        std::size_t all_reduces = 0, gathers = 0, scatters = 0;
        for (const Segment& x : m_[0].segs) ++(x.rs && x.ag ? all_reduces : x.ag ? gathers : scatters);
        const char* what = all_reduces == k_ ? "all-reduce" : gathers == k_ ? "all-gather" : scatters == k_ ? "reduce-scatter" : "collective";
        std::ostringstream cause, action;
        cause << k_ << " " << what << (k_ > 1 ? "s" : "") << " on " << n_ << " chips lowered as rings of up to " << steps
              << " dependent steps, each a piece of " << g.bytes << " bytes sent one hop: the steps are the links' latency, not their bandwidth";
        action << "lower " << (k_ > 1 ? "each" : "it") << " as a direct exchange: ";
        if (needs_g())
            action << "every chip sends each piece straight to the chip that reduces it (reducing writes, counted on flag " << g_
                   << ", which no program names), then each reduced piece straight to every chip: two rounds";
        else if (g.ag)
            action << "every chip sends its pieces straight to every chip: one round";
        else
            action << "every chip sends each piece straight to the chip that reduces it: one round";
        action << " of the farthest chip's latency (estimated with " << n_ / 2 << " hops, a ring's farthest) instead of " << steps
               << " steps";
        out.cause = cause.str();
        out.action = action.str();
    }
};

class DirectCollective : public SuggestionFinder {
public:
    const char* kind() const override { return "direct_collective"; }
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Suggestion s;
        if (Finder(sc).find(s)) out.push_back(std::move(s));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> direct_collective_finder() { return std::make_unique<DirectCollective>(); }

}  // namespace xpu::analysis
