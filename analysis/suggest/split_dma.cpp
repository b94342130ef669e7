// split_dma: large DMAs that one engine moves more slowly than the chip's HBM could, while
// other engines stand by. Split each over the engines (the rule and the estimate:
// analysis/split_dma.h).
#include "analysis/split_dma.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

class SplitDma : public SuggestionFinder {
public:
    const char* kind() const override { return "split_dma"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Suggestion s = split_suggestion(sc.cx, sc.plan, [&](int chip, Tick a, Tick b) { return sc.hbm.idle(chip, a, b); });
        if (!s.edits.empty()) out.push_back(std::move(s));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> split_dma_finder() { return std::make_unique<SplitDma>(); }

}  // namespace xpu::analysis
