// merge_dma (merge_dma.h has the rule): find the runs, measure what their extra descriptors
// cost on this run, and make one suggestion of the runs that cost time.
//
// What a DMA costs (models/dma_engine.h): the engine takes descriptors in order; each one waits
// setup_latency cycles after the previous one has issued its last chunk, then issues its chunks
// at the engine's bandwidth; at most queue_depth descriptors wait in the engine, and a core that
// issues one more blocks (unit busy) until a slot frees. So k pieces cost k - 1 setups more than
// one DMA of their bytes, and, when k is larger than the queue, they hold the core at issue
// while the engine works through them.
//
// The estimate and its bound. Per engine, the fixed per-DMA cost is measured on the run: the
// smallest time the engine spent before starting a DMA beyond moving the previous DMA's bytes at
// its bandwidth (start - max(previous start + its bytes / bandwidth, issue)): the setup latency,
// when nothing else held the engine. Merging a run removes its k - 1 later descriptors, so the
// engine spends O = sum over them of min(that fixed cost, the gap measured before each) less on
// it, and its data lands at most `early` = min(O, the HBM time left idle over the run's
// transfer) earlier (the roofline: if the HBM was saturated, the setups were hidden behind it).
// Per stream the saving is estimated as
//   min(held + waits, sum of `early` over its runs)
// where held is the time the core was held issuing the pieces that disappear (ready -> issue:
// the engine's queue was full) and waits, per wait covering the runs that stalled, the part of
// its stall that ends earlier when their data lands `early` earlier (at most its stall: a wait
// cannot issue before it was ready). The first term bounds it because those stalls are all the
// core time the merge removes (it changes nothing else the core waits for); the second because
// the core is held at issue and at the waits only until its engine has worked through the
// pieces, which the merge shortens by no more than O, and no more than the idle HBM allows. The
// suggestion saves the largest of its streams' (they run in parallel). First order: a merge
// also lets later DMAs on the engine start earlier (a cascade, not counted), and the core, no
// longer held, may only reach a full unit queue sooner (counted: a known over-estimate when the
// core was ahead of its units, docs/analysis.md).
#include "analysis/merge_dma.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "analysis/names.h"
#include "analysis/report.h"

