#include "analysis/schedule.h"

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_map>

#include "analysis/bounds.h"
#include "analysis/wait_index.h"

namespace xpu::analysis {
namespace {

enum class Kind : std::uint8_t { Scalar, Unit, Dma, Wait };

// What the run measured of one instruction, independent of where it issues.
struct Cost {
    Kind kind = Kind::Scalar;
    std::uint32_t unit = kNone;
    std::uint8_t pipe = 0;
    bool matrix = false;
    Tick occupancy = 0;  // unit instructions: start to end (the pipeline is taken)
    Tick latency = 0;    // unit instructions: end to complete; others: issue to complete
    Tick hbm_time = 0;   // DMAs: the time its bytes take through this chip's HBM at peak
};

// When an instruction issues (leaves the core), starts on its unit, has its operands read, and
// completes.
struct Outcome {
    Tick issue = 0, start = 0, end = 0, complete = 0, operands_read = 0;
};

// The units' in-order pipelines (models/matrix_unit.cpp, models/vector_unit.cpp).
std::uint8_t pipe_of(Opcode op) {
    switch (op) {
        case Opcode::MPush: return 0;
        case Opcode::MatMul: return 1;
        case Opcode::MPop: return 2;
        case Opcode::VAlu: return 0;
        case Opcode::VTrans: return 1;
        case Opcode::VReduce:
        case Opcode::VPermute: return 2;
        default: return 3;  // vld, vst
    }
}

template <typename F>
void for_each_reg_read(const Instruction& in, F f) {
    if (in.has(kSrc0)) f(in.src[0]);
    if (in.has(kSrc1)) f(in.src[1]);
    if (in.has(kSrc2)) f(in.src[2]);
}

// A DMA that raises a flag of this chip (a remote DMA raises it on its destination chip).
bool raises_local_flag(const Instruction& in, std::uint16_t chip) {
    return in.op == Opcode::Dma && in.has(kFlag) && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == chip);
}

// The machine state the schedule is timed against (see schedule.h).
struct Model {
    struct UnitState {
        std::vector<Tick> ring;  // starts of the last `depth` accepted instructions
        std::size_t pos = 0;
        std::array<Tick, 4> pipe_free{};
        Tick weights_ready = 0, shadow_free = 0;
        bool weights_used = true;
    };
    Tick slot = 1;
    Tick cur = 0;  // the earliest the next instruction can issue
    std::array<Tick, kNumRegs> reg_ready{}, read_until{};
    std::unordered_map<std::uint32_t, UnitState> units;
    Tick finish = 0;  // latest issue or completion so far
    // This chip's HBM as one server at its peak bandwidth, DMAs served in issue order: a DMA
    // completes no earlier than the HBM can have moved its bytes after those issued before it.
    // Without it a DMA moved earlier would complete as long after its new issue as it took in
    // the run, which on a run near its HBM bound promised savings the bandwidth cannot give
    // (measured: a reorder on a llama2-7b decode layer estimated 27 us, replayed 6 us).
    Tick hbm_free = 0;

    Outcome evaluate(const Instruction& in, const Cost& c, Tick flag_ready) const {
        Tick ready = cur;
        for_each_reg_read(in, [&](std::uint8_t r) { ready = std::max(ready, reg_ready[r]); });
        if (in.has(kDst)) ready = std::max(ready, read_until[in.dst]);
        Outcome o;
        o.issue = ready;
        switch (c.kind) {
            case Kind::Wait: o.issue = std::max(ready, flag_ready); break;
            case Kind::Unit: {
                const UnitState& u = units.at(c.unit);
                const Tick accept = std::max(ready, u.ring[u.pos]);
                Tick start = std::max(accept, u.pipe_free[c.pipe]);
                if (c.matrix && in.op == Opcode::MatMul) start = std::max(start, u.weights_ready);
                if (c.matrix && in.op == Opcode::MPush) start = std::max(start, u.shadow_free);
                o.issue = accept;
                o.start = start;
                o.end = start + c.occupancy;
                o.complete = o.end + c.latency;
                o.operands_read = o.end;
                return o;
            }
            default: break;
        }
        o.start = o.end = o.operands_read = o.issue;
        o.complete = o.issue + c.latency;
        if (c.kind == Kind::Dma && c.hbm_time) o.complete = std::max(o.complete, std::max(hbm_free, o.issue) + c.hbm_time);
        return o;
    }

