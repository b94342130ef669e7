// hoist_dma: sync-flag waits on DMAs issued late. Move each DMA a stalled wait waits for up to
// just after the last instruction it depends on (a prefetch into the buffer as soon as it is
// free). The estimate: wait_remedy.cpp (hoist_option).
#include <optional>
#include <sstream>

#include "analysis/suggest/engine_balance.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/raise_waits.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class HoistDma : public SuggestionFinder {
public:
    const char* kind() const override { return "hoist_dma"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (auto& [step, g] : group_hoists(sc, kind())) {
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << g.waits << " sync-flag waits at " << at << " on DMAs issued late (" << dma_list(g) << ")";
            action << "prefetch: hoist " << g.dmas
                   << " DMAs earlier, each to just after the last instruction it depends on (its buffer is free and its data ready there), "
                   << g.passed << " instruction slots in all";
            g.s.cause = cause.str();
            g.s.action = action.str();
            std::optional<Suggestion> v = with_raised_waits(sc, g);  // copies g.s: before it moves
            // The same hoist with the DMAs it issues back to back on other engines: a variant,
            // since which of the two is faster is for the replay to say (docs/analysis.md,
            // "hoist_dma and the DMA engines").
            Suggestion spread = g.s;
            if (const std::size_t n = balance_dma_engines(sc, spread)) {
                spread.variant = true;
                spread.action = "as hoist_dma at " + g.s.where + ", and " + std::to_string(n) + (n == 1 ? " DMA" : " DMAs") +
                                " each on the engine estimated to finish it first (the estimate: the hoist's)";
            }
            out.push_back(std::move(g.s));
            if (v) out.push_back(std::move(*v));
            if (spread.variant) out.push_back(std::move(spread));
        }
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> hoist_dma_finder() { return std::make_unique<HoistDma>(); }

}  // namespace xpu::analysis