namespace xpu::analysis {

namespace {

std::uint64_t key(std::uint32_t s, std::uint64_t i) { return (std::uint64_t(s) << 40) | i; }



struct Open {
    std::vector<std::uint64_t> pieces;
    std::uint64_t next_src = 0, next_dst = 0;
};
constexpr std::size_t kMaxBetween = 256;  // beyond: the run ends (a bound on the work, not a rule)

bool same_kind(const Instruction& a, const Instruction& b) {
    return a.has(kFlag) && b.has(kFlag) && a.flag == b.flag && a.mem_src.space == b.mem_src.space &&
           a.mem_src.chip == b.mem_src.chip && a.mem_dst.space == b.mem_dst.space && a.mem_dst.chip == b.mem_dst.chip &&
           !a.has(kDtype) && !b.has(kDtype);
}

bool eligible(const Instruction& in) {
    return in.op == Opcode::Dma && in.has(kFlag) && in.has(kMemSrc) && in.has(kMemDst) && in.has(kBytes) && in.bytes > 0 &&
           !in.has(kDtype) && flag_increment(in) > 0;
}

}  // namespace

std::vector<MergeRun> merge_runs(const Context& cx, const Planner& plan) {
    const RunData& run = cx.run;
    std::vector<MergeRun> runs;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        std::map<unsigned, Open> open;  // per engine
        auto close = [&](Open& o) {
            if (o.pieces.size() >= 2) {
                MergeRun r;
                r.stream = s;
                r.pieces = o.pieces;
                for (std::uint64_t i : o.pieces) {
                    r.bytes += st.code[i].bytes;
                    r.value += flag_increment(st.code[i]);
                }
                // An HBM -> HBM run whose merged source and destination overlap would change
                // what its pieces read: not merged.
                const Instruction& f = st.code[o.pieces[0]];
                const bool overlap = f.mem_src.space == f.mem_dst.space && f.mem_src.chip == f.mem_dst.chip &&
                                     f.mem_src.addr < f.mem_dst.addr + r.bytes && f.mem_dst.addr < f.mem_src.addr + r.bytes;
                if (!overlap) runs.push_back(std::move(r));
            }
            o = Open{};
        };
        for (const std::uint64_t i : plan.sync_and_dma(s)) {  // nothing else opens, extends or closes a run
            const Instruction& in = st.code[i];
            if (in.op == Opcode::SWait || is_barrier_like(in.op)) {
                for (auto& [e, o] : open) close(o);
                continue;
            }
            if (in.op != Opcode::Dma) continue;
            Access acc[2];
            const int na = accesses(in, st, acc);
            Open& o = open[in.unit];
            bool extend = !o.pieces.empty() && eligible(in) && same_kind(st.code[o.pieces[0]], in) &&
                          in.mem_src.addr == o.next_src && in.mem_dst.addr == o.next_dst;
            // Nothing issued since the run's first piece (another engine's DMA too; the only DMAs
            // of this engine since are the pieces) may touch what this piece touches: the merged
            // DMA issues at the first piece's place. Looked at only when a piece would extend the
            // run, and at most kMaxBetween accesses back.
            std::size_t between = 0;
            for (std::uint64_t j = extend ? o.pieces[0] + 1 : i; j < i && extend; ++j) {
                const Instruction& y = st.code[j];
                if (y.op == Opcode::Dma && y.unit == in.unit) continue;
                Access ya[2];
                const int ny = accesses(y, st, ya);
                between += static_cast<std::size_t>(ny);
                if (between > kMaxBetween || (ny && conflict(ya, ny, acc, na))) extend = false;
            }
            if (!extend) {
                close(o);
                if (eligible(in)) o.pieces.push_back(i);
            } else {
                o.pieces.push_back(i);
            }
            if (!o.pieces.empty()) {
                o.next_src = in.mem_src.addr + in.bytes;
                o.next_dst = in.mem_dst.addr + in.bytes;
            }
        }
        for (auto& [e, o] : open) close(o);
    }
    // Runs on flags that are not monotone (merge_dma.h) do not merge.
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [&](const MergeRun& r) {
                                  const Instruction& f = run.streams[r.stream].code[r.pieces[0]];
                                  return !plan.flag_counting(flag_chip(f, run.streams[r.stream].chip), f.flag).monotone;
                              }),
               runs.end());
    // Cut where the waits that cover the pieces change: no wait may see part of a run.
    std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> seen_by;
    for (const MergeRun& r : runs)
        for (std::uint64_t i : r.pieces) seen_by[key(r.stream, i)];
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        for (std::uint64_t i = 0; i < st.code.size() && st.life[i].seen; ++i) {
            if (st.code[i].op != Opcode::SWait) continue;
            for (const Raiser& r : plan.covered(s, i)) {
                auto it = seen_by.find(key(r.stream, r.index));
                if (it != seen_by.end()) it->second.push_back(key(s, i));
            }
        }
    }
    std::vector<MergeRun> out;
    for (const MergeRun& r : runs) {
        const Stream& st = run.streams[r.stream];
        MergeRun cur;
        cur.stream = r.stream;
        auto flush = [&]() {
            if (cur.pieces.size() >= 2) out.push_back(cur);
            cur.pieces.clear();
            cur.bytes = 0;
            cur.value = 0;
        };
        for (std::size_t j = 0; j < r.pieces.size(); ++j) {
            if (j && seen_by[key(r.stream, r.pieces[j])] != seen_by[key(r.stream, r.pieces[j - 1])]) flush();
            cur.pieces.push_back(r.pieces[j]);
            cur.bytes += st.code[r.pieces[j]].bytes;
            cur.value += flag_increment(st.code[r.pieces[j]]);
        }
        flush();
    }
    return out;
}

Instruction merged_dma(const RunData& run, const MergeRun& r) {
    Instruction in = run.streams[r.stream].code[r.pieces.front()];
    in.bytes = r.bytes;
    in.value = r.value;
    in.set(kValue);
    return in;
}

