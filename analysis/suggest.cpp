// Suggestions: local moves on each stream's dependency graph that respect sync semantics, with
// their saving estimated from the run's own timing.
//
// Dependencies. An instruction's memory accesses are its byte ranges (space, chip, range, read
// or write): vld reads VMEM, vst writes it, a DMA reads its source and writes its destination
// (asynchronously: until a swait covers its completion flag). A swait "covers" the flag raises
// that happened, in this run, after the previous swait on its flag in the same stream and up
// to its own issue; it stands for those raisers' accesses completing. Two accesses conflict if
// they overlap and one writes.
//  - Hoisting a DMA (moving it up): it may pass an instruction unless they conflict, or the
//    instruction is a swait on the flag the DMA raises, or covers a raiser that conflicts with
//    the DMA (its data is not there yet / its buffer not yet free), or is a sset/sadd/barrier.
//  - Sinking a swait (moving it down): it may pass anything that does not touch what its
//    raisers wrote or read, is not a DMA raising its flag, nor a sset/sadd/barrier/halt; when it
//    reaches a later swait on its flag that waits for at least as much, it is redundant and
//    is dropped.
// Estimates. Hoisting the DMAs a stalled wait waits for lets them complete earlier by the time
// between their new and old issue points; the wait then ends at the latest of their new
// completions. Sinking a wait lets the instructions it passes run during the wait.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/context.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kScan = 50000;  // instructions looked at per move

struct Access {
    Space space = Space::Vmem;
    std::uint16_t chip = 0;
    std::uint64_t lo = 0, hi = 0;
    bool write = false;
};

int accesses(const Instruction& in, std::uint16_t chip, Access out[2]) {
    auto at = [&](const MemRef& r) { return r.chip == kLocalChip ? chip : r.chip; };
    const std::uint64_t n = in.has(kBytes) ? in.bytes : 0;
    switch (in.op) {
        case Opcode::VLoad:
            if (!in.has(kMemSrc)) return 0;
            out[0] = {in.mem_src.space, at(in.mem_src), in.mem_src.addr, in.mem_src.addr + std::max<std::uint64_t>(n, 1), false};
            return 1;
        case Opcode::VStore:
            if (!in.has(kMemDst)) return 0;
            out[0] = {in.mem_dst.space, at(in.mem_dst), in.mem_dst.addr, in.mem_dst.addr + std::max<std::uint64_t>(n, 1), true};
            return 1;
        case Opcode::Dma:
            if (!in.has(kMemSrc) || !in.has(kMemDst)) return 0;
            out[0] = {in.mem_src.space, at(in.mem_src), in.mem_src.addr, in.mem_src.addr + n, false};
            out[1] = {in.mem_dst.space, at(in.mem_dst), in.mem_dst.addr, in.mem_dst.addr + n, true};
            return 2;
        default: return 0;
    }
}

bool conflict(const Access* a, int na, const Access* b, int nb) {
    for (int i = 0; i < na; ++i)
        for (int j = 0; j < nb; ++j)
            if ((a[i].write || b[j].write) && a[i].space == b[j].space && a[i].chip == b[j].chip && a[i].lo < b[j].hi &&
                b[j].lo < a[i].hi)
                return true;
    return false;
}

bool is_barrier_like(Opcode op) { return op == Opcode::SSet || op == Opcode::SAdd || op == Opcode::Barrier || op == Opcode::Halt; }

struct Raiser {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    std::uint32_t dma = kNone;  // its DMA record, if a DMA
};

class Planner {
public:
    explicit Planner(const Context& cx) : cx_(cx), run_(cx.run) {
        covered_at_.resize(run_.streams.size());
        for (std::uint32_t s = 0; s < run_.streams.size(); ++s) index_waits(s);
    }

    const std::vector<Raiser>& covered(std::uint32_t s, std::uint64_t i) const {
        auto it = covered_at_[s].find(i);
        return it == covered_at_[s].end() ? none_ : covered_[it->second];
    }

    // Accesses of a raiser, in its own chip's terms; false if it is not a DMA (then a wait on
    // it orders everything: we do not know what the raiser's stream wrote before raising).
    bool raiser_accesses(const Raiser& r, Access out[2], int& n) const {
        const Stream& st = run_.streams[r.stream];
        const Instruction& in = st.code[r.index];
        if (in.op != Opcode::Dma) return false;
        n = accesses(in, st.chip, out);
        return true;
    }

    // Does swait `w` (stream s) order something with these accesses?
    bool wait_blocks(std::uint32_t s, std::uint64_t w, const Access* acc, int na) const {
        for (const Raiser& r : covered(s, w)) {
            Access ra[2];
            int n = 0;
            if (!raiser_accesses(r, ra, n)) return na > 0;
            if (conflict(ra, n, acc, na)) return true;
        }
        return false;
    }

    // The earliest position the DMA at `k` can move up to (k itself: it cannot move).
    std::uint64_t hoist_point(std::uint32_t s, std::uint64_t k) {
        const std::uint64_t key = (std::uint64_t(s) << 40) | k;
        auto it = hoist_cache_.find(key);
        if (it != hoist_cache_.end()) return it->second;
        const Stream& st = run_.streams[s];
        const Instruction& d = st.code[k];
        Access acc[2];
        const int na = accesses(d, st.chip, acc);
        const bool local_flag = d.has(kFlag) && (d.mem_dst.chip == kLocalChip || d.mem_dst.chip == st.chip);
        std::uint64_t p = k;
        const std::uint64_t limit = k > kScan ? k - kScan : 0;
        for (std::uint64_t j = k; j-- > limit;) {
            const Instruction& y = st.code[j];
            if (is_barrier_like(y.op)) break;
            if (y.op == Opcode::SWait) {
                if (local_flag && y.flag == d.flag) break;
                if (wait_blocks(s, j, acc, na)) break;
            } else {
                Access ya[2];
                const int ny = accesses(y, st.chip, ya);
                if (ny && conflict(ya, ny, acc, na)) break;
            }
            p = j;
        }
        hoist_cache_[key] = p;
        return p;
    }

