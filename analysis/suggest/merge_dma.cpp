// merge_dma: runs of small back-to-back DMAs, each paying the engine's per-DMA cost. Rewrite
// the first DMA of each run to cover the run and delete the others: one suggestion for all the
// runs that cost time (the rule, the search and the estimate: analysis/merge_dma.h).
#include "analysis/merge_dma.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

class MergeDma : public SuggestionFinder {
public:
    const char* kind() const override { return "merge_dma"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Suggestion s = merge_suggestion(sc.cx, sc.plan, [&](int chip, Tick a, Tick b) { return sc.hbm.idle(chip, a, b); });
        if (!s.edits.empty()) out.push_back(std::move(s));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> merge_dma_finder() { return std::make_unique<MergeDma>(); }

}  // namespace xpu::analysis