    void apply(const Instruction& in, const Cost& c, const Outcome& o) {
        cur = std::max(cur, o.issue + slot);
        if (c.kind == Kind::Dma && c.hbm_time) hbm_free = std::max(hbm_free, o.issue) + c.hbm_time;
        if (in.has(kDst)) reg_ready[in.dst] = std::max(reg_ready[in.dst], o.complete);
        for_each_reg_read(in, [&](std::uint8_t r) { read_until[r] = std::max(read_until[r], o.operands_read); });
        if (c.kind == Kind::Unit) {
            UnitState& u = units.at(c.unit);
            u.ring[u.pos] = o.start;
            u.pos = (u.pos + 1) % u.ring.size();
            u.pipe_free[c.pipe] = std::max(u.pipe_free[c.pipe], o.end);
            if (c.matrix && in.op == Opcode::MPush) {
                u.weights_ready = u.shadow_free = o.end;
                u.weights_used = false;
            } else if (c.matrix && in.op == Opcode::MatMul && !u.weights_used) {
                u.shadow_free = std::max(u.shadow_free, o.start);
                u.weights_used = true;
            }
        }
        finish = std::max(finish, std::max(o.issue, o.complete));
    }
};

// What the run measured of stream s's instructions: each one's cost, and its outcome.
class Measured {
public:
    Measured(const Context& cx, std::uint32_t s) : cx_(cx), run_(cx.run), s_(s), st_(cx.run.streams[s]) {}

    // False if instruction i's unit operation is not in the log.
    bool cost_of(std::uint64_t i, Cost& c) const {
        const Instruction& in = st_.code[i];
        const Life& l = st_.life[i];
        c = Cost{};
        switch (unit_kind(in.op)) {
            case UnitKind::Vector:
            case UnitKind::Matrix: {
                const std::uint32_t op = cx_.ix.op_of(s_, i);
                if (op == kNone) return false;
                const UnitOp& u = run_.unit_ops[op];
                c.kind = Kind::Unit;
                c.unit = u.unit;
                c.pipe = pipe_of(in.op);
                c.matrix = unit_kind(in.op) == UnitKind::Matrix;
                c.occupancy = u.end - u.start;
                c.latency = run_.op_complete(op) - u.end;
                return true;
            }
            case UnitKind::Dma: {
                const std::uint32_t d = cx_.ix.dma_of(s_, i);
                c.kind = Kind::Dma;
                c.latency = d == kNone ? l.complete - l.issue : run_.dmas[d].complete - std::min(run_.dmas[d].complete, l.issue);
                c.hbm_time = hbm_time(in);
                return true;
            }
            case UnitKind::Sync: c.kind = in.op == Opcode::SWait || in.op == Opcode::Barrier ? Kind::Wait : Kind::Scalar; break;
            default: break;
        }
        c.latency = l.complete - std::min(l.complete, l.issue);
        return true;
    }

    Outcome outcome(std::uint64_t i, const Cost& c) const {
        const Life& l = st_.life[i];
        Outcome o;
        o.issue = l.issue;
        o.complete = l.complete;
        o.start = o.end = o.operands_read = l.issue;
        if (c.kind == Kind::Unit) {
            const std::uint32_t op = cx_.ix.op_of(s_, i);
            const UnitOp& u = run_.unit_ops[op];
            o.start = u.start;
            o.end = o.operands_read = u.end;
            o.complete = run_.op_complete(op);
        } else if (c.kind == Kind::Dma) {
            o.complete = l.issue + c.latency;
        }
        return o;
    }

    Tick complete(std::uint64_t i) const {
        Cost c;
        cost_of(i, c);
        return outcome(i, c).complete;
    }

private:
    const Context& cx_;
    const RunData& run_;
    std::uint32_t s_;
    const Stream& st_;
    double ps_per_byte_ = hbm_ps_per_byte(cx_.run, cx_.run.streams[s_].chip);

    // The time DMA `in` occupies this chip's HBM at peak: its bytes read there plus its bytes
    // written there (a DMA between VMEM and another chip touches it once or not at all).
    Tick hbm_time(const Instruction& in) const {
        if (ps_per_byte_ <= 0 || !in.has(kBytes)) return 0;
        const bool src = in.mem_src.space == Space::Hbm && (in.mem_src.chip == kLocalChip || in.mem_src.chip == st_.chip);
        const bool dst = in.mem_dst.space == Space::Hbm && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st_.chip);
        return static_cast<Tick>(static_cast<double>(in.bytes) * ((src ? 1 : 0) + (dst ? 1 : 0)) * ps_per_byte_);
    }
};

// A unit's state in the model, its queue as deep as the run showed.
void ensure_unit(Model& m, const std::vector<unsigned>& queue_depth, std::uint32_t u) {
    auto& x = m.units[u];
    if (x.ring.empty()) x.ring.assign(std::max(1u, queue_depth[u]), 0);
}

