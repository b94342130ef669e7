// collective_algorithm: link directions left idle by the collectives. Advice to lower them
// another way, not a patch: no moves or edits, so `xpu_analyze --apply` refuses it (the
// finding and the estimate: analysis/collective_choice.h).
#include "analysis/collective_choice.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

class CollectiveAlgorithm : public SuggestionFinder {
public:
    const char* kind() const override { return "collective_algorithm"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Suggestion s = collective_algorithm(sc.run);
        if (!s.kind.empty()) out.push_back(std::move(s));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> collective_algorithm_finder() { return std::make_unique<CollectiveAlgorithm>(); }

}  // namespace xpu::analysis
