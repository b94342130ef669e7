// Suggestions: local moves on each stream's dependency graph that respect sync semantics, with
// their saving estimated from the run's own timing.
//
// Estimates. Hoisting the DMAs a stalled wait waits for lets them complete earlier by the time
// between their new and old issue points; the wait then ends at the latest of their new
// completions, less what the hoisted DMAs now queued ahead of cost the DMAs others waited for.
// Sinking a wait lets the instructions it passes run during the wait, and issues those it held
// back earlier: their results (a prefetch's data) arrive earlier for whoever waits on them.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/context.h"
#include "analysis/dependencies.h"
#include "analysis/collective_choice.h"
#include "analysis/double_buffer.h"
#include "analysis/intervals.h"
#include "analysis/merge_dma.h"
#include "analysis/schedule.h"
#include "analysis/split_dma.h"

namespace xpu::analysis {

namespace {

// How far past an instruction the scan for the first reader of its result goes.
constexpr std::uint64_t kScanReaders = 512;

// HBM traffic per chip over time (prefix sums over fine buckets): how much of the bandwidth
// between two moments was left unused, which bounds what issuing a DMA earlier can gain (the
// roofline: data cannot arrive faster than the idle bandwidth before it is needed).
class HbmLoad {
public:
    explicit HbmLoad(const RunData& run) {
        bucket_ = std::max<Tick>(1000, run.end / 100000 + 1);
        const std::size_t n = static_cast<std::size_t>(run.end / bucket_ + 2);
        for (const MemTxn& m : run.mems) {
            const Unit& u = run.units[m.target];
            if (u.role != Role::Hbm) continue;
            Chip& c = chips_[u.chip];
            if (c.bytes.empty()) c.bytes.assign(n + 1, 0.0);
            const Tick b = m.arrival, e = std::max(m.done, m.arrival + 1);
            const double rate = static_cast<double>(m.bytes) / static_cast<double>(e - b);
            for (std::size_t k = static_cast<std::size_t>(b / bucket_); k < n && k * bucket_ < e; ++k) {
                const Tick x = std::max<Tick>(b, k * bucket_), y = std::min<Tick>(e, (k + 1) * bucket_);
                if (y > x) c.bytes[k + 1] += rate * static_cast<double>(y - x);
            }
        }
        for (const Unit& u : run.units)
            if (u.role == Role::Hbm) chips_[u.chip].peak_per_ps += u.peak_gbps / 1000.0;
        for (auto& [chip, c] : chips_)
            for (std::size_t k = 1; k < c.bytes.size(); ++k) c.bytes[k] += c.bytes[k - 1];
    }
    // The shortest time the chip's HBM takes to move `bytes` (at its peak rate); 0 if unknown.
    Tick transfer(int chip, std::uint64_t bytes) const {
        auto it = chips_.find(chip);
        if (it == chips_.end() || it->second.peak_per_ps <= 0) return 0;
        return static_cast<Tick>(static_cast<double>(bytes) / it->second.peak_per_ps);
    }
    // Time in [a, b] the chip's HBM could have spent moving more data; b - a if unknown.
    Tick idle(int chip, Tick a, Tick b) const {
        auto it = chips_.find(chip);
        if (b <= a || it == chips_.end() || it->second.peak_per_ps <= 0 || it->second.bytes.empty()) return b > a ? b - a : 0;
        const Chip& c = it->second;
        auto upto = [&](Tick t) {
            const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(t / bucket_), c.bytes.size() - 2);
            const double f = static_cast<double>(t - std::min<Tick>(t, k * bucket_)) / static_cast<double>(bucket_);
            return c.bytes[k] + std::min(1.0, f) * (c.bytes[k + 1] - c.bytes[k]);
        };
        const double busy = (upto(b) - upto(a)) / c.peak_per_ps;
        const double t = static_cast<double>(b - a) - busy;
        return t > 0 ? static_cast<Tick>(t) : 0;
    }

private:
    struct Chip {
        std::vector<double> bytes;  // prefix sums, bytes up to bucket k
        double peak_per_ps = 0;
    };
    Tick bucket_ = 1000;
    std::map<int, Chip> chips_;
};

// Busy time of each DMA engine (its accounted timeline): a hoisted DMA starts earlier only if
// its engine had idle time between its new issue point and its old start (engines are FIFOs).
class EngineLoad {
public:
    explicit EngineLoad(const Analysis& a) {
        for (const UnitAccount& u : a.units) {
            if (u.role != Role::Dma) continue;
            auto& v = busy_[u.unit];
            for (const Segment& g : u.timeline)
                if (g.cause == Cause::Busy) v.push_back({g.begin, g.end});
        }
    }
    Tick idle(std::uint32_t engine, Tick a, Tick b) const {
        if (b <= a) return 0;
        auto it = busy_.find(engine);
        return b - a - (it == busy_.end() ? 0 : covered(it->second, a, b));
    }

private:
    std::map<std::uint32_t, std::vector<Interval>> busy_;  // the timeline's busy segments: sorted, disjoint
};

// Idle time of any unit (matrix, vector unit) from its accounted timeline, which tiles [0, end]
// sorted: an operation issued earlier starts earlier only into time its unit had free.
class UnitIdle {
public:
    explicit UnitIdle(const Analysis& a) {
        for (const UnitAccount& u : a.units)
            if (u.role != Role::Core) timeline_[u.unit] = &u.timeline;
    }
    Tick idle(std::uint32_t unit, Tick a, Tick b) const {
        if (b <= a) return 0;
        auto it = timeline_.find(unit);
        if (it == timeline_.end()) return b - a;
        const std::vector<Segment>& v = *it->second;
        Tick busy = 0;
        auto k = std::upper_bound(v.begin(), v.end(), a, [](Tick t, const Segment& g) { return t < g.end; });
        for (; k != v.end() && k->begin < b; ++k)
            if (k->cause == Cause::Busy) busy += std::min(b, k->end) - std::max(a, k->begin);
        return b - a - busy;
    }

private:
    std::map<std::uint32_t, const std::vector<Segment>*> timeline_;
};

// Traffic of the inter-chip links over time, and which link each DMA's first hop took.
class LinkLoad {
public:
    explicit LinkLoad(const RunData& run) : run_(run) {
        for (const MemTxn& m : run.mems) {
            if (run.units[m.target].role != Role::Link) continue;
            auto& v = busy_[m.target];
            v.push_back({m.arrival, m.done});
            if (m.stream != kNone) {
                const auto key = (std::uint64_t(m.stream) << 40) | m.index;
                if (!first_link_.count(key)) first_link_[key] = m.target;
            }
        }
        for (auto& [u, v] : busy_) merge_intervals(v);
    }
    // Idle time in [a, b] of the first link the DMA record `dma` used; b - a if none.
    Tick idle(std::uint32_t dma, Tick a, Tick b) const {
        if (b <= a) return 0;
        const Dma& d = run_.dmas[dma];
        auto f = first_link_.find((std::uint64_t(d.stream) << 40) | d.index);
        if (f == first_link_.end()) return b - a;
        return b - a - covered(busy_.at(f->second), a, b);
    }

private:
    const RunData& run_;
    std::map<std::uint32_t, std::vector<Interval>> busy_;
    std::unordered_map<std::uint64_t, std::uint32_t> first_link_;
};

// Per DMA engine, the DMAs in issue order, and how many of those issued in a time window had a
// core waiting for them (cost of moving another DMA ahead of them).
class EngineQueue {
public:
    EngineQueue(const RunData& run, const std::vector<Tick>& caused) {
        for (std::uint32_t i = 0; i < run.dmas.size(); ++i) by_engine_[run.dmas[i].engine].push_back({run.dmas[i].issue, caused[i] > 0});
        for (auto& [e, v] : by_engine_) {
            std::sort(v.begin(), v.end());
            std::vector<std::uint32_t> prefix(v.size() + 1, 0);
            for (std::size_t k = 0; k < v.size(); ++k) prefix[k + 1] = prefix[k] + (v[k].second ? 1 : 0);
            prefix_[e] = std::move(prefix);
        }
    }
    std::uint64_t stalling_between(std::uint32_t engine, Tick a, Tick b) const {
        auto it = by_engine_.find(engine);
        if (it == by_engine_.end() || b <= a) return 0;
        const auto& v = it->second;
        const auto lo = std::lower_bound(v.begin(), v.end(), std::make_pair(a, false)) - v.begin();
        const auto hi = std::lower_bound(v.begin(), v.end(), std::make_pair(b, false)) - v.begin();
        const auto& p = prefix_.at(engine);
        return p[static_cast<std::size_t>(hi)] - p[static_cast<std::size_t>(lo)];
    }

private:
    std::map<std::uint32_t, std::vector<std::pair<Tick, bool>>> by_engine_;
    std::map<std::uint32_t, std::vector<std::uint32_t>> prefix_;
};

// Per chip, the DMAs that move HBM data, in issue order, and how many of those issued in a
// time window on engines other than a given one had a core waiting for them (`caused`): the
// HBM traffic a hoisted DMA would now be queued ahead of.
class ChipQueue {
public:
    ChipQueue(const RunData& run, const std::vector<Tick>& caused) {
        for (std::uint32_t i = 0; i < run.dmas.size(); ++i) {
            const Dma& d = run.dmas[i];
            const Stream& ds = run.streams[d.stream];
            const Instruction& in = ds.code[d.index];
            if (in.mem_src.space != Space::Hbm && in.mem_dst.space != Space::Hbm) continue;
            chip_[ds.chip].add(d.issue, caused[i] > 0);
            engine_[(std::uint64_t(ds.chip) << 32) | d.engine].add(d.issue, caused[i] > 0);
        }
        for (auto& [k, q] : chip_) q.finish();
        for (auto& [k, q] : engine_) q.finish();
    }
    std::uint64_t stalling_between(std::uint16_t chip, std::uint32_t except_engine, Tick a, Tick b) const {
        auto c = chip_.find(chip);
        if (c == chip_.end()) return 0;
        auto e = engine_.find((std::uint64_t(chip) << 32) | except_engine);
        return c->second.count(a, b) - (e == engine_.end() ? 0 : e->second.count(a, b));
    }

private:
    struct Q {
        std::vector<std::pair<Tick, bool>> v;
        std::vector<std::uint32_t> prefix;
        void add(Tick t, bool stalling) { v.push_back({t, stalling}); }
        void finish() {
            std::sort(v.begin(), v.end());
            prefix.assign(v.size() + 1, 0);
            for (std::size_t k = 0; k < v.size(); ++k) prefix[k + 1] = prefix[k] + (v[k].second ? 1 : 0);
        }
        std::uint64_t count(Tick a, Tick b) const {
            if (b <= a) return 0;
            const auto lo = std::lower_bound(v.begin(), v.end(), std::make_pair(a, false)) - v.begin();
            const auto hi = std::lower_bound(v.begin(), v.end(), std::make_pair(b, false)) - v.begin();
            return prefix[static_cast<std::size_t>(hi)] - prefix[static_cast<std::size_t>(lo)];
        }
    };
    std::map<std::uint16_t, Q> chip_;
    std::map<std::uint64_t, Q> engine_;
};

// Suggestions group by the step of an op (the last part of the annotation: wait_data,
// wait_c, ...), so that one suggestion fixes a pattern wherever the compiler emitted it.
std::string step_of(const std::string& ann) {
    const auto p = ann.rfind('/');
    return p == std::string::npos ? ann : ann.substr(p + 1);
}

struct Group {
    Suggestion s;
    std::set<std::string> ops;  // the annotations it covers
    std::map<std::uint32_t, Tick> saving_on;  // per stream: streams run in parallel, so the
                                              // suggestion saves the largest of these, not their sum
    std::set<std::pair<std::uint32_t, std::uint64_t>> moved;
    std::set<std::pair<std::uint32_t, std::uint64_t>> renamed;  // double_buffer: the DMAs whose buffer gets a second one
    std::uint64_t waits = 0, dmas = 0, passed = 0;
    bool remote = false;
    std::set<std::string> dma_anns;
    struct Held {  // a wait holding back independent work, and the first instruction needing it
        std::uint32_t stream;
        std::uint64_t wait, first_use;
    };
    std::vector<Held> held;  // reorder: where to list-schedule
    bool scheduled = false;  // reorder: list-scheduled windows rather than sunk waits
};

// The window list-scheduled for a wait that holds back independent work: from the wait to
// past its first use by as much again (so that the held-back work can spread over the work
// that follows), bounded to keep the quadratic graph cheap.
constexpr std::uint64_t kMaxWindow = 8192;

}  // namespace