// The machine state at `begin`, from the run's history [warm, begin).
Model warm_model(const Measured& ms, const Context& cx, std::uint32_t s, const std::vector<unsigned>& queue_depth,
                 std::uint64_t warm, std::uint64_t begin) {
    const Stream& st = cx.run.streams[s];
    Model base;
    base.slot = std::max<Tick>(1, cx.ix.issue_slot(s));
    for (std::uint64_t i = warm; i < begin; ++i) {
        Cost c;
        if (!ms.cost_of(i, c)) continue;
        if (c.kind == Kind::Unit) ensure_unit(base, queue_depth, c.unit);
        base.apply(st.code[i], c, ms.outcome(i, c));
    }
    return base;
}

// The window's dependency graph (schedule.h): edges go forward, from an instruction to one that
// must stay after it. Compressed rows: instruction k's edges are to[first[k] .. first[k + 1]),
// in the order they were found (three arrays per window, not two per instruction: the vectors
// per instruction were a fifth of the scheduler's time on a decode, mostly malloc and free).
struct Graph {
    std::vector<std::uint32_t> first, to;
    // Per edge: true where the later instruction needs the earlier one complete (a register
    // read after its write, a wait after a DMA it covers); the others (write after write or
    // read, memory, sync order) only keep the issue order, as the model times them.
    std::vector<std::uint8_t> data;
    std::vector<std::uint32_t> indeg;
    std::size_t size() const { return indeg.size(); }
};

class GraphBuilder {
public:
    GraphBuilder(const Context& cx, const Planner& plan, std::uint32_t s, std::uint64_t begin, std::size_t n, bool all_pairs)
        : all_pairs_(all_pairs), run_(cx.run), plan_(plan), s_(s), st_(cx.run.streams[s]), begin_(begin), n_(n), blocks_(plan, s, begin, waits_in(st_, begin, n)) {
        g_.indeg.assign(n, 0);
        last_target_.assign(n, n);
        last_edge_.assign(n, 0);
        writer_.fill(-1);
        for (std::uint32_t o = 0; o < run_.streams.size(); ++o)
            if (o != s && run_.streams[o].chip == st_.chip) shared_chip_ = true;
    }

    Graph build() {
        if (!all_pairs_) find_written_pages();
        for (std::size_t k = 0; k < n_; ++k) {
            const Instruction& in = st_.code[begin_ + k];
            if (is_barrier_like(in.op)) {
                fence(k);
                continue;
            }
            if (fence_ >= 0) edge(static_cast<std::size_t>(fence_), k);
            registers(k, in);
            weights(k, in);
            Access acc[2];
            const int na = accesses(in, st_, acc);
            memory(k, acc, na);
            if (in.op == Opcode::SWait) wait(k, in);
            else after_waits(k, in, acc, na);
        }
        // The edges by source (a counting sort, stable: each source's edges stay in the order found).
        g_.first.assign(n_ + 1, 0);
        for (std::uint32_t a : from_) ++g_.first[a + 1];
        for (std::size_t k = 0; k < n_; ++k) g_.first[k + 1] += g_.first[k];
        g_.to.resize(from_.size());
        g_.data.resize(from_.size());
        std::vector<std::uint32_t> at(g_.first.begin(), g_.first.end() - 1);
        for (std::size_t e = 0; e < from_.size(); ++e) {
            const std::uint32_t x = at[from_[e]]++;
            g_.to[x] = to_[e];
            g_.data[x] = data_[e];
        }
        return std::move(g_);
    }

private:
    struct Touch {
        Access a;
        std::uint32_t k;
    };
    bool all_pairs_;          // WindowScheduler::MemoryEdges::AllPairs
    std::vector<Touch> all_;  // ... its accesses so far
    const RunData& run_;
    const Planner& plan_;
    std::uint32_t s_;
    const Stream& st_;
    std::uint64_t begin_;
    std::size_t n_;
    Graph g_;
    std::vector<std::size_t> last_target_;  // per instruction, the last one an edge from it went to (n: none)
    std::vector<std::size_t> last_edge_;    // ... and that edge's place in from_
    std::vector<std::uint32_t> from_, to_;  // the edges in the order found (build() sorts them by source)
    std::vector<std::uint8_t> data_;
    std::array<std::int64_t, kNumRegs> writer_;
    std::array<std::vector<std::uint32_t>, kNumRegs> readers_;
    // Per matrix unit (an instruction's `unit`: 8 bits), its last push and the matmuls since.
    std::unordered_map<std::uint8_t, std::pair<std::int64_t, std::vector<std::uint32_t>>> weights_;
    // Accesses by 4 KiB page, so that an access is compared only with those that share a page.
    // Only pages some write of the window touches hold any (for_each_page), so they are numbered
    // densely from written_; each page's reads and writes are lists threaded through one pool.
    static constexpr std::uint32_t kEnd = ~std::uint32_t{0};
    struct Node {
        Touch t;
        std::uint32_t next;
    };
    struct PageTouches {
        std::uint32_t reads = kEnd, writes = kEnd;
    };
    std::vector<PageTouches> touches_;
    std::vector<Node> pool_;
    std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> waits_on_;  // flag -> the swaits on it so far
    WaitBlockIndex blocks_;                                                  // which waits order an access
    std::vector<std::uint32_t> hits_;                                        // after_waits' scratch
    std::unordered_map<std::uint16_t, std::vector<std::uint32_t>> raisers_;  // local flag -> DMAs
    std::int64_t fence_ = -1;                                               // last sset/sadd/barrier/halt
    std::vector<std::uint32_t> shared_raisers_;
    bool shared_chip_ = false;

