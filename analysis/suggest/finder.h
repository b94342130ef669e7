// Suggestions, one finder per kind.
//
// make_suggestions (analysis/suggest.cpp) builds a SuggestContext once per run (the Planner,
// the idle-time bounds of analysis/suggest/loads.h, the remedy chosen for each stalled wait),
// runs every finder of the list in analysis/suggest/finders.cpp, and ranks what they found.
// Each finder lives in analysis/suggest/<kind>.cpp and returns self-contained suggestions: its
// kind, where, the finding and the action as text, the estimated saving, and the moves and
// edits that `xpu_analyze --apply` writes into the patched trace (analysis/patch.h). Finders do
// not rank: the ranking (noise floor, order by saving, the cap) is a step of its own.
//
// Adding a kind: a new file analysis/suggest/<kind>.cpp defining a SuggestionFinder, and one
// line in the list (finders.cpp). A remedy for stalled waits competes with the others for each
// wait: it also has its estimate in analysis/suggest/wait_remedy.cpp, which picks the best.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "analysis/dependencies.h"
#include "analysis/double_buffer.h"
#include "analysis/suggest/loads.h"
#include "analysis/suggest/need_order.h"
#include "analysis/suggest/wait_remedy.h"

namespace xpu::analysis {

struct PrefetchPlan;

// What every finder reads, built once per run.
struct SuggestContext {
    SuggestContext(const Context& cx, const Analysis& a, Planner& plan);
    const Context& cx;
    const RunData& run;
    const Analysis& a;  // the units' accounted timelines
    Planner& plan;      // the dependency rules (its hoist points are cached as they are asked)
    const HbmLoad hbm;
    const EngineLoad engines;
    const LinkLoad links;
    const EngineQueue engine_queue;  // per engine, the DMAs a core waited for, in issue order
    const UnitIdle unit_idle;
    const BufferRenamer renamer;     // double_buffer's buffer copies
    const NeedOrder need_order;      // how far a hoisted DMA should move (not past DMAs needed sooner)
    const DmaTiming dma_timing;
    std::vector<WaitRemedy> remedies;  // per stalled wait with a remedy, the one chosen (program order per stream)
    // prefetch_ahead's plan, made once when first asked for (prefetch_plan.h: prefetch_ahead_plan):
    // prefetch_ahead and double_buffer_store both start from it. Shared by the two contexts of
    // find_suggestions (one per thread): the first to ask makes it, the other waits for it.
    struct PrefetchAheadOnce {
        std::once_flag made;
        std::shared_ptr<const PrefetchPlan> plan;
    };
    std::shared_ptr<PrefetchAheadOnce> prefetch_ahead_cache = std::make_shared<PrefetchAheadOnce>();
};

class SuggestionFinder {
public:
    virtual ~SuggestionFinder() = default;
    // The kind of suggestion it finds: "hoist_dma", "merge_dma", ...
    virtual const char* kind() const = 0;
    // Appends the suggestions of its kind (unranked; any estimate, even below the noise floor).
    virtual void find(const SuggestContext& sc, std::vector<Suggestion>& out) const = 0;
    // find_suggestions runs the finders on worker threads, each worker with a SuggestContext of
    // its own: its own Planner and BufferRenamer, whose caches (hoist points, renamings)
    // memoise what the run and the rules determine, so that every context gives the same
    // answers (prefetch_ahead's plan, the same in all, is made once for all). Which worker runs
    // which finder depends on the timing, what each finds does not.
    // Whether find() reads SuggestContext::remedies: one that does not may start before the
    // remedies are chosen (on another worker).
    virtual bool reads_remedies() const { return true; }
};

// A suggestion's places: `ops`, the ops it applies at (its waits'), `dma_ops`, those of the DMAs
// its finding names, each in natural order (analysis/names.h), and `where` rolled up from `ops`.
void set_places(Suggestion& s, const std::set<std::string>& ops, const std::set<std::string>& dma_ops);

// Every finder, in the order their suggestions are listed before ranking (which breaks ties in
// the estimated saving: the ranking's sort is stable).
const std::vector<std::unique_ptr<SuggestionFinder>>& suggestion_finders();
// The order the workers take them in: indices into suggestion_finders(), the longest first
// (finders.cpp), so that no long one starts last while the other workers sit idle.
const std::vector<std::size_t>& finder_work_order();

// What every finder finds on the run, in the list's order, unranked (make_suggestions ranks
// it). Also sets each DMA view's earliest possible issue (its hoist point's).
std::vector<Suggestion> find_suggestions(const Context& cx, Analysis& a);

// Ranking, apart from finding: drops what saves less than the noise floor (0.01% of the run,
// at least 10 ns), orders by estimated saving (largest first, stable), keeps at most `max`:
// each kind's best estimate first (variants apart), then the best estimates.
void rank_suggestions(std::vector<Suggestion>& s, Tick run_end, std::size_t max);

}  // namespace xpu::analysis
