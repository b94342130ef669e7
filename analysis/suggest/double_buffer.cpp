// double_buffer: waits on DMAs that cannot be prefetched because their destination buffer is
// still being read. Rename each step's fill of the buffer, and every access to it up to the
// next fill, into the step's copy of the buffer (kBufferCopies in all, the others in free VMEM;
// analysis/double_buffer.h: BufferRenamer), give each copy's steps a flag of their own where
// the flag is counted the plain way, then hoist the DMAs as far as the renamed program allows. Chosen for a wait only when it beats the
// plain hoist (wait_remedy.cpp).
#include <algorithm>
#include <sstream>

#include "analysis/suggest/finder.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

// Renames the buffers of group g's DMAs (edits) and hoists the DMAs as far as the renamed
// program allows (moves, by the rules of dependencies.h on that program). False when a buffer
// cannot be renamed or no DMA moves.
bool rename_and_hoist(const SuggestContext& sc, WaitGroup& g) {
    std::map<std::uint32_t, std::vector<std::uint64_t>> dmas, to_rename;
    for (const Move& m : g.s.moves) dmas[m.stream].push_back(m.from);
    for (const auto& [stream, k] : g.renamed) to_rename[stream].push_back(k);
    std::vector<Move> moves;
    g.passed = 0;
    for (const auto& [stream, list] : dmas) {
        Planner::Edited edited;
        std::string why;
        if (!sc.renamer.rename(stream, to_rename[stream], edited, why)) return false;
        sc.renamer.split_flags(stream, to_rename[stream], edited);
        for (std::uint64_t k : list) {
            const std::uint64_t p = sc.plan.hoist_point(stream, k, edited);
            if (p < k) {
                moves.push_back({stream, k, p});
                g.passed += k - p;
            }
        }
        std::vector<std::uint64_t> at;
        for (const auto& [index, in] : edited) at.push_back(index);
        std::sort(at.begin(), at.end());  // the edits in program order (deterministic output)
        for (std::uint64_t index : at) g.s.edits.push_back({stream, index, edited.at(index), {}});
    }
    if (moves.empty()) return false;
    g.s.moves = std::move(moves);
    g.dmas = g.s.moves.size();
    return true;
}

class DoubleBuffer : public SuggestionFinder {
public:
    const char* kind() const override { return "double_buffer"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (auto& [step, g] : group_hoists(sc, kind())) {
            if (!rename_and_hoist(sc, g)) continue;  // cannot rename: no suggestion (the plain hoist was smaller)
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << g.waits << " sync-flag waits at " << at << " on DMAs that cannot be prefetched: their buffer is still being read ("
                  << dma_list(g) << ")";
            action << "multi-buffer: give each buffer " << kBufferCopies - 1 << " more copies in free VMEM and put each step's fill in the "
                   << "next copy (" << g.s.edits.size() << " instructions renamed), then prefetch " << g.dmas
                   << " DMAs into the free copies, " << g.passed
                   << " instruction slots earlier in all";
            g.s.cause = cause.str();
            g.s.action = action.str();
            out.push_back(std::move(g.s));
        }
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> double_buffer_finder() { return std::make_unique<DoubleBuffer>(); }

}  // namespace xpu::analysis
