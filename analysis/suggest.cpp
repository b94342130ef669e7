// Suggestions: local moves on each stream's dependency graph that respect sync semantics, with
// their saving estimated from the run's own timing. Built here from one finder per kind
// (analysis/suggest/finder.h); the estimates of the wait kinds: analysis/suggest/wait_remedy.cpp.
#include <algorithm>
#include <future>
#include <system_error>

#include "analysis/context.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

SuggestContext::SuggestContext(const Context& c, const Analysis& an, Planner& p)
    : cx(c),
      run(c.run),
      a(an),
      plan(p),
      hbm(c.run),
      engines(an),
      links(c.run),
      engine_queue(c.run, c.dma_caused),
      unit_idle(an),
      renamer(c.run, p),
      need_order(c.run, p),
      dma_timing(c) {}

void rank_suggestions(std::vector<Suggestion>& s, Tick run_end, std::size_t max) {
    // Below 0.01% of the run (or 10 ns) a saving is noise, not a suggestion.
    const Tick noise = std::max<Tick>(10000, run_end / 10000);
    s.erase(std::remove_if(s.begin(), s.end(), [&](const Suggestion& x) { return x.estimated_saving < noise; }), s.end());
    std::stable_sort(s.begin(), s.end(), [](const Suggestion& x, const Suggestion& y) { return x.estimated_saving > y.estimated_saving; });
    if (s.size() > max) s.resize(max);
}

namespace {

// The DMA view's "earliest possible issue": when the instruction at its hoist point issued.
void set_earliest_issue(const RunData& run, Planner& plan, Analysis& a) {
    for (DmaView& v : a.dmas) {
        const std::uint64_t p = plan.hoist_point(v.stream, v.index);
        v.earliest_issue = std::min(v.issue, run.streams[v.stream].life[p].issue);
    }
}

}  // namespace

std::vector<Suggestion> find_suggestions(const Context& cx, Analysis& a) {
    Planner plan(cx);
    set_earliest_issue(cx.run, plan, a);
    SuggestContext sc(cx, a, plan);
    sc.remedies = choose_wait_remedies(sc);
    // The finders that read only what is built run on a second thread beside the others; each
    // finder appends to a list of its own, joined in the finders' order: the same result
    // whatever the timing.
    const auto& finders = suggestion_finders();
    std::vector<std::vector<Suggestion>> found(finders.size());
    auto apart = [&] {
        for (std::size_t i = 0; i < finders.size(); ++i)
            if (finders[i]->reads_only_what_is_built()) finders[i]->find(sc, found[i]);
    };
    std::future<void> beside;
    try {
        beside = std::async(std::launch::async, apart);
    } catch (const std::system_error&) {  // no thread to be had: the same work, here, afterwards
        beside = std::async(std::launch::deferred, apart);
    }
    try {
        for (std::size_t i = 0; i < finders.size(); ++i)
            if (!finders[i]->reads_only_what_is_built()) finders[i]->find(sc, found[i]);
    } catch (...) {
        beside.wait();  // it reads sc: let it finish before sc goes
        throw;
    }
    beside.get();
    std::vector<Suggestion> out;
    for (auto& v : found)
        for (Suggestion& x : v) out.push_back(std::move(x));
    return out;
}

void make_suggestions(const Context& cx, Analysis& a, std::size_t max) {
    std::vector<Suggestion> out = find_suggestions(cx, a);
    rank_suggestions(out, cx.run.end, max);
    a.suggestions = std::move(out);
}

}  // namespace xpu::analysis