    // Sinking swait `k`: the instruction it must stay before, and whether it reached a later
    // wait that makes it redundant.
    std::pair<std::uint64_t, bool> sink_point(std::uint32_t s, std::uint64_t k) const {
        const Stream& st = run_.streams[s];
        const Instruction& w = st.code[k];
        const Cond cond = w.has(kCond) ? w.cond : Cond::Ge;
        std::vector<Access> racc;
        bool opaque = false;
        for (const Raiser& r : covered(s, k)) {
            Access ra[2];
            int n = 0;
            if (!raiser_accesses(r, ra, n)) opaque = true;
            racc.insert(racc.end(), ra, ra + n);
        }
        const std::uint64_t limit = std::min<std::uint64_t>(st.code.size(), k + kScan);
        for (std::uint64_t j = k + 1; j < limit; ++j) {
            const Instruction& y = st.code[j];
            if (y.op == Opcode::SWait) {
                if (y.flag == w.flag && (y.has(kCond) ? y.cond : Cond::Ge) == cond && (cond == Cond::Ge || cond == Cond::Gt) &&
                    (y.has(kValue) ? y.value : 0) >= (w.has(kValue) ? w.value : 0))
                    return {j, true};
                continue;
            }
            if (is_barrier_like(y.op)) return {j, false};
            if (y.op == Opcode::Dma && y.has(kFlag) && y.flag == w.flag) return {j, false};
            Access ya[2];
            const int ny = accesses(y, st.chip, ya);
            if (ny && (opaque || conflict(racc.data(), static_cast<int>(racc.size()), ya, ny))) return {j, false};
        }
        return {limit, false};
    }

private:
    void index_waits(std::uint32_t s) {
        const Stream& st = run_.streams[s];
        std::unordered_map<std::uint16_t, Tick> prev;  // flag -> issue of the previous swait on it
        for (std::uint64_t i = 0; i < st.code.size() && st.life[i].seen; ++i) {
            const Instruction& in = st.code[i];
            if (in.op != Opcode::SWait) continue;
            const std::uint16_t f = in.has(kFlag) ? in.flag : 0;
            const Tick from = prev.count(f) ? prev[f] : 0;
            const bool first = !prev.count(f);
            const Tick to = st.life[i].issue;
            prev[f] = to;
            std::vector<Raiser> rs;
            const auto& ch = cx_.ix.changes(st.chip, f);
            auto it = std::upper_bound(ch.begin(), ch.end(), from, [&](Tick v, std::uint32_t c) { return v < run_.flags[c].time; });
            if (first) it = ch.begin();
            for (; it != ch.end() && run_.flags[*it].time <= to; ++it) {
                const FlagChange& fc = run_.flags[*it];
                if (fc.by_stream == kNone) continue;
                rs.push_back({fc.by_stream, fc.by_index, cx_.ix.dma_of(fc.by_stream, fc.by_index)});
            }
            covered_at_[s][i] = covered_.size();
            covered_.push_back(std::move(rs));
        }
    }

    const Context& cx_;
    const RunData& run_;
    std::vector<std::vector<Raiser>> covered_;
    std::vector<std::unordered_map<std::uint64_t, std::size_t>> covered_at_;
    std::unordered_map<std::uint64_t, std::uint64_t> hoist_cache_;
    std::vector<Raiser> none_;
};

struct Group {
    Suggestion s;
    std::set<std::pair<std::uint32_t, std::uint64_t>> moved;
    std::uint64_t waits = 0, dmas = 0, passed = 0;
    bool remote = false;
    std::set<std::string> dma_anns;
};

}  // namespace

void make_suggestions(const Context& cx, Analysis& a, std::size_t max) {
    const RunData& run = cx.run;
    Planner plan(cx);
    std::map<std::pair<std::string, std::string>, Group> groups;  // (kind, where)
    for (const WaitStall& w : cx.waits) {
        const Stream& st = run.streams[w.stream];
        const Life& lw = st.life[w.index];
        const std::string where = run.annotation(st.code[w.index]);
        // Option 1: hoist the DMAs this wait waits for.
        Tick latest_new = lw.ready;
        struct Hoist {
            std::uint32_t stream;
            std::uint64_t from, to;
        };
        std::vector<Hoist> hoists;
        bool any_dma = false, remote = false;
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
            const Tick gain = p < r.index ? rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.life[p].issue) : 0;
            latest_new = std::max(latest_new, d.complete - std::min(d.complete, gain));
            if (gain > 0) hoists.push_back({r.stream, r.index, p});
        }
        const Tick hoist_saving = any_dma && !hoists.empty() ? lw.issue - std::min(lw.issue, std::max(latest_new, lw.ready)) : 0;
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
            g.s.estimated_saving += hoist_saving;
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
            g.s.estimated_saving += sink_saving;
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
            action << "reorder: move the wait down to the first instruction that needs its data (" << g.passed
                   << " independent instructions move above it; waits made redundant by a later one are dropped)";
        }
        g.s.cause = cause.str();
        g.s.action = action.str();
        out.push_back(std::move(g.s));
    }
    std::stable_sort(out.begin(), out.end(), [](const Suggestion& x, const Suggestion& y) { return x.estimated_saving > y.estimated_saving; });
    if (out.size() > max) out.resize(max);
    a.suggestions = std::move(out);
}

}  // namespace xpu::analysis
