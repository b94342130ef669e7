// pipeline_collective: waits for pieces another chip sent late (collective steps serialised).
// Hoist the remote sends on the sending chips, each to just after the wait that guards its
// data. The estimate: as hoist_dma's, with the link's bandwidth and the idle time of the first
// link the piece takes (wait_remedy.cpp).
#include <sstream>

#include "analysis/suggest/finder.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class PipelineCollective : public SuggestionFinder {
public:
    const char* kind() const override { return "pipeline_collective"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (auto& [step, g] : group_hoists(sc, kind())) {
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
