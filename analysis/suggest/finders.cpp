// The list of suggestion finders: one line per kind (its finder in analysis/suggest/<kind>.cpp).
// Their order is the order of their suggestions before ranking, so it breaks ties in the
// estimated saving (the ranking's sort is stable); the wait kinds come first, in the order of
// their names.
#include <algorithm>

#include "analysis/suggest/finder.h"

#include "analysis/names.h"

namespace xpu::analysis {

std::unique_ptr<SuggestionFinder> defer_dma_finder();
std::unique_ptr<SuggestionFinder> double_buffer_finder();
std::unique_ptr<SuggestionFinder> double_buffer_store_finder();
std::unique_ptr<SuggestionFinder> drop_wait_finder();
std::unique_ptr<SuggestionFinder> forward_store_finder();
std::unique_ptr<SuggestionFinder> hoist_dma_finder();
std::unique_ptr<SuggestionFinder> pipeline_collective_finder();
std::unique_ptr<SuggestionFinder> pipeline_store_finder();
std::unique_ptr<SuggestionFinder> prefetch_ahead_finder();
std::unique_ptr<SuggestionFinder> reorder_finder();
std::unique_ptr<SuggestionFinder> reorder_across_finder();
std::unique_ptr<SuggestionFinder> merge_dma_finder();
std::unique_ptr<SuggestionFinder> split_dma_finder();
std::unique_ptr<SuggestionFinder> spread_matmuls_finder();
std::unique_ptr<SuggestionFinder> direct_collective_finder();
std::unique_ptr<SuggestionFinder> collective_algorithm_finder();

namespace {

// The list, and the order the workers take its finders in (find_suggestions): longest first, as
// measured per finder on the 32-layer llama2-7b decode's log (1.73 M instructions, 2026-11-29,
// seconds): reorder across the stream 1.76, double_buffer 1.63, double_buffer_store 1.55,
// reorder at waits 1.38, hoist_dma 0.47, each of the others below 0.03; the calling thread
// chooses the remedies first (0.74) while another worker starts the longest, which does not
// read them. On two cores both workers then end within a few tenths of a second.
struct Finders {
    std::vector<std::unique_ptr<SuggestionFinder>> list;
    std::vector<std::size_t> work_order;
    Finders() {
        std::vector<std::pair<int, std::size_t>> start;  // (place in the work order, index)
        auto add = [&](std::unique_ptr<SuggestionFinder> f, int place) {
            start.push_back({place, list.size()});
            list.push_back(std::move(f));
        };
        constexpr int kShort = 9;  // the short ones: after the long, in the list's order
        add(defer_dma_finder(), kShort);
        add(double_buffer_finder(), 1);
        add(double_buffer_store_finder(), 2);
        add(drop_wait_finder(), kShort);
        add(forward_store_finder(), kShort);
        add(hoist_dma_finder(), 4);
        add(pipeline_collective_finder(), kShort);
        add(pipeline_store_finder(), kShort);
        add(prefetch_ahead_finder(), kShort);
        add(reorder_finder(), 3);
        add(reorder_across_finder(), 0);
        add(merge_dma_finder(), kShort);
        add(split_dma_finder(), kShort);
        add(spread_matmuls_finder(), kShort);
        add(direct_collective_finder(), kShort);
        add(collective_algorithm_finder(), kShort);
        std::stable_sort(start.begin(), start.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& x : start) work_order.push_back(x.second);
    }
};

const Finders& finders() {
    static const Finders f;
    return f;
}

}  // namespace

const std::vector<std::unique_ptr<SuggestionFinder>>& suggestion_finders() { return finders().list; }
const std::vector<std::size_t>& finder_work_order() { return finders().work_order; }

void set_places(Suggestion& s, const std::set<std::string>& ops, const std::set<std::string>& dma_ops) {
    s.ops = sorted_names(std::vector<std::string>(ops.begin(), ops.end()));
    s.dma_ops = sorted_names(std::vector<std::string>(dma_ops.begin(), dma_ops.end()));
    s.where = where_text(s.ops);
}

}  // namespace xpu::analysis
