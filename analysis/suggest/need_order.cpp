#include "analysis/suggest/need_order.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace xpu::analysis {

NeedOrder::NeedOrder(const RunData& run, const Planner& plan) : need_(run.streams.size()) {
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        std::unordered_map<std::uint64_t, std::uint64_t> first;  // DMA index -> first covering swait
        for (std::uint64_t j : plan.sync_and_dma(s))
            if (st.code[j].op == Opcode::SWait)
                for (const Raiser& r : plan.covered(s, j))
                    if (r.stream == s && r.dma != kNone) first.emplace(r.index, j);  // swaits in program order: the first wins
        for (std::uint64_t j : plan.sync_and_dma(s))
            if (st.code[j].op == Opcode::Dma) {
                auto it = first.find(j);
                need_[s].push_back({j, it == first.end() ? kNever : it->second});
            }
    }
}

std::uint64_t NeedOrder::floor(std::uint32_t s, std::uint64_t k, std::uint64_t p) const {
    if (s >= need_.size() || p >= k) return p;
    const auto& v = need_[s];
    const auto self = std::lower_bound(v.begin(), v.end(), std::make_pair(k, std::uint64_t{0}));
    if (self == v.end() || self->first != k || self->second == kNever) return p;
    for (auto it = self; it != v.begin();) {
        --it;
        if (it->first < p) break;
        if (it->second < self->second) return it->first + 1;
    }
    return p;
}

void NeedOrder::keep(std::vector<Move>& moves) const {
    // Per stream, in program order of the moved DMAs: a DMA needed sooner is placed first.
    std::map<std::uint32_t, std::vector<Move*>> per;
    for (Move& m : moves)
        if (m.before != Move::kDelete && m.before < m.from && m.stream < need_.size()) per[m.stream].push_back(&m);
    for (auto& [s, list] : per) {
        std::sort(list.begin(), list.end(), [](const Move* a, const Move* b) { return a->from < b->from; });
        const auto& v = need_[s];
        auto at = [&](std::uint64_t i) { return std::lower_bound(v.begin(), v.end(), std::make_pair(i, std::uint64_t{0})); };
        std::unordered_map<std::uint64_t, std::uint64_t> placed;  // moved DMA -> where it goes (before)
        for (Move* m : list) {
            const auto self = at(m->from);
            if (self == v.end() || self->first != m->from || self->second == kNever) {
                placed[m->from] = m->before;
                continue;
            }
            // The DMAs it would pass, nearest first; the nearest one needed sooner (in its new
            // place) bounds it. Ties in `before` keep program order, so "before the same
            // instruction" still puts it after that one.
            std::uint64_t bound = m->before;
            for (auto it = self; it != v.begin();) {
                --it;
                if (it->first < m->before) break;
                if (it->second >= self->second) continue;
                auto moved = placed.find(it->first);
                bound = std::max(bound, moved == placed.end() ? it->first + 1 : moved->second);
                if (moved == placed.end()) break;  // an unmoved one: nothing above it matters
            }
            m->before = bound;
            placed[m->from] = bound;
        }
    }
    moves.erase(std::remove_if(moves.begin(), moves.end(), [](const Move& m) { return m.before != Move::kDelete && m.before >= m.from; }),
                moves.end());
}

}  // namespace xpu::analysis
