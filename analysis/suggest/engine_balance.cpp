#include "analysis/suggest/engine_balance.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "analysis/patch.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// Two DMAs of the run touch the same bytes, one of them writing them (its destination).
bool bytes_shared(const std::vector<const Instruction*>& run) {
    struct Range {
        Space space;
        std::uint64_t begin, end;
        bool write;
        std::size_t dma;
    };
    std::vector<Range> r;
    for (std::size_t i = 0; i < run.size(); ++i) {
        const Instruction& in = *run[i];
        r.push_back({in.mem_src.space, in.mem_src.addr, in.mem_src.addr + in.bytes, false, i});
        r.push_back({in.mem_dst.space, in.mem_dst.addr, in.mem_dst.addr + in.bytes, true, i});
    }
    std::sort(r.begin(), r.end(), [](const Range& a, const Range& b) {
        return a.space != b.space ? a.space < b.space : a.begin < b.begin;
    });
    // Sweep: each range against the ranges still open before it (of its space).
    std::vector<const Range*> open;
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (i && r[i].space != r[i - 1].space) open.clear();
        open.erase(std::remove_if(open.begin(), open.end(), [&](const Range* o) { return o->end <= r[i].begin; }),
                   open.end());
        for (const Range* o : open)
            if (o->dma != r[i].dma && (o->write || r[i].write)) return true;
        open.push_back(&r[i]);
    }
    return false;
}

}  // namespace

std::size_t balance_dma_engines(const SuggestContext& sc, Suggestion& s) {
    const RunData& run = sc.run;
    std::set<std::pair<std::uint32_t, std::uint64_t>> moved;
    for (const Move& m : s.moves)
        if (m.before != Move::kDelete) moved.insert({m.stream, m.from});
    if (moved.empty()) return 0;
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint8_t> engine_of;  // the changes
    // Per stream, while its patched program is visited: its engines and when each is estimated
    // to be free, the time the program has reached (the issue, in the run, of the last
    // instruction that stays where it was), and the run of DMAs being gathered.
    std::uint32_t si = 0;
    std::vector<std::uint8_t> engines;
    std::map<std::uint8_t, Tick> free_at;
    Tick now = 0;
    struct Queued {
        std::uint64_t index;
        const Instruction* in;
        bool splits;
    };
    std::vector<Queued> burst;
    auto service = [&](std::uint64_t index) -> std::optional<Tick> {
        const std::uint32_t d = sc.cx.ix.dma_of(si, index);
        if (d == kNone) return std::nullopt;
        return sc.dma_timing.shortest(run.dmas[d], false);
    };
    auto close_burst = [&] {
        const Stream& st = run.streams[si];
        bool eligible = burst.size() >= 2 && engines.size() >= 2;
        bool any_moved = false;
        std::vector<const Instruction*> ins;
        std::vector<Tick> took;
        for (const Queued& q : burst) {
            any_moved = any_moved || moved.count({si, q.index});
            const std::optional<Tick> t = service(q.index);
            eligible = eligible && t && !q.splits && sc.cx.ix.dma_local(*q.in, st.chip) &&
                       free_at.count(q.in->unit);
            took.push_back(t.value_or(0));
            ins.push_back(q.in);
        }
        eligible = eligible && any_moved && !bytes_shared(ins);
        for (std::size_t k = 0; k < burst.size(); ++k) {
            std::uint8_t e = burst[k].in->unit;
            // Each DMA, in the order issued, on the engine estimated to finish it first (its own
            // on a tie): an engine serves its queue in order, so what is issued first is
            // needed first.
            auto done_on = [&](std::uint8_t x) { return std::max(free_at[x], now) + took[k]; };
            if (eligible)
                for (std::uint8_t x : engines)
                    if (done_on(x) < done_on(e)) e = x;
            if (e != burst[k].in->unit) engine_of[{si, burst[k].index}] = e;
            free_at[e] = done_on(e);
        }
        burst.clear();
    };
    visit_patched(
        run, s,
        [&](std::uint32_t stream) {
            if (!burst.empty()) close_burst();
            si = stream;
            now = 0;
            free_at.clear();
            const Stream& st = run.streams[stream];
            for (const Instruction& in : st.code)
                if (in.op == Opcode::Dma && sc.cx.ix.dma_local(in, st.chip))
                    free_at[in.unit] = 0;
            engines.clear();
            for (const auto& [e, t] : free_at) engines.push_back(e);
        },
        [&](std::uint32_t stream, std::uint64_t i, const Edit* e) {
            const Stream& st = run.streams[stream];
            if (!moved.count({stream, i}) && i < st.life.size() && st.life[i].seen) now = std::max(now, st.life[i].issue);
            const Instruction& in = e ? e->in : st.code[i];
            if (in.op == Opcode::Dma) burst.push_back({i, &in, e && !e->then.empty()});
            else if (!burst.empty()) close_burst();
        });
    if (!burst.empty()) close_burst();
    // The new engines: edits of their own, or a change of the edit the DMA has.
    const std::size_t changed = engine_of.size();
    for (Edit& e : s.edits) {
        auto it = engine_of.find({e.stream, e.index});
        if (it == engine_of.end()) continue;
        e.in.unit = it->second;
        engine_of.erase(it);
    }
    for (const auto& [at, engine] : engine_of) {
        Edit e{at.first, at.second, run.streams[at.first].code[at.second], {}};
        e.in.unit = engine;
        s.edits.push_back(std::move(e));
    }
    return changed;
}

}  // namespace xpu::analysis