    // Edges all go to the instruction being added (b), so one per pair is kept by remembering
    // each source's last target. A repeated edge would change neither the heights (a maximum)
    // nor when an instruction becomes ready (its last predecessor placed), only the cost: two
    // accesses that share many 4 KiB pages gave one edge per page (3.7 edges in 4 on a decode).
    void edge(std::size_t a, std::size_t b, bool data = false) {
        if (last_target_[a] == b) {
            if (data) data_[last_edge_[a]] = 1;
            return;
        }
        last_target_[a] = b;
        last_edge_[a] = from_.size();
        from_.push_back(static_cast<std::uint32_t>(a));
        to_.push_back(static_cast<std::uint32_t>(b));
        data_.push_back(data);
        ++g_.indeg[b];
    }

    static std::uint64_t page_tag(const Access& a) { return (std::uint64_t(a.space) << 62) | (std::uint64_t(a.chip) << 44); }
    // The pages an access touches: [first, last] (one page for an empty access).
    static std::pair<std::uint64_t, std::uint64_t> page_span(const Access& a) {
        return {a.lo >> 12, a.hi > a.lo ? (a.hi - 1) >> 12 : a.lo >> 12};
    }

    // Calls f(page key, page's first byte) for each page of `a`. A read only on the pages some
    // write of the window touches: a read is compared with writes only, and the reads a page
    // records are compared only with the writes that come to it, so on a page no write of the
    // window touches there is nothing to find (a DMA's source in HBM, read and never written,
    // was most of the pages looked up on a decode).
    template <typename F>
    void for_each_page(const Access& a, F f) {
        const std::uint64_t tag = page_tag(a);
        const auto [first, last] = page_span(a);
        auto it = std::lower_bound(written_.begin(), written_.end(), PageRange{tag, first, first, 0},
                                   [](const PageRange& x, const PageRange& y) { return x.tag != y.tag ? x.tag < y.tag : x.last < y.first; });
        // (a write's pages are all in one range: the ranges are the merged spans of the writes)
        for (; it != written_.end() && it->tag == tag && it->first <= last; ++it)
            for (std::uint64_t p = std::max(first, it->first); p <= std::min(last, it->last); ++p)
                f(touches_[it->index + (p - it->first)], p << 12);
    }

    // The pages the window's writes touch, as disjoint ranges sorted by (tag, first).
    struct PageRange {
        std::uint64_t tag, first, last;
        std::size_t index;  // the dense number of its first page
    };
    std::vector<PageRange> written_;
    void find_written_pages() {
        for (std::size_t k = 0; k < n_; ++k) {
            Access acc[2];
            const int na = accesses(st_.code[begin_ + k], st_, acc);
            for (int x = 0; x < na; ++x)
                if (acc[x].write) {
                    const auto [first, last] = page_span(acc[x]);
                    written_.push_back({page_tag(acc[x]), first, last, 0});
                }
        }
        std::sort(written_.begin(), written_.end(),
                  [](const PageRange& x, const PageRange& y) { return x.tag != y.tag ? x.tag < y.tag : x.first < y.first; });
        std::size_t out = 0;
        for (const PageRange& r : written_) {
            if (out > 0 && written_[out - 1].tag == r.tag && r.first <= written_[out - 1].last + 1)
                written_[out - 1].last = std::max(written_[out - 1].last, r.last);
            else written_[out++] = r;
        }
        written_.resize(out);
        std::size_t pages = 0;
        for (PageRange& r : written_) {
            r.index = pages;
            pages += r.last - r.first + 1;
        }
        touches_.assign(pages, PageTouches{});
    }

    static std::uint16_t flag_of(const Instruction& in) { return in.has(kFlag) ? in.flag : 0; }

    // The positions of the swaits of [begin, begin + n).
    static std::vector<std::uint32_t> waits_in(const Stream& st, std::uint64_t begin, std::size_t n) {
        std::vector<std::uint32_t> w;
        for (std::size_t k = 0; k < n; ++k)
            if (st.code[begin + k].op == Opcode::SWait) w.push_back(static_cast<std::uint32_t>(k));
        return w;
    }