void make_suggestions(const Context& cx, Analysis& a, std::size_t max) {
    const RunData& run = cx.run;
    Planner plan(cx);
    // The DMA view's "earliest possible issue": when the instruction at its hoist point issued.
    for (DmaView& v : a.dmas) {
        const std::uint64_t p = plan.hoist_point(v.stream, v.index);
        v.earliest_issue = std::min(v.issue, run.streams[v.stream].life[p].issue);
    }
    const HbmLoad hbm(run);
    const EngineLoad engines(a);
    const LinkLoad links(run);
    const EngineQueue engine_queue(run, cx.dma_caused);
    const UnitIdle unit_idle(a);
    const BufferRenamer renamer(run, plan);
    // The shortest a DMA can take: its bytes at its engine's bandwidth (or a link's, for a
    // remote one) plus the fixed latency the run's fastest DMA showed beyond that.
    double link_gbps = 0;
    for (const Unit& u : run.units)
        if (u.role == Role::Link && u.peak_gbps > 0) link_gbps = link_gbps > 0 ? std::min(link_gbps, u.peak_gbps) : u.peak_gbps;
    auto wire = [&](const Dma& d, bool remote) {
        double gbps = run.units[d.engine].peak_gbps;
        if (remote && link_gbps > 0) gbps = gbps > 0 ? std::min(gbps, link_gbps) : link_gbps;
        return gbps > 0 ? static_cast<Tick>(static_cast<double>(d.bytes) * 1000.0 / gbps) : Tick(0);
    };
    Tick fixed = ~Tick(0);
    for (const Dma& d : run.dmas) {
        const Stream& ds = run.streams[d.stream];
        const Tick w = wire(d, cx.ix.dma_remote(ds.code[d.index], ds.chip));
        fixed = std::min(fixed, d.complete - d.issue - std::min(d.complete - d.issue, w));
    }
    if (fixed == ~Tick(0)) fixed = 0;
    // What sinking (or dropping) wait `w` gains beyond the core's own work it lets run during
    // the wait (the span above): the instructions it held back issue earlier, and so complete
    // earlier for whatever waits on them further down (the DMAs the core issues after the
    // wait: while it waits, it issues no prefetch and the HBM pipeline drains). The wait's
    // stall began at its issue less the stall. Bounds, each holding for one instruction j the
    // wait held back (ready before the wait ended):
    //  - j issues earlier by at most issue_j - max(the stall's beginning, the ready time of
    //    every instruction from the wait to j): the core issues in order, and nothing issues
    //    before its operands are ready; at most the stall (nothing moves by more). The scan
    //    ends at the first instruction the wait did not hold back (ready when the wait ended):
    //    it and all after it issue in order behind it, as before;
    //  - j completes earlier by at most that, and only into idle time: of its DMA engine (a
    //    FIFO) and of its chip's HBM (its first link's, if remote) between its new issue and its
    //    old start, the roofline; of its unit for any other operation;
    //  - it saves at most the time the core later stalled on j's completion: for a DMA, the
    //    core time spent waiting on it (cx.dma_caused); for a unit op, the data-dependency stall
    //    of the first later instruction whose operands j's completion made ready (it became
    //    ready exactly then and reads j's destination, or writes a register j reads).
    // The core runs in order, so the stream gains the largest of these, not their sum.
    auto held_back = [&](const WaitStall& w, std::uint64_t stop) {
        const Stream& st = run.streams[w.stream];
        const Life& lw = st.life[w.index];
        const Tick began = lw.issue - std::min(lw.issue, w.stall);
        const std::uint64_t end = std::min<std::uint64_t>(stop, st.code.size());
        Tick best = 0, floor = began;
        for (std::uint64_t j = w.index + 1; j < end; ++j) {
            const Life& lj = st.life[j];
            if (!lj.seen) break;
            floor = std::max(floor, lj.ready);
            if (floor >= lj.issue) break;  // j no longer waited behind the wait
            const Tick adv = std::min(w.stall, lj.issue - floor), from = lj.issue - adv;
            const Instruction& in = st.code[j];
            Tick gain = 0;
            if (const std::uint32_t di = cx.ix.dma_of(w.stream, j); di != kNone) {
                if (cx.dma_caused[di] == 0) continue;
                const Dma& d = run.dmas[di];
                gain = std::min({adv, cx.dma_caused[di], engines.idle(d.engine, from, d.start)});
                gain = std::min(gain, cx.ix.dma_remote(in, st.chip) ? links.idle(di, from, d.start) : hbm.idle(st.chip, from, d.start));
            } else if (const std::uint32_t oi = cx.ix.op_of(w.stream, j); oi != kNone) {
                const UnitOp& op = run.unit_ops[oi];
                // The first later instruction made ready by j's completion, and its stall on it.
                Tick waited = 0;
                for (std::uint64_t k = j + 1; k < st.code.size() && k < j + kScanReaders; ++k) {
                    const Life& lk = st.life[k];
                    if (!lk.seen || lk.issue > lj.complete + w.stall) break;
                    if (lk.ready != lj.complete) continue;
                    const Instruction& rk = st.code[k];
                    auto reads = [](const Instruction& x, std::uint8_t r) {
                        return (x.has(kSrc0) && x.src[0] == r) || (x.has(kSrc1) && x.src[1] == r) || (x.has(kSrc2) && x.src[2] == r);
                    };
                    if ((in.has(kDst) && reads(rk, in.dst)) || (rk.has(kDst) && reads(in, rk.dst))) {
                        const Tick t0 = std::max(lk.arrival, st.life[k - 1].issue + cx.ix.issue_slot(w.stream));
                        waited = lk.ready > t0 ? lk.ready - t0 : 0;
                        break;
                    }
                }
                gain = std::min({adv, waited, unit_idle.idle(op.unit, from, op.start)});
            }
            best = std::max(best, gain);
        }
        return std::min(best, w.stall);
    };
    // Option 1 for a stalled wait: hoist the DMAs it waits for. `others`: the DMAs some core
    // waited for that no hoist moves (null: not known yet, on the first pass that finds the
    // DMAs hoists move).
    struct Hoist {
        std::uint32_t stream;
        std::uint64_t from, to;
        bool renamed;  // its buffer is to be renamed (double_buffer)
    };
    struct HoistOption {
        Tick saving = 0;
        std::vector<Hoist> hoists;
        std::vector<std::uint32_t> dmas;
        bool remote = false;
        bool renamed = false;  // a DMA moves past its own buffer's readers (double_buffer)
    };
    // Option 1: hoist the DMAs wait `w` waits for. With `rename` (option 3, double_buffer): the
    // same where a DMA's hoist stops at its own buffer's previous readers, with the DMA moved as
    // far as a second buffer would let it (double_buffer.h).
    auto hoist_option = [&](const WaitStall& w, const ChipQueue* others, bool rename) {
        HoistOption o;
        const Stream& st = run.streams[w.stream];
        const Life& lw = st.life[w.index];
        Tick latest_new = lw.ready;
        std::vector<Hoist> hoists;
        Tick cost = 0;  // what the hoisted DMAs take from DMAs their engines would now serve later
        bool any_dma = false, remote = false;
        Tick new_issue = lw.ready;  // the earliest a hoisted local DMA would now issue
        for (const Raiser& r : plan.covered(w.stream, w.index)) {
            if (r.dma == kNone) {
                latest_new = std::max(latest_new, lw.issue);  // a raiser we cannot move: no gain
                continue;
            }
            any_dma = true;
            const Dma& d = run.dmas[r.dma];
            const Stream& rs = run.streams[r.stream];
            if (cx.ix.dma_remote(rs.code[r.index], rs.chip)) remote = true;
            // Issued late, or slowed by contention? A DMA issued at least its shortest duration
            // before the wait began was not late: its wait is bandwidth, and moving it earlier
            // only takes bandwidth from DMAs needed sooner. What a hoist can win is its
            // lead-time deficit.
            const bool is_remote = cx.ix.dma_remote(rs.code[r.index], rs.chip);
            const Tick shortest = fixed + wire(d, is_remote);
            const Tick lead = lw.ready > d.issue ? lw.ready - d.issue : 0;
            const Tick deficit = shortest > lead ? shortest - lead : 0;
            std::uint64_t p = plan.hoist_point(r.stream, r.index);
            bool renamed = false;
            // A second buffer, where the hoist stops at the buffer's readers short of the deficit.
            if (rename && deficit > rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.life[p].issue) &&
                renamer.blocked_by_buffer(r.stream, r.index, p) && renamer.can_rename(r.stream, r.index)) {
                const std::uint64_t q = renamer.renamed_point(r.stream, r.index);
                if (q < p) {
                    p = q;
                    o.renamed = renamed = true;
                }
            }
            Tick gain = p < r.index ? rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.life[p].issue) : 0;
            if (gain) gain = std::min(gain, engines.idle(d.engine, rs.life[p].issue, d.start));
            if (gain) gain = std::min(gain, deficit);
            // A remote DMA's pieces cross links: it can start moving earlier only through link
            // time left idle before its old start.
            if (gain && cx.ix.dma_remote(rs.code[r.index], rs.chip)) gain = std::min(gain, links.idle(r.dma, rs.life[p].issue, d.start));
            latest_new = std::max(latest_new, d.complete - std::min(d.complete, gain));
            if (gain > 0) {
                // Engines are FIFOs: a DMA moved ahead delays, by its own transfer, each DMA
                // issued in between on its engine whose completion someone waited for.
                cost += wire(d, is_remote) * engine_queue.stalling_between(d.engine, rs.life[p].issue, d.issue);
                // The HBM's channels are FIFOs too: a local DMA moved ahead of the HBM
                // traffic of the other engines of its chip delays each such DMA someone
                // waited for (and that no hoist moves with it) by its own bytes at the
                // HBM's peak rate (what it puts in the channels' queues ahead of them; they
                // drain no faster), less the HBM time left idle between its new and old
                // issue (which it may fill without delaying anyone).
                if (others && !is_remote) {
                    const Tick ahead = hbm.transfer(rs.chip, d.bytes);
                    const Tick idle = hbm.idle(rs.chip, rs.life[p].issue, d.issue);
                    if (ahead > idle) cost += (ahead - idle) * others->stalling_between(rs.chip, d.engine, rs.life[p].issue, d.issue);
                }
                hoists.push_back({r.stream, r.index, p, renamed});
                o.dmas.push_back(r.dma);
                if (!cx.ix.dma_remote(rs.code[r.index], rs.chip)) new_issue = std::min(new_issue, rs.life[p].issue);
            }
        }
        Tick hoist_saving = any_dma && !hoists.empty() ? lw.issue - std::min(lw.issue, std::max(latest_new, lw.ready)) : 0;
        // Roofline: a local DMA issued earlier arrives earlier only through HBM bandwidth left
        // idle between its new issue point and the moment the wait began.
        if (new_issue < lw.ready) hoist_saving = std::min(hoist_saving, hbm.idle(st.chip, new_issue, lw.ready));
        hoist_saving -= std::min(hoist_saving, cost);
        o.saving = hoist_saving;
        o.remote = remote;
        o.hoists = std::move(hoists);
        return o;
    };
    // First pass: the DMAs the hoists would move (they keep their order among themselves).
    std::vector<bool> moved_dma(run.dmas.size(), false);
    for (const WaitStall& w : cx.waits)
        for (std::uint32_t d : hoist_option(w, nullptr, false).dmas) moved_dma[d] = true;
    std::vector<Tick> unmoved_caused(cx.dma_caused);
    for (std::size_t d = 0; d < run.dmas.size(); ++d)
        if (moved_dma[d]) unmoved_caused[d] = 0;
    const ChipQueue others(run, unmoved_caused);
    std::map<std::pair<std::string, std::string>, Group> groups;  // (kind, where)
    for (const WaitStall& w : cx.waits) {
        const Stream& st = run.streams[w.stream];
        const Life& lw = st.life[w.index];
        const std::string ann = run.annotation(st.code[w.index]);
        const std::string where = step_of(ann);
        HoistOption h1 = hoist_option(w, &others, false);
        {
            // A second buffer only when it gains more than the plain prefetch does.
            HoistOption db = hoist_option(w, &others, true);
            if (db.renamed && db.saving > h1.saving) h1 = std::move(db);
        }
        const Tick hoist_saving = h1.saving;
        const bool remote = h1.remote;
        const auto& hoists = h1.hoists;
        // Option 2: sink the wait.
        const auto [stop, redundant] = plan.sink_point(w.stream, w.index);
        Tick sink_saving = 0;
        if (stop > w.index + 1) {
            const std::uint64_t last = std::min<std::uint64_t>(stop, st.code.size()) - 1;
            const Tick span = st.life[last].seen ? st.life[last].issue - std::min(st.life[last].issue, lw.issue) : 0;
            sink_saving = std::min(w.stall, span);
            sink_saving = std::max(sink_saving, held_back(w, stop));
        }
        if (hoist_saving == 0 && sink_saving == 0) continue;
        if (hoist_saving >= sink_saving) {
            const std::string kind = remote ? "pipeline_collective" : h1.renamed ? "double_buffer" : "hoist_dma";
            Group& g = groups[{kind, where}];
            g.s.kind = kind;
            g.s.where = where;
            g.saving_on[w.stream] += hoist_saving;
            g.ops.insert(ann);
            g.remote = remote;
            ++g.waits;
            for (const Hoist& h : hoists) {
                if (h.renamed) g.renamed.insert({h.stream, h.from});
                if (g.moved.insert({h.stream, h.from}).second) {
                    g.s.moves.push_back({h.stream, h.from, h.to});
                    ++g.dmas;
                    g.passed += h.from - h.to;
                    g.dma_anns.insert(run.annotation(run.streams[h.stream].code[h.from]));
                }
            }
        } else {
            bool stores = true;
            for (const Raiser& r : plan.covered(w.stream, w.index))
                if (r.dma == kNone || run.streams[r.stream].code[r.index].mem_dst.space != Space::Hbm) stores = false;
            const std::string kind = redundant && stores ? "drop_wait" : "reorder";
            Group& g = groups[{kind, where}];
            g.s.kind = kind;
            g.s.where = where;
            g.saving_on[w.stream] += sink_saving;
            g.ops.insert(ann);
            ++g.waits;
            if (g.moved.insert({w.stream, w.index}).second) {
                g.s.moves.push_back({w.stream, w.index, redundant ? Move::kDelete : stop});
                if (!redundant) g.passed += stop - w.index - 1;
                if (kind == "reorder") g.held.push_back({w.stream, w.index, stop});
            }
        }
    }
    // Double buffer: rename every other fill of each buffer into a shadow buffer, then hoist the
    // DMAs as far as the renamed program allows (the rules of dependencies.h, on that program).
    for (auto it = groups.begin(); it != groups.end();) {
        Group& g = it->second;
        if (g.s.kind != "double_buffer") {
            ++it;
            continue;
        }
        std::map<std::uint32_t, std::vector<std::uint64_t>> dmas, to_rename;
        for (const Move& m : g.s.moves) dmas[m.stream].push_back(m.from);
        for (const auto& [stream, k] : g.renamed) to_rename[stream].push_back(k);
        bool ok = true;
        std::vector<Move> moves;
        g.passed = 0;
        for (const auto& [stream, list] : dmas) {
            Planner::Edited edited;
            std::string why;
            if (!renamer.rename(stream, to_rename[stream], edited, why)) {
                ok = false;
                break;
            }
            renamer.split_flags(stream, to_rename[stream], edited);
            for (std::uint64_t k : list) {
                const std::uint64_t p = plan.hoist_point(stream, k, edited);
                if (p < k) {
                    moves.push_back({stream, k, p});
                    g.passed += k - p;
                }
            }
            std::vector<std::uint64_t> at;
            for (const auto& [index, in] : edited) at.push_back(index);
            std::sort(at.begin(), at.end());  // the edits in program order (deterministic output)
            for (std::uint64_t index : at) g.s.edits.push_back({stream, index, edited.at(index), {}});
        }
        if (!ok || moves.empty()) {  // cannot rename: no suggestion (the plain hoist was smaller)
            it = groups.erase(it);
            continue;
        }
        g.s.moves = std::move(moves);
        g.dmas = g.s.moves.size();
        ++it;
    }
    // Reorder: list-schedule a window at each wait against the machine model of the run; where
    // the model finds the new order faster, it replaces the plain sinking of the wait, and the
    // model's gain is the estimate.
    WindowScheduler scheduler(cx, plan);
    for (auto& [key, g] : groups) {
        if (g.s.kind != "reorder" || g.held.empty()) continue;
        std::sort(g.held.begin(), g.held.end(), [](const Group::Held& x, const Group::Held& y) {
            return x.stream != y.stream ? x.stream < y.stream : x.wait < y.wait;
        });
        std::vector<Move> moves;
        std::map<std::uint32_t, Tick> saving_on;
        std::uint64_t passed = 0;
        std::map<std::uint32_t, std::uint64_t> scheduled_to;  // per stream, the end of the last window
        for (const Group::Held& h : g.held) {
            if (h.wait < scheduled_to[h.stream]) continue;
            const std::uint64_t end = h.wait + std::min(kMaxWindow, 2 * (h.first_use - h.wait) + 1);
            const WindowSchedule ws = scheduler.schedule(h.stream, h.wait, end);
            if (ws.order.empty() || ws.modelled_after >= ws.modelled_before) continue;
            saving_on[h.stream] += ws.modelled_before - ws.modelled_after;
            const std::uint64_t stop = h.wait + ws.order.size();
            for (std::size_t p = 0; p < ws.order.size(); ++p) {
                moves.push_back({h.stream, ws.order[p], stop, p + 1});
                if (ws.order[p] != h.wait + p) ++passed;
            }
            scheduled_to[h.stream] = stop;
        }
        if (moves.empty()) continue;
        g.s.moves = std::move(moves);
        g.saving_on = std::move(saving_on);
        g.passed = passed;
        g.scheduled = true;
    }
    std::vector<Suggestion> out;
    for (auto& [key, g] : groups) {
        std::ostringstream cause, action;
        for (const auto& [stream, t] : g.saving_on) g.s.estimated_saving = std::max(g.s.estimated_saving, t);
        // Where: the op it applies to, or the step and how many ops share it.
        if (g.ops.size() == 1) g.s.where = *g.ops.begin();
        else g.s.where = "*/" + g.s.where + " (" + std::to_string(g.ops.size()) + " ops)";
        const std::string at = g.s.where.empty() ? "(no annotation)" : g.s.where;
        std::string anns;
        for (const auto& x : g.dma_anns) anns += (anns.empty() ? "" : ", ") + (x.empty() ? std::string("(no annotation)") : x);
        if (g.s.kind == "hoist_dma") {
            cause << g.waits << " sync-flag waits at " << at << " on DMAs issued late (" << anns << ")";
            action << "prefetch: hoist " << g.dmas << " DMAs earlier, each to just after the last instruction it depends on (its buffer is free and its data ready there), "
                   << g.passed << " instruction slots in all";
        } else if (g.s.kind == "double_buffer") {
            cause << g.waits << " sync-flag waits at " << at << " on DMAs that cannot be prefetched: their buffer is still being read (" << anns << ")";
            action << "double-buffer: put every other fill of each buffer in a second buffer in free VMEM (" << g.s.edits.size()
                   << " instructions renamed), then prefetch " << g.dmas << " DMAs into the free buffer, " << g.passed << " instruction slots earlier in all";
        } else if (g.s.kind == "pipeline_collective") {
            cause << g.waits << " waits at " << at << " for pieces sent late by the previous chip (" << anns << "): collective steps serialised";
            action << "pipeline the collective: send each of " << g.dmas << " pieces as soon as its data has arrived";
        } else if (g.s.kind == "drop_wait") {
            cause << g.waits << " waits at " << at << " for write-backs that no later instruction reads before the next wait on the same flag";
            action << "drop the " << g.s.moves.size() << " unnecessary waits (the later wait on the flag still guards the buffer)";
        } else if (g.scheduled) {
            cause << g.waits << " waits at " << at << " hold back independent work that does not need the data waited for";
            action << "reorder: list-schedule the instructions from each wait on (" << g.passed
                   << " instructions change place; dependencies and sync semantics kept), interleaving the held-back work with the work after it";
        } else {
            cause << g.waits << " waits at " << at << " hold back independent work that does not need the data waited for";
            action << "reorder: move each wait down to the first instruction that needs its data (" << g.passed
                   << " independent instructions move above them; waits made redundant by a later one are dropped)";
        }
        g.s.cause = cause.str();
        g.s.action = action.str();
        out.push_back(std::move(g.s));
    }
    // Runs of small DMAs that cost time: one suggestion for all of them (merge_dma.h).
    Suggestion merge = merge_suggestion(cx, plan, [&](int chip, Tick a, Tick b) { return hbm.idle(chip, a, b); });
    if (!merge.edits.empty()) out.push_back(std::move(merge));
    // Large DMAs one engine moves more slowly than the HBM could: split over the engines.
    Suggestion split = split_suggestion(cx, plan, [&](int chip, Tick a, Tick b) { return hbm.idle(chip, a, b); });
    if (!split.edits.empty()) out.push_back(std::move(split));
    // Link directions left idle by the collectives: advice to lower them another way.
    Suggestion algo = collective_algorithm(run);
    if (!algo.kind.empty()) out.push_back(std::move(algo));
    // Below 0.01% of the run (or 10 ns) a saving is noise, not a suggestion.
    const Tick noise = std::max<Tick>(10000, run.end / 10000);
    out.erase(std::remove_if(out.begin(), out.end(), [&](const Suggestion& x) { return x.estimated_saving < noise; }), out.end());
    std::stable_sort(out.begin(), out.end(), [](const Suggestion& x, const Suggestion& y) { return x.estimated_saving > y.estimated_saving; });
    if (out.size() > max) out.resize(max);
    a.suggestions = std::move(out);
}

}  // namespace xpu::analysis