namespace {

// A DMA's bytes at its engine's bandwidth.
Tick wire_time(const RunData& run, const Dma& d) {
    const double gbps = run.units[d.engine].peak_gbps;
    return gbps > 0 ? static_cast<Tick>(static_cast<double>(d.bytes) * 1000.0 / gbps) : Tick(0);
}

// Per engine, its DMAs by start: each DMA's predecessor on its engine, and the engine's fixed
// per-DMA cost measured on them (the smallest gap before a start beyond the previous DMA's
// bytes at the engine's bandwidth and the DMA's own issue).
struct EngineOrder {
    std::vector<std::uint32_t> prev;      // per DMA record (kNone: the engine's first)
    std::map<std::uint32_t, Tick> fixed;  // per engine
};

EngineOrder engine_order(const RunData& run) {
    EngineOrder eo;
    std::map<std::uint32_t, std::vector<std::uint32_t>> by_engine;
    for (std::uint32_t i = 0; i < run.dmas.size(); ++i) by_engine[run.dmas[i].engine].push_back(i);
    eo.prev.assign(run.dmas.size(), kNone);
    for (auto& [e, v] : by_engine) {
        std::sort(v.begin(), v.end(), [&](std::uint32_t a, std::uint32_t b) {
            return run.dmas[a].start != run.dmas[b].start ? run.dmas[a].start < run.dmas[b].start : a < b;
        });
        Tick f = ~Tick(0);
        for (std::size_t k = 0; k < v.size(); ++k) {
            const Dma& d = run.dmas[v[k]];
            Tick from = d.issue;
            if (k) {
                eo.prev[v[k]] = v[k - 1];
                const Dma& p = run.dmas[v[k - 1]];
                from = std::max(from, p.start + wire_time(run, p));
            }
            if (d.start >= from) f = std::min(f, d.start - from);
        }
        eo.fixed[e] = f == ~Tick(0) ? 0 : f;
    }
    return eo;
}

struct RunCost {
    Tick overhead = 0;  // O: engine time the merge removes
    Tick early = 0;     // how much earlier the run's data lands: O, within the idle HBM time
    Tick issue = 0;     // core time held issuing the pieces that go
    Tick land = 0;      // when the run's data had all landed
    bool measured = false, used = false;
};

// The time instruction i of stream s was held at issue: from when it could have issued (its
// predecessor's slot ended, it had arrived and its operands were ready) to its issue.
Tick held_at_issue(const Context& cx, std::uint32_t s, std::uint64_t i) {
    const Stream& st = cx.run.streams[s];
    const Tick t0 = std::max({st.life[i].ready, st.life[i].arrival, i ? st.life[i - 1].issue + cx.ix.issue_slot(s) : Tick(0)});
    return st.life[i].issue - std::min(st.life[i].issue, t0);
}

// What run m's later pieces cost on this run (not measured if a piece never issued).
RunCost run_cost(const Context& cx, const MergeRun& m, const EngineOrder& eo, const std::function<Tick(int, Tick, Tick)>& hbm_idle) {
    const RunData& run = cx.run;
    const Stream& st = run.streams[m.stream];
    RunCost c;
    Tick first_start = 0;
    for (std::size_t j = 0; j < m.pieces.size(); ++j) {
        const std::uint64_t i = m.pieces[j];
        const std::uint32_t d = cx.ix.dma_of(m.stream, i);
        if (!st.life[i].seen || d == kNone) return c;
        const Dma& x = run.dmas[d];
        c.land = std::max(c.land, x.complete);
        if (j == 0) {
            first_start = x.start;
            continue;
        }
        c.issue += held_at_issue(cx, m.stream, i);
        Tick gap = x.start - std::min(x.start, x.issue);
        if (eo.prev[d] != kNone) {
            const Dma& p = run.dmas[eo.prev[d]];
            gap = std::min(gap, x.start - std::min(x.start, p.start + wire_time(run, p)));
        }
        c.overhead += std::min(gap, eo.fixed.at(x.engine));
    }
    c.measured = true;
    const Instruction& f = st.code[m.pieces[0]];
    c.early = c.overhead;
    if (hbm_idle && (f.mem_src.space == Space::Hbm || f.mem_dst.space == Space::Hbm))
        c.early = std::min(c.early, hbm_idle(st.chip, first_start, c.land));
    return c;
}

// The runs' costs, and which run each piece belongs to.
struct RunCosts {
    std::vector<RunCost> cost;
    std::unordered_map<std::uint64_t, std::size_t> run_of;  // key(stream, index) of a piece -> its run
};

RunCosts run_costs(const Context& cx, const std::vector<MergeRun>& runs, const EngineOrder& eo,
                   const std::function<Tick(int, Tick, Tick)>& hbm_idle) {
    RunCosts rc;
    rc.cost.resize(runs.size());
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const RunCost c = run_cost(cx, runs[r], eo, hbm_idle);
        if (!c.measured) continue;
        rc.cost[r] = c;
        for (std::uint64_t i : runs[r].pieces) rc.run_of[key(runs[r].stream, i)] = r;
    }
    return rc;
}

// When the data swait w of stream s waits for would land with the runs merged; the runs it
// covers are added to `on`.
Tick landing(const Context& cx, const Planner& plan, const RunCosts& rc, std::uint32_t s, std::uint64_t w, std::set<std::size_t>& on) {
    const Life& lw = cx.run.streams[s].life[w];
    Tick latest = 0;
    for (const Raiser& r : plan.covered(s, w)) {
        if (r.dma == kNone) {
            latest = std::max(latest, lw.issue);
            continue;
        }
        auto it = rc.run_of.find(key(r.stream, r.index));
        if (it == rc.run_of.end()) {
            latest = std::max(latest, cx.run.dmas[r.dma].complete);
            continue;
        }
        const RunCost& c = rc.cost[it->second];
        latest = std::max(latest, c.land - std::min(c.land, c.early));
        on.insert(it->second);
    }
    return latest;
}

