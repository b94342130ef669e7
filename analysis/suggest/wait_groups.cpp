#include "analysis/suggest/wait_groups.h"

#include <algorithm>
#include <cstring>

#include "analysis/names.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// The group of remedy r's step, counting the wait and its saving.
WaitGroup& group_of(std::map<std::string, WaitGroup>& groups, const WaitRemedy& r) {
    const std::string where = step_of(r.ann);
    WaitGroup& g = groups[where];
    g.s.kind = r.kind;
    g.s.where = where;
    g.saving_on[r.wait->stream] += r.saving;
    g.ops.insert(r.ann);
    ++g.waits;
    g.served.push_back({r.wait->stream, r.wait->index});
    return g;
}

// The groups of the remedies `hoists_of` gives hoists for (null: not in a group), as `kind`.
template <typename HoistsOf>
std::map<std::string, WaitGroup> group_by_step(const SuggestContext& sc, const char* kind, HoistsOf hoists_of) {
    std::map<std::string, WaitGroup> groups;
    for (const WaitRemedy& r : sc.remedies) {
        const std::vector<Hoist>* hoists = hoists_of(r);
        if (!hoists) continue;
        WaitGroup& g = group_of(groups, r);
        g.s.kind = kind;
        for (const Hoist& h : *hoists) {
            if (h.renamed) g.renamed.insert({h.stream, h.from});
            if (g.moved.insert({h.stream, h.from}).second) {
                g.s.moves.push_back({h.stream, h.from, h.to});
                ++g.dmas;
                g.passed += h.from - h.to;
                g.dma_anns.insert(sc.run.annotation(sc.run.streams[h.stream].code[h.from]));
            }
        }
    }
    for (auto& [step, g] : groups) keep_need_order(sc, g);
    return groups;
}

}  // namespace

void keep_need_order(const SuggestContext& sc, WaitGroup& g) {
    sc.need_order.keep(g.s.moves);
    g.dmas = g.s.moves.size();
    g.passed = 0;
    for (const Move& m : g.s.moves) g.passed += m.from - m.before;
}

std::map<std::string, WaitGroup> group_hoists(const SuggestContext& sc, const char* kind) {
    return group_by_step(sc, kind, [&](const WaitRemedy& r) { return std::strcmp(r.kind, kind) == 0 ? &r.hoists : nullptr; });
}

std::map<std::string, WaitGroup> group_renamed_alternatives(const SuggestContext& sc) {
    return group_by_step(sc, "double_buffer",
                         [](const WaitRemedy& r) { return r.renamed_alternative.empty() ? nullptr : &r.renamed_alternative; });
}

std::map<std::string, WaitGroup> group_sinks(const SuggestContext& sc, const char* kind) {
    std::map<std::string, WaitGroup> groups;
    for (const WaitRemedy& r : sc.remedies) {
        if (std::strcmp(r.kind, kind) != 0) continue;
        WaitGroup& g = group_of(groups, r);
        const WaitStall& w = *r.wait;
        if (g.moved.insert({w.stream, w.index}).second) {
            g.s.moves.push_back({w.stream, w.index, r.redundant ? Move::kDelete : r.stop});
            if (!r.redundant) g.passed += r.stop - w.index - 1;
            g.held.push_back({w.stream, w.index, r.stop});
        }
    }
    return groups;
}

std::string finish_group(WaitGroup& g) {
    for (const auto& [stream, t] : g.saving_on) g.s.estimated_saving = std::max(g.s.estimated_saving, t);
    const std::vector<std::string> ops(g.ops.begin(), g.ops.end());
    g.s.ops = sorted_names(ops);
    g.s.dma_ops = sorted_names(std::vector<std::string>(g.dma_anns.begin(), g.dma_anns.end()));
    if (g.ops.size() == 1) g.s.where = *g.ops.begin();
    else g.s.where = where_text(ops);  // "*/step (n ops)", "layer*/.../step x32", "*/step (n ops in L layers)"
    return g.s.where.empty() ? "(no annotation)" : g.s.where;
}

std::string steps_where(WaitGroup& g) {
    if (g.ops.size() > 1) {
        std::set<std::string> steps;
        for (const std::string& op : g.ops) steps.insert(step_of(op));
        std::string at;
        for (const std::string& st : steps) at += (at.empty() ? "*/" : ", */") + st;
        g.s.where = at + " (" + std::to_string(g.ops.size()) + " ops)";
    }
    return g.s.where.empty() ? "(no annotation)" : g.s.where;
}

std::string dma_list(const WaitGroup& g) {
    return rolled_list(std::vector<std::string>(g.dma_anns.begin(), g.dma_anns.end()), kListChars);
}

}  // namespace xpu::analysis
