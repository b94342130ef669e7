// pipeline_collective: waits for pieces another chip sent late (collective steps serialised).
// Hoist the remote sends on the sending chips, each to just after the wait that guards its
// data (every piece of those collectives: every_piece). The estimate: as hoist_dma's, with the link's bandwidth and the idle time of the first
// link the piece takes (wait_remedy.cpp).
#include <set>
#include <sstream>
#include <string>

#include "analysis/names.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

// The collective an op of a collective's send belongs to: its annotation less the phase and the
// step ("all-reduce/torus2d/reduce_scatter/send" -> "all-reduce/torus2d",
// "layer3/attn/all_reduce/all_gather/send" -> "layer3/attn/all_reduce"); a shorter one is its own.
std::string collective_of(const std::string& ann) {
    const std::string phase = op_of(ann);
    return phase == ann || phase.find('/') == std::string::npos ? ann : op_of(phase);
}

// Every piece of the group's collectives (the remote sends of every phase of the collectives its
// DMAs belong to, on every chip) up to the wait that guards its data, not only those the stalled
// waits' estimates moved (a torus2d all-reduce on 8x8 chips whose waits named the y phases and the
// x all-gather left its x reduce-scatter to a second round, which measured 21 us more): a serialised
// step holds each piece behind waits for pieces it does not need, and which pieces those
// estimates see depends on how late each arrived in this run (two pieces sent at once arrive
// together, interleaved on the link, so neither seems to gain from its hoist). The estimate stays
// the stalled waits' (wait_remedy.h); the replay measures the whole pipeline.
void every_piece(const SuggestContext& sc, WaitGroup& g) {
    const RunData& run = sc.run;
    std::set<std::string> collectives;
    for (const std::string& a : g.dma_anns) collectives.insert(collective_of(a));
    bool added = false;
    for (const Dma& d : run.dmas) {
        const Stream& st = run.streams[d.stream];
        const Instruction& in = st.code[d.index];
        if (!sc.cx.ix.dma_remote(in, st.chip) || g.moved.count({d.stream, d.index})) continue;
        const std::string ann = run.annotation(in);
        if (!collectives.count(collective_of(ann))) continue;
        const std::uint64_t p = sc.plan.hoist_point(d.stream, d.index);
        bool passes_wait = false;
        for (std::uint64_t k = p; k < d.index && !passes_wait; ++k) passes_wait = st.code[k].op == Opcode::SWait;
        if (!passes_wait) continue;
        g.moved.insert({d.stream, d.index});
        g.s.moves.push_back({d.stream, d.index, p});
        g.dma_anns.insert(ann);
        added = true;
    }
    if (added) keep_need_order(sc, g);  // as group_hoists keeps its own
}

class PipelineCollective : public SuggestionFinder {
public:
    const char* kind() const override { return "pipeline_collective"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (auto& [step, g] : group_hoists(sc, kind())) {
            every_piece(sc, g);
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << g.waits << " waits at " << at << " for pieces sent late by the previous chip (" << dma_list(g)
                  << "): collective steps serialised";
            action << "pipeline the collective: send each of " << g.dmas << " pieces as soon as its data has arrived";
            g.s.cause = cause.str();
            g.s.action = action.str();
            out.push_back(std::move(g.s));
        }
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> pipeline_collective_finder() { return std::make_unique<PipelineCollective>(); }

}  // namespace xpu::analysis