// The estimate (merge_dma.cpp's head): per stream (they run in parallel: the suggestion saves
// the largest), the stalls the merge removes, capped. Marks the runs that cost time (the core
// was held issuing their pieces, or a wait on them stalled and would end earlier) as used, and
// counts the waits that stalled on them.
struct WaitsOnRuns {
    Tick stall = 0;
    std::uint64_t count = 0;
};

Tick merge_estimate(const Context& cx, const Planner& plan, const std::vector<MergeRun>& runs, RunCosts& rc, WaitsOnRuns& waits) {
    std::map<std::uint32_t, Tick> gain;
    std::map<std::uint32_t, std::set<std::size_t>> runs_of_stream;
    for (const WaitStall& w : cx.waits) {
        std::set<std::size_t> on;
        const Life& lw = cx.run.streams[w.stream].life[w.index];
        const Tick latest = std::max(lw.ready, landing(cx, plan, rc, w.stream, w.index, on));
        if (on.empty() || latest >= lw.issue) continue;
        gain[w.stream] += std::min(lw.issue - latest, w.stall);
        waits.stall += w.stall;
        ++waits.count;
        for (std::size_t r : on) {
            rc.cost[r].used = true;
            runs_of_stream[w.stream].insert(r);
        }
    }
    for (std::size_t r = 0; r < runs.size(); ++r)
        if (rc.cost[r].issue > 0 && rc.cost[r].overhead > 0) {
            rc.cost[r].used = true;
            gain[runs[r].stream] += rc.cost[r].issue;
            runs_of_stream[runs[r].stream].insert(r);
        }
    Tick best = 0;
    for (const auto& [st, rs] : runs_of_stream) {
        Tick cap = 0;
        for (std::size_t r : rs)
            if (rc.cost[r].overhead > 0) cap += rc.cost[r].early;
        best = std::max(best, std::min(gain[st], cap));
    }
    return best;
}

}  // namespace

Suggestion merge_suggestion(const Context& cx, const Planner& plan, const std::function<Tick(int, Tick, Tick)>& hbm_idle) {
    const RunData& run = cx.run;
    Suggestion sug;
    sug.kind = "merge_dma";
    const std::vector<MergeRun> runs = merge_runs(cx, plan);
    if (runs.empty()) return sug;
    const EngineOrder eo = engine_order(run);
    RunCosts rc = run_costs(cx, runs, eo, hbm_idle);
    WaitsOnRuns waits;
    sug.estimated_saving = merge_estimate(cx, plan, runs, rc, waits);
    // The change: the runs that cost time merged (edits), their later pieces dropped (moves).
    std::set<std::string> ops;
    std::uint64_t pieces = 0, merged = 0;
    Tick issue_stall = 0, overhead = 0, fixed_min = ~Tick(0);
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const MergeRun& m = runs[r];
        const RunCost& c = rc.cost[r];
        if (!c.used || c.overhead == 0) continue;
        issue_stall += c.issue;
        overhead += c.overhead;
        ++merged;
        pieces += m.pieces.size();
        fixed_min = std::min(fixed_min, eo.fixed.at(run.dmas[cx.ix.dma_of(m.stream, m.pieces[0])].engine));
        ops.insert(run.annotation(run.streams[m.stream].code[m.pieces[0]]));
        sug.edits.push_back({m.stream, m.pieces[0], merged_dma(run, m), {}});
        for (std::size_t j = 1; j < m.pieces.size(); ++j) sug.moves.push_back({m.stream, m.pieces[j], Move::kDelete});
    }
    if (!merged) return sug;
    // Where: the ops of the merged DMAs, each step once, rolled up across layers (analysis/names.h).
    sug.ops = sorted_names(std::vector<std::string>(ops.begin(), ops.end()));
    sug.where = where_text(sug.ops);
    std::ostringstream cause, action;
    cause << merged << " runs of back-to-back contiguous DMAs (" << pieces << " DMAs) on one engine and one flag each pay the engine's per-DMA cost ("
          << format_time(fixed_min) << " measured; " << format_time(overhead) << " in all): the core was held "
          << format_time(issue_stall) << " issuing them into full engine queues";
    if (waits.count) cause << " and waited " << format_time(waits.stall) << " at " << waits.count << " waits on their flags";
    action << "merge each run into one DMA covering it (" << merged << " DMAs instead of " << pieces
           << "): its first DMA takes the run's bytes and flag increment (val = the pieces' sum, so every wait's value still holds), the other "
           << pieces - merged << " are dropped";
    sug.cause = cause.str();
    sug.action = action.str();
    return sug;
}

}  // namespace xpu::analysis