    // Nothing crosses a sset, sadd, barrier or halt.
    void fence(std::size_t k) {
        for (std::size_t j = static_cast<std::size_t>(fence_ + 1); j < k; ++j) edge(j, k);
        if (fence_ >= 0) edge(static_cast<std::size_t>(fence_), k);
        fence_ = static_cast<std::int64_t>(k);
    }

    // Registers: read after write, write after write, write after read.
    void registers(std::size_t k, const Instruction& in) {
        for_each_reg_read(in, [&](std::uint8_t r) {
            if (writer_[r] >= 0) edge(static_cast<std::size_t>(writer_[r]), k, true);
        });
        if (in.has(kDst)) {
            const std::uint8_t r = in.dst;
            if (writer_[r] >= 0) edge(static_cast<std::size_t>(writer_[r]), k);
            for (std::uint32_t j : readers_[r])
                if (j != k) edge(j, k);
            readers_[r].clear();
            writer_[r] = static_cast<std::int64_t>(k);
        }
        for_each_reg_read(in, [&](std::uint8_t r) { readers_[r].push_back(static_cast<std::uint32_t>(k)); });
    }

    // A matrix unit's weights: a matmul uses the tile pushed last before it on its unit
    // (models/matrix_unit.h), state no register names. So a matmul stays after its unit's last
    // push (read after write), and a push after its unit's matmuls since the push before (write
    // after read: they need the old tile) and after that push. Without these edges a window's
    // schedule could move a matmul above the push of its weights, or a push above the matmuls of
    // the tile before: a patched program computing with the wrong weights.
    void weights(std::size_t k, const Instruction& in) {
        if (in.op != Opcode::MPush && in.op != Opcode::MatMul) return;
        auto& [push, matmuls] = weights_.try_emplace(in.unit, -1, std::vector<std::uint32_t>{}).first->second;
        if (push >= 0) edge(static_cast<std::size_t>(push), k, in.op == Opcode::MatMul);
        if (in.op == Opcode::MatMul) {
            matmuls.push_back(static_cast<std::uint32_t>(k));
            return;
        }
        for (std::uint32_t j : matmuls) edge(j, k);
        matmuls.clear();
        push = static_cast<std::int64_t>(k);
    }

    // Memory: overlapping accesses, one a write.
    // A page's reads and writes are kept apart: a read is compared with the writes only (a page
    // read by many instructions of a window made this quadratic in them). A write drops from a
    // page's lists the accesses it conflicts with whose part in the page it covers: a later
    // access that conflicts with one of them there touches a byte the write wrote, so it gets an
    // edge from the write (or from a later write that dropped it in turn), which already follows
    // the dropped one. The graph keeps its transitive closure, and with it the schedule: an
    // instruction becomes ready when all its ancestors are placed, and neither height counts a
    // dropped edge (memory edges are not data edges: through one a height is at least the later
    // instruction's, which the path through the write already gives, costs being non-negative). Without it a page written and read by every
    // step of a window was scanned in full by each (83 M touches compared on a 32-layer decode).
    void memory(std::size_t k, const Access* acc, int na) {
        if (all_pairs_) {
            for (int x = 0; x < na; ++x) {
                for (const Touch& t : all_)
                    if (t.k != k && conflict(&t.a, 1, &acc[x], 1)) edge(t.k, k);
                all_.push_back({acc[x], static_cast<std::uint32_t>(k)});
            }
            return;
        }
        for (int x = 0; x < na; ++x) {
            const Access& a = acc[x];
            for_each_page(a, [&](PageTouches& p, std::uint64_t page_lo) {
                const std::uint64_t page_hi = page_lo + 4096;
                const std::uint64_t a_lo = std::max(a.lo, page_lo), a_hi = std::min(a.hi, page_hi);
                // (No access is empty: a run's DMAs move at least a byte, and a vld or vst counts
                // one at least. An empty one at a page's first byte would overlap an access that
                // starts before the page but not one that starts there.)
                auto check = [&](std::uint32_t& head, bool drop) {
                    for (std::uint32_t* link = &head; *link != kEnd;) {
                        const Touch& t = pool_[*link].t;
                        if (t.k != k && conflict(&t.a, 1, &a, 1)) {
                            edge(t.k, k);
                            if (drop && std::max(t.a.lo, page_lo) >= a_lo && std::min(t.a.hi, page_hi) <= a_hi) {
                                *link = pool_[*link].next;  // dropped
                                continue;
                            }
                        }
                        link = &pool_[*link].next;
                    }
                };
                check(p.writes, a.write);
                if (a.write) check(p.reads, true);
                std::uint32_t& head = a.write ? p.writes : p.reads;
                pool_.push_back({{a, static_cast<std::uint32_t>(k)}, head});
                head = static_cast<std::uint32_t>(pool_.size() - 1);
            });
        }
    }

