// Suggestions: local moves on each stream's dependency graph that respect sync semantics, with
// their saving estimated from the run's own timing. Built here from one finder per kind
// (analysis/suggest/finder.h); the estimates of the wait kinds: analysis/suggest/wait_remedy.cpp.
#include <algorithm>
#include <atomic>
#include <future>
#include <set>

#include "analysis/beside.h"
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
    if (s.size() <= max) return;
    // The cap keeps each kind's best first (by estimate, variants apart), then the best estimates:
    // a kind whose estimate runs low is not crowded out by another kind's many suggestions before
    // the verification can measure it (a llama2-13b decode layer with a planted false dependency:
    // drop_wait, estimated 4.7 us, measured 30.6 us, was 11th behind four reorders and three
    // variants).
    std::vector<bool> keep(s.size(), false);
    std::set<std::string> kinds;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.size() && kept < max; ++i)
        if (!s[i].variant && kinds.insert(s[i].kind).second) keep[i] = true, ++kept;
    for (std::size_t i = 0; i < s.size() && kept < max; ++i)
        if (!keep[i]) keep[i] = true, ++kept;
    std::size_t w = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (keep[i]) {
            if (w != i) s[w] = std::move(s[i]);
            ++w;
        }
    s.resize(w);
}

namespace {

// The DMA view's "earliest possible issue": when the core reached its hoist point.
void set_earliest_issue(const RunData& run, Planner& plan, Analysis& a) {
    for (DmaView& v : a.dmas) {
        const std::uint64_t p = plan.hoist_point(v.stream, v.index);
        v.earliest_issue = std::min(v.issue, run.streams[v.stream].placed_issue(p));
    }
}

}  // namespace

std::vector<Suggestion> find_suggestions(const Context& cx, Analysis& a) {
    Planner plan(cx);
    set_earliest_issue(cx.run, plan, a);
    // The finders run on workers (finder.h), taken from one list in finder_work_order(), each
    // worker with a context of its own built on its thread, with a copy of the Planner (and the
    // hoist points asked so far); the calling thread is a worker too, after it has chosen the
    // remedies, which are chosen once and handed over; prefetch_ahead's plan is made once for
    // all. Each finder appends to a list of its own, joined in the list's order: the same result
    // whatever the timing and however many workers there are.
    // Two workers at most: each context holds a Planner and a renamer (memory that grows with the
    // trace), and the longest finder takes a quarter of the work on a decode, so more workers
    // would gain little.
    const auto& finders = suggestion_finders();
    const auto& order = finder_work_order();
    std::vector<std::vector<Suggestion>> found(finders.size());
    std::atomic<std::size_t> next{0};
    std::promise<std::vector<WaitRemedy>> chosen;
    std::shared_future<std::vector<WaitRemedy>> remedies = chosen.get_future().share();
    auto prefetch_ahead = std::make_shared<SuggestContext::PrefetchAheadOnce>();  // (one for all)
    // Takes finders from the list until it is empty.
    auto work = [&](SuggestContext& sc, bool have_remedies) {
        for (std::size_t x; (x = next.fetch_add(1)) < order.size();) {
            const std::size_t i = order[x];
            if (finders[i]->reads_remedies() && !have_remedies) {
                sc.remedies = remedies.get();
                have_remedies = true;
            }
            finders[i]->find(sc, found[i]);
        }
    };
    Planner plan_beside(plan);
    std::future<void> apart = beside([&] {  // (without a thread: here, afterwards, with nothing left to take)
        SuggestContext sc(cx, a, plan_beside);
        sc.prefetch_ahead_cache = prefetch_ahead;
        work(sc, false);
    });
    bool handed = false;
    try {
        SuggestContext sc(cx, a, plan);
        sc.prefetch_ahead_cache = prefetch_ahead;
        sc.remedies = choose_wait_remedies(sc);
        chosen.set_value(sc.remedies);
        handed = true;
        work(sc, true);
    } catch (...) {
        // The worker reads plan_beside and may wait for the remedies: it gets the error instead
        // of them, takes nothing more, and finishes before what it reads goes.
        next = order.size();
        if (!handed) chosen.set_exception(std::current_exception());
        apart.wait();
        throw;
    }
    apart.get();
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
