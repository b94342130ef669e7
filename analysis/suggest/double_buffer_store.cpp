// double_buffer_store: waits before a staging buffer is written again, stalled on the previous
// block's write-back of it (VMEM -> HBM). Give the buffer more copies in VMEM nothing uses and
// each copy's write-backs a flag of their own, so that a block's stores wait only for the
// write-back of the copy they overwrite, kStoreCopies blocks back (the plan, its legality rule
// and its estimate: analysis/suggest/store_rename.h).
//
// A suggestion per write-back flag, the store side alone, and one more: the store side on top of
// prefetch_ahead's plan (its loads moved into the HBM's idle time, the rule of store_rename.h
// checked on the program with them moved), for the flag whose store side saves the most, where
// that is at least 1% of the run. The second is what a decode's QK^T phase needs once
// its waits are reordered: alone, prefetch_ahead's loads fill the HBM's channel queues and
// every small write-back a block waits for queues behind them (docs/analysis.md,
// "prefetch_ahead"); with more write-back buffers a block waits for a write-back further back.
//
// A kind of its own, not a case of double_buffer: that one renames the destinations of loads,
// by the pipeline steps of the waits a load's readers need, and then hoists the loads; here
// the fills are the core's own stores, the waits are for DMAs reading the buffer (write-after-
// read), and nothing of the store side moves: the waits change what they wait for. The two
// share only where the free VMEM and the unused flags are (BufferRenamer::room).
#include <iomanip>
#include <set>
#include <sstream>

#include "analysis/patch.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/prefetch_plan.h"
#include "analysis/suggest/store_rename.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class DoubleBufferStore : public SuggestionFinder {
public:
    const char* kind() const override { return "double_buffer_store"; }
    // Its plans (store_rename.h, prefetch_plan.h) read the waits' stalls, not the remedies: it
    // starts while they are chosen.
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        // With prefetch_ahead: one suggestion, for the flag whose store side alone saves the most,
        // with a staging buffer renamed, and only where the store side is estimated at 1% of the
        // run or more: below, the two together are prefetch_ahead's own suggestion again, ranked
        // above the other kinds by its loads' estimate, and take one of the replays from them
        // (the decodes with --false-dep had drop_wait's, their planted cause, not replayed, with
        // the store side at 0.04% and 0.2% of the run; on the clean decodes it is 2-10%, and 3.1%
        // after the rounds' first reorder, where prefetch_ahead's estimate is three times it).
        const Tick one_percent = sc.run.end / 100;  // of the run: the threshold the comment above explains
        std::uint16_t best = 0;
        Tick most = 0;
        std::uint64_t reserve = 0;  // the VMEM its copies take
        for (StoreRenamePlan& p : plan_store_renames(sc)) {
            const Tick t = saving(p);
            if (p.buffers && t >= one_percent && t > most) {
                most = t;
                best = p.flag;
                reserve = p.vmem_bytes;
            }
            out.push_back(suggestion(sc.run, std::move(p), nullptr));
        }
        if (!most) return;
        const PrefetchPlan ahead = prefetch_ahead_plan(sc, reserve);
        if (ahead.s.moves.empty() && ahead.s.edits.empty()) return;
        for (StoreRenamePlan& p : plan_store_renames(sc, &ahead.s, reserve, best))
            if (p.buffers) out.push_back(suggestion(sc.run, std::move(p), &ahead));
    }

private:
    static Tick saving(const StoreRenamePlan& p) {  // the largest stream's (streams run in parallel)
        Tick t = 0;
        for (const auto& [stream, x] : p.saving_on) t = std::max(t, x);
        return t;
    }
    Suggestion suggestion(const RunData& run, StoreRenamePlan&& p, const PrefetchPlan* ahead) const {
        WaitGroup g;
        g.s = std::move(p.s);
        g.s.kind = kind();
        g.saving_on = p.saving_on;
        g.ops = p.wait_ops;
        g.dma_anns = p.dma_ops;
        if (ahead) {  // its waits and loads too; the two serve different waits, so their savings add up
            for (const auto& [stream, t] : ahead->saving_on) g.saving_on[stream] += t;
            g.ops.insert(ahead->wait_ops.begin(), ahead->wait_ops.end());
        }
        finish_group(g);
        if (ahead) steps_where(g);  // on top of prefetch_ahead, where names the steps, as prefetch_ahead's
        std::ostringstream cause, action;
        cause << p.waits << " waits for the last write-back of a staging buffer before writing it again (" << dma_list(g) << ")";
        if (ahead) cause << "; " << ahead->waits << " on loads the HBM had idle time for";
        action << "multi-buffer the write-back: " << kStoreCopies - 1 << " more copies of " << p.buffers << " staging buffer"
               << (p.buffers == 1 ? "" : "s") << " (" << std::fixed << std::setprecision(1) << double(p.buffer_bytes) / 1024
               << " KiB) in free VMEM, each copy's write-backs on a flag of its own (" << p.generations << " blocks, "
               << p.full_waits << " waits still for all)";
        if (ahead) action << "; and prefetch_ahead's " << ahead->dmas << " loads";
        action << " (" << changes_text(count_and_keep_changes(run, g.s)) << ")";
        g.s.cause = cause.str();
        g.s.action = action.str();
        return std::move(g.s);
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> double_buffer_store_finder() { return std::make_unique<DoubleBufferStore>(); }

}  // namespace xpu::analysis