    // A swait: after the earlier waits on its flag and the window's DMAs that raise it.
    void wait(std::size_t k, const Instruction& in) {
        const std::uint16_t f = flag_of(in);
        std::vector<std::uint32_t>& same_flag = waits_on_[f];
        for (std::uint32_t w : same_flag) edge(w, k);
        auto it = raisers_.find(f);
        if (it != raisers_.end())
            for (std::uint32_t d : it->second) edge(d, k, true);
        same_flag.push_back(static_cast<std::uint32_t>(k));
        // A DMA whose flag another stream may wait for (a remote one, or any when the chip has
        // several cores) stays above every later swait: sunk below a wait that needs that
        // stream's progress, it would deadlock the two.
        for (std::uint32_t d : shared_raisers_) edge(d, k);
    }

    // Anything else: after the waits it may not pass (it raises their flag, or touches what
    // their raisers touch).
    void after_waits(std::size_t k, const Instruction& in, const Access* acc, int na) {
        const bool raises = raises_local_flag(in, st_.chip);
        hits_.clear();
        if (raises) {
            auto it = waits_on_.find(in.flag);
            if (it != waits_on_.end()) hits_ = it->second;
        }
        blocks_.blocking(acc, na, static_cast<std::uint32_t>(k), hits_);
        // one edge from each such wait, in program order (as a scan of the waits would add them)
        std::sort(hits_.begin(), hits_.end());
        hits_.erase(std::unique(hits_.begin(), hits_.end()), hits_.end());
        for (std::uint32_t w : hits_) edge(w, k);
        if (raises) raisers_[in.flag].push_back(static_cast<std::uint32_t>(k));
        if (in.op == Opcode::Dma && (!raises || shared_chip_)) shared_raisers_.push_back(static_cast<std::uint32_t>(k));
    }
};

// Priority: the longest path to the end of the window, through dependencies and through the
// pipeline time queued behind an instruction on its unit, in one of two ways (the scheduler
// tries both, schedule()):
// - `Every`: through every edge an instruction's whole time (occupancy and latency) counts, and
//   the pipeline behind it is every later instruction of its unit's pipeline.
// - `Data`: its latency counts only through the edges whose later instruction needs it complete
//   (as the model times them), and the pipeline behind it only its own opcode's instructions.
//   Through every edge, a matmul accumulating into the register the previous one wrote (it
//   issues behind it without waiting for its ~250 ns drain) added that drain once per matmul:
//   over a window of a 1200x1200x3000 GEMM, an edge block's chain of 370 into each of 4
//   accumulators made every height ~90 us (the window lasts 10 us). And the load/store pipeline
//   in program order put every store of the held-back epilogue "ahead of" the next step's loads
//   that feed the matmuls, so the stores went first and the matrix units waited for their loads
//   behind them (planted --bad-order there: 72.7% of the loss recovered; 86.8% with both).
enum class Through : std::uint8_t { Every, Data };

std::vector<Tick> heights(const Graph& g, const std::vector<Cost>& cost, const std::vector<Opcode>& op, Through through) {
    const std::size_t n = g.size();  // the scheduled part of the window
    std::vector<Tick> height(n, 0);
    std::unordered_map<std::uint64_t, std::uint32_t> next_on_pipe;
    for (std::size_t k = n; k-- > 0;) {
        const Cost& c = cost[k];
        const Tick own = c.occupancy + c.latency;
        Tick h = own;
        for (std::uint32_t e = g.first[k]; e < g.first[k + 1]; ++e) {
            const Tick after = height[g.to[e]];
            h = std::max(h, through == Through::Every || g.data[e] ? own + after : after);
        }
        height[k] = h;
        if (c.kind == Kind::Unit) {
            std::uint64_t key = (std::uint64_t(c.unit) << 16) | (std::uint64_t(c.pipe) << 8);
            if (through == Through::Data) key |= static_cast<std::uint8_t>(op[k]);
            auto it = next_on_pipe.find(key);
            if (it != next_on_pipe.end()) height[k] = std::max(height[k], c.occupancy + height[it->second]);
            next_on_pipe[key] = static_cast<std::uint32_t>(k);
        }
    }
    return height;
}

// The window [begin, end) of stream s as the model times it: each instruction's cost, and the
// completions modelled so far, from which a swait's flag condition holds.
struct Window {
    const Context& cx;
    const Planner& plan;
    std::uint32_t s;
    std::uint64_t begin, end;
    std::vector<Cost> cost;
    std::vector<Tick> done;  // modelled completion of each instruction placed
    std::vector<const std::vector<Raiser>*> covers{};  // per swait, the raises it covers (looked up once)

