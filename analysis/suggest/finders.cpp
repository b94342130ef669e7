// The list of suggestion finders: one line per kind (its finder in analysis/suggest/<kind>.cpp).
// Their order is the order of their suggestions before ranking, so it breaks ties in the
// estimated saving (the ranking's sort is stable); the wait kinds come first, in the order of
// their names.
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

std::unique_ptr<SuggestionFinder> double_buffer_finder();
std::unique_ptr<SuggestionFinder> double_buffer_store_finder();
std::unique_ptr<SuggestionFinder> drop_wait_finder();
std::unique_ptr<SuggestionFinder> hoist_dma_finder();
std::unique_ptr<SuggestionFinder> pipeline_collective_finder();
std::unique_ptr<SuggestionFinder> pipeline_store_finder();
std::unique_ptr<SuggestionFinder> prefetch_ahead_finder();
std::unique_ptr<SuggestionFinder> reorder_finder();
std::unique_ptr<SuggestionFinder> merge_dma_finder();
std::unique_ptr<SuggestionFinder> split_dma_finder();
std::unique_ptr<SuggestionFinder> collective_algorithm_finder();

const std::vector<std::unique_ptr<SuggestionFinder>>& suggestion_finders() {
    static const std::vector<std::unique_ptr<SuggestionFinder>> list = [] {
        std::vector<std::unique_ptr<SuggestionFinder>> v;
        v.push_back(double_buffer_finder());
        v.push_back(double_buffer_store_finder());
        v.push_back(drop_wait_finder());
        v.push_back(hoist_dma_finder());
        v.push_back(pipeline_collective_finder());
        v.push_back(pipeline_store_finder());
        v.push_back(prefetch_ahead_finder());
        v.push_back(reorder_finder());
        v.push_back(merge_dma_finder());
        v.push_back(split_dma_finder());
        v.push_back(collective_algorithm_finder());
        return v;
    }();
    return list;
}

}  // namespace xpu::analysis
