// Suggestions: local moves on each stream's dependency graph that respect sync semantics, with
// their saving estimated from the run's own timing.
//
// Estimates. Hoisting the DMAs a stalled wait waits for lets them complete earlier by the time
// between their new and old issue points; the wait then ends at the latest of their new
// completions. Sinking a wait lets the instructions it passes run during the wait.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/context.h"
#include "analysis/dependencies.h"
#include "analysis/intervals.h"
#include "analysis/merge_dma.h"

namespace xpu::analysis {

namespace {

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
            if (u.kind != "HbmController") continue;
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
            if (u.kind == "HbmController") chips_[u.chip].peak_per_ps += u.peak_gbps / 1000.0;
        for (auto& [chip, c] : chips_)
            for (std::size_t k = 1; k < c.bytes.size(); ++k) c.bytes[k] += c.bytes[k - 1];
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
            if (u.kind != "DmaEngine") continue;
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

// Traffic of the inter-chip links over time, and which link each DMA's first hop took.
class LinkLoad {
public:
    explicit LinkLoad(const RunData& run) : run_(run) {
        for (const MemTxn& m : run.mems) {
            if (run.units[m.target].kind != "IciLink") continue;
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
    std::uint64_t waits = 0, dmas = 0, passed = 0;
    bool remote = false;
    std::set<std::string> dma_anns;
};

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
    // The shortest a DMA can take: its bytes at its engine's bandwidth (or a link's, for a
    // remote one) plus the fixed latency the run's fastest DMA showed beyond that.
    double link_gbps = 0;
    for (const Unit& u : run.units)
        if (u.kind == "IciLink" && u.peak_gbps > 0) link_gbps = link_gbps > 0 ? std::min(link_gbps, u.peak_gbps) : u.peak_gbps;
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
    std::map<std::pair<std::string, std::string>, Group> groups;  // (kind, where)
    for (const WaitStall& w : cx.waits) {
        const Stream& st = run.streams[w.stream];
        const Life& lw = st.life[w.index];
        const std::string ann = run.annotation(st.code[w.index]);
        const std::string where = step_of(ann);
        // Option 1: hoist the DMAs this wait waits for.
        Tick latest_new = lw.ready;
        struct Hoist {
            std::uint32_t stream;
            std::uint64_t from, to;
        };
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
            const std::uint64_t p = plan.hoist_point(r.stream, r.index);
            Tick gain = p < r.index ? rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.life[p].issue) : 0;
            if (gain) gain = std::min(gain, engines.idle(d.engine, rs.life[p].issue, d.start));
            // Issued late, or slowed by contention? A DMA issued at least its shortest duration
            // before the wait began was not late: its wait is bandwidth, and moving it earlier
            // only takes bandwidth from DMAs needed sooner. What a hoist can win is its
            // lead-time deficit.
            const bool is_remote = cx.ix.dma_remote(rs.code[r.index], rs.chip);
            const Tick shortest = fixed + wire(d, is_remote);
            const Tick lead = lw.ready > d.issue ? lw.ready - d.issue : 0;
            if (gain) gain = std::min(gain, shortest > lead ? shortest - lead : 0);
            // A remote DMA's pieces cross links: it can start moving earlier only through link
            // time left idle before its old start.
            if (gain && cx.ix.dma_remote(rs.code[r.index], rs.chip)) gain = std::min(gain, links.idle(r.dma, rs.life[p].issue, d.start));
            latest_new = std::max(latest_new, d.complete - std::min(d.complete, gain));
            if (gain > 0) {
                // Engines are FIFOs: a DMA moved ahead delays, by its own transfer, each DMA
                // issued in between on its engine whose completion someone waited for.
                cost += wire(d, is_remote) * engine_queue.stalling_between(d.engine, rs.life[p].issue, d.issue);
                hoists.push_back({r.stream, r.index, p});
                if (!cx.ix.dma_remote(rs.code[r.index], rs.chip)) new_issue = std::min(new_issue, rs.life[p].issue);
            }
        }
        Tick hoist_saving = any_dma && !hoists.empty() ? lw.issue - std::min(lw.issue, std::max(latest_new, lw.ready)) : 0;
        // Roofline: a local DMA issued earlier arrives earlier only through HBM bandwidth left
        // idle between its new issue point and the moment the wait began.
        if (new_issue < lw.ready) hoist_saving = std::min(hoist_saving, hbm.idle(st.chip, new_issue, lw.ready));
        hoist_saving -= std::min(hoist_saving, cost);
        // Option 2: sink the wait.
        const auto [stop, redundant] = plan.sink_point(w.stream, w.index);
        Tick sink_saving = 0;
        if (stop > w.index + 1) {
            const std::uint64_t last = std::min<std::uint64_t>(stop, st.code.size()) - 1;
            const Tick span = st.life[last].seen ? st.life[last].issue - std::min(st.life[last].issue, lw.issue) : 0;
            sink_saving = std::min(w.stall, span);
        }
        if (hoist_saving == 0 && sink_saving == 0) continue;
        if (hoist_saving >= sink_saving) {
            const std::string kind = remote ? "pipeline_collective" : "hoist_dma";
            Group& g = groups[{kind, where}];
            g.s.kind = kind;
            g.s.where = where;
            g.saving_on[w.stream] += hoist_saving;
            g.ops.insert(ann);
            g.remote = remote;
            ++g.waits;
            for (const Hoist& h : hoists)
                if (g.moved.insert({h.stream, h.from}).second) {
                    g.s.moves.push_back({h.stream, h.from, h.to});
                    ++g.dmas;
                    g.passed += h.from - h.to;
                    g.dma_anns.insert(run.annotation(run.streams[h.stream].code[h.from]));
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
            }
        }
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
        } else if (g.s.kind == "pipeline_collective") {
            cause << g.waits << " waits at " << at << " for pieces sent late by the previous chip (" << anns << "): collective steps serialised";
            action << "pipeline the collective: send each of " << g.dmas << " pieces as soon as its data has arrived";
        } else if (g.s.kind == "drop_wait") {
            cause << g.waits << " waits at " << at << " for write-backs that no later instruction reads before the next wait on the same flag";
            action << "drop the " << g.s.moves.size() << " unnecessary waits (the later wait on the flag still guards the buffer)";
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
    // Below 0.01% of the run (or 10 ns) a saving is noise, not a suggestion.
    const Tick noise = std::max<Tick>(10000, run.end / 10000);
    out.erase(std::remove_if(out.begin(), out.end(), [&](const Suggestion& x) { return x.estimated_saving < noise; }), out.end());
    std::stable_sort(out.begin(), out.end(), [](const Suggestion& x, const Suggestion& y) { return x.estimated_saving > y.estimated_saving; });
    if (out.size() > max) out.resize(max);
    a.suggestions = std::move(out);
}

}  // namespace xpu::analysis