    // When swait k's flag condition holds: its raisers' completions, modelled for those in the
    // window (placed before it by the graph), measured for the others.
    Tick flag_ready(std::size_t k) const {
        if (cost[k].kind != Kind::Wait) return Tick(0);
        const Stream& st = cx.run.streams[s];
        if (st.code[begin + k].op == Opcode::Barrier) return st.life[begin + k].issue;
        Tick t = 0;
        for (const Raiser& r : *covers[k]) {
            if (r.stream == s && r.index >= begin && r.index < end) t = std::max(t, done[r.index - begin]);
            else if (r.dma != kNone) t = std::max(t, cx.run.dmas[r.dma].complete);
            else t = std::max(t, cx.run.streams[r.stream].life[r.index].complete);
        }
        return t;
    }

    // Places instruction k on model m.
    void place(Model& m, std::size_t k, const Outcome& o) {
        done[k] = o.complete;
        m.apply(cx.run.streams[s].code[begin + k], cost[k], o);
    }
    Outcome evaluate(const Model& m, std::size_t k) const { return m.evaluate(cx.run.streams[s].code[begin + k], cost[k], flag_ready(k)); }
};

// The model's finish of the first n instructions of the window in program order.
Tick modelled_in_order(Window& w, Model m, std::size_t n) {
    std::fill(w.done.begin(), w.done.end(), 0);
    for (std::size_t k = 0; k < n; ++k) w.place(m, k, w.evaluate(m, k));
    return m.finish;
}

// The model's finish of the scheduled part in `order`, then of what follows it in program order
// (the rest of w): an order that ends its window sooner may leave the units and queues in a
// state that costs the instructions after it more.
Tick modelled_with_tail(Window& w, Model m, const std::vector<std::uint64_t>& order) {
    std::fill(w.done.begin(), w.done.end(), 0);
    for (std::uint64_t i : order) w.place(m, i - w.begin, w.evaluate(m, i - w.begin));
    for (std::size_t k = order.size(); k < w.cost.size(); ++k) w.place(m, k, w.evaluate(m, k));
    return m.finish;
}

// Greedy list scheduling (schedule.h): the window's order (empty if the graph had a cycle,
// which cannot happen: edges go forward) and the model's finish of it.
Tick list_schedule(Window& w, Model m, const Graph& g, const std::vector<Tick>& height, std::vector<std::uint64_t>& order) {
    const std::size_t n = g.size();  // the scheduled part of the window
    std::vector<std::uint32_t> indeg = g.indeg;  // predecessors not yet placed (the graph itself is shared by both priorities)
    auto before = [&](std::uint32_t a, std::uint32_t b) { return height[a] != height[b] ? height[a] > height[b] : a < b; };
    // The ready instructions, best first: a sorted array (what a std::set in that order gives,
    // without a node allocated and freed per instruction placed).
    std::vector<std::uint32_t> ready;
    auto make_ready = [&](std::uint32_t k) { ready.insert(std::upper_bound(ready.begin(), ready.end(), k, before), k); };
    for (std::size_t k = 0; k < n; ++k)
        if (indeg[k] == 0) make_ready(static_cast<std::uint32_t>(k));
    std::fill(w.done.begin(), w.done.end(), 0);
    order.reserve(n);
    while (!ready.empty()) {
        std::size_t best = 0;
        Outcome best_o;
        for (std::size_t x = 0; x < ready.size(); ++x) {
            const Outcome o = w.evaluate(m, ready[x]);
            if (x == 0 || o.issue < best_o.issue) {
                best = x;
                best_o = o;
            }
            if (o.issue <= m.cur) break;  // nothing issues earlier than the next slot
        }
        const std::uint32_t k = ready[best];
        ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
        w.place(m, k, best_o);
        order.push_back(w.begin + k);
        for (std::uint32_t e = g.first[k]; e < g.first[k + 1]; ++e)
            if (--indeg[g.to[e]] == 0) make_ready(g.to[e]);
    }
    if (order.size() != n) order.clear();
    return m.finish;
}

}  // namespace

WindowScheduler::WindowScheduler(const Context& cx, const Planner& plan, MemoryEdges memory_edges)
    : cx_(cx), plan_(plan), memory_edges_(memory_edges) {}
WindowScheduler::~WindowScheduler() = default;

