#include "analysis/compose.h"

#include <algorithm>
#include <map>

#include "analysis/names.h"

namespace xpu::analysis {

namespace {

using Spans = std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>>;  // stream -> [first, last] touched

void touch(Spans& s, std::uint32_t stream, std::uint64_t i) {
    auto [it, fresh] = s.emplace(stream, std::make_pair(i, i));
    if (!fresh) {
        it->second.first = std::min(it->second.first, i);
        it->second.second = std::max(it->second.second, i);
    }
}

Spans spans_of(const Suggestion& s) {
    Spans out;
    for (const Move& m : s.moves) {
        touch(out, m.stream, m.from);
        if (m.before != Move::kDelete) touch(out, m.stream, m.before);
    }
    for (const Edit& e : s.edits) touch(out, e.stream, e.index);
    return out;
}

}  // namespace

bool composable(const Suggestion& a, const Suggestion& b) {
    if ((a.moves.empty() && a.edits.empty()) || (b.moves.empty() && b.edits.empty())) return false;  // advice, no patch
    const Spans sa = spans_of(a), sb = spans_of(b);
    for (const auto& [stream, x] : sa) {
        auto y = sb.find(stream);
        if (y == sb.end()) continue;
        if (!(x.second < y->second.first || y->second.second < x.first)) return false;
    }
    return true;
}

Suggestion compose(const std::vector<const Suggestion*>& parts, Tick headroom) {
    Suggestion c;
    c.kind = "combined";
    for (const Suggestion* p : parts) {
        const std::string sep = c.where.empty() ? "" : "; ";
        c.where += sep + p->kind + " at " + p->where;
        c.cause += sep + p->cause;
        c.action += sep + p->action;
        c.estimated_saving += p->estimated_saving;
        c.estimate_capped = c.estimate_capped || p->estimate_capped;
        c.moves.insert(c.moves.end(), p->moves.begin(), p->moves.end());
        c.edits.insert(c.edits.end(), p->edits.begin(), p->edits.end());
        c.ops.insert(c.ops.end(), p->ops.begin(), p->ops.end());
        c.dma_ops.insert(c.dma_ops.end(), p->dma_ops.begin(), p->dma_ops.end());
    }
    if (c.estimated_saving > headroom) {  // no change saves more than the headroom
        c.estimated_saving = headroom;
        c.estimate_capped = true;
    }
    c.ops = sorted_names(std::move(c.ops));
    c.dma_ops = sorted_names(std::move(c.dma_ops));
    return c;
}

}  // namespace xpu::analysis