// A unit takes instruction k only once instruction k - depth has started (models/unit_command.h
// QueueSlots), so at any instruction's acceptance at most depth - 1 earlier ones are still
// waiting to start: the most the run shows, plus one, is the depth (exact whenever the queue
// filled). Measured on the stream's instructions around the windows scheduled so far (a queue
// that never filled there held nothing back there), so that a clean run pays nothing for it.
void WindowScheduler::measure_queue_depths(std::uint32_t s, std::uint64_t from, std::uint64_t to) {
    const RunData& run = cx_.run;
    if (queue_depth_.empty()) queue_depth_.assign(run.units.size(), 1);
    // Per unit, the starts of the instructions accepted and not yet started: min-heaps, kept
    // between calls (emptied here) so that each window's pass allocates nothing.
    waiting_.resize(run.units.size());
    for (std::vector<Tick>& h : waiting_) h.clear();
    for (std::uint64_t i = from; i < to && i < run.streams[s].code.size(); ++i) {
        const std::uint32_t op = cx_.ix.op_of(s, i);
        if (op == kNone) continue;
        const UnitOp& u = run.unit_ops[op];
        std::vector<Tick>& h = waiting_[u.unit];
        const Tick accept = run.op_accept(op);
        while (!h.empty() && h.front() <= accept) {
            std::pop_heap(h.begin(), h.end(), std::greater<Tick>());
            h.pop_back();
        }
        queue_depth_[u.unit] = std::max<unsigned>(queue_depth_[u.unit], static_cast<unsigned>(h.size() + 1));
        h.push_back(u.start);
        std::push_heap(h.begin(), h.end(), std::greater<Tick>());
    }
}

WindowSchedule WindowScheduler::schedule(std::uint32_t s, std::uint64_t begin, std::uint64_t end) {
    const Stream& st = cx_.run.streams[s];
    WindowSchedule out;
    end = std::min<std::uint64_t>(end, st.code.size());
    if (begin >= end) return out;
    const std::uint64_t warm = begin > 2048 ? begin - 2048 : 0;  // history that sets the machine state
    for (std::uint64_t i = warm; i < end; ++i)
        if (!st.life[i].seen) return out;
    measure_queue_depths(s, warm, end + 2048);
    const Measured ms(cx_, s);
    Model base = warm_model(ms, cx_, s, queue_depth_, warm, begin);
    const std::size_t n = static_cast<std::size_t>(end - begin);
    // The window, and after it as many instructions again (as far as the run saw them and the
    // model can time them), by which two orders are compared.
    std::size_t total = n;
    Cost probe;
    while (total < 2 * n && begin + total < st.code.size() && st.life[begin + total].seen && ms.cost_of(begin + total, probe)) ++total;
    Window w{cx_, plan_, s, begin, begin + total, std::vector<Cost>(total), std::vector<Tick>(total, 0)};
    w.covers.assign(total, nullptr);
    for (std::size_t k = 0; k < total; ++k) {
        if (!ms.cost_of(begin + k, w.cost[k])) return out;
        if (w.cost[k].kind == Kind::Unit) ensure_unit(base, queue_depth_, w.cost[k].unit);
        if (w.cost[k].kind == Kind::Wait) w.covers[k] = &plan_.covered(s, begin + k);
    }
    Graph g = GraphBuilder(cx_, plan_, s, begin, n, memory_edges_ == MemoryEdges::AllPairs).build();
    std::vector<Opcode> ops(n);
    for (std::size_t k = 0; k < n; ++k) ops[k] = st.code[begin + k].op;
    out.modelled_before = modelled_in_order(w, base, n);
    out.start = st.life[begin].issue;
    for (std::uint64_t i = begin; i < end; ++i) out.measured = std::max({out.measured, st.life[i].issue, ms.complete(i)});
    // Each priority; the order kept is the one the model finishes sooner together with the
    // instructions after the window (ties: the first).
    const std::vector<Tick> every = heights(g, w.cost, ops, Through::Every), data = heights(g, w.cost, ops, Through::Data);
    out.modelled_after = list_schedule(w, base, g, every, out.order);
    // Equal heights give the same order (the schedule depends on the graph, the model and the
    // priority alone), and the same order the same finish: the first is kept either way.
    if (data == every) return out;
    std::vector<std::uint64_t> other;
    const Tick by_data = list_schedule(w, base, g, data, other);
    if (!other.empty() && other != out.order &&
        (out.order.empty() || modelled_with_tail(w, base, other) < modelled_with_tail(w, base, out.order))) {
        out.modelled_after = by_data;
        out.order = std::move(other);
    }
    return out;
}

std::vector<std::vector<std::uint32_t>> window_dependencies(const Context& cx, const Planner& plan, std::uint32_t s, std::uint64_t begin,
                                                            std::uint64_t end, WindowScheduler::MemoryEdges memory_edges) {
    end = std::min<std::uint64_t>(end, cx.run.streams[s].code.size());
    if (begin >= end) return {};
    const std::size_t n = static_cast<std::size_t>(end - begin);
    const Graph g = GraphBuilder(cx, plan, s, begin, n, memory_edges == WindowScheduler::MemoryEdges::AllPairs).build();
    std::vector<std::vector<std::uint32_t>> succ(n);
    for (std::size_t k = 0; k < n; ++k) succ[k].assign(g.to.begin() + g.first[k], g.to.begin() + g.first[k + 1]);
    return succ;
}

}  // namespace xpu::analysis
