// prefetch_ahead: loads a stalled wait waits for, moved into the time the HBM idled before they
// were needed, each into a buffer of its own in VMEM nothing uses (the plan, its rules and its
// estimate: analysis/suggest/prefetch_plan.h). Where hoist_dma stops at the buffer's previous
// readers (the previous step's or the previous op's), this one crosses op boundaries: the next
// op's weights load during a vector pass, a matmul phase's loads run as far ahead as the HBM
// has room for them.
#include <iomanip>
#include <set>
#include <sstream>

#include "analysis/names.h"
#include "analysis/patch.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/prefetch_plan.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class PrefetchAhead : public SuggestionFinder {
public:
    const char* kind() const override { return "prefetch_ahead"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        PrefetchPlan p = prefetch_ahead_plan(sc);  // a copy: its suggestion takes the moves
        if (p.s.moves.empty() && p.s.edits.empty()) return;
        WaitGroup g;
        g.s = std::move(p.s);
        g.s.kind = kind();
        g.saving_on = p.saving_on;
        g.ops = p.wait_ops;
        g.dma_anns = p.dma_ops;
        finish_group(g);
        // One suggestion for every step it serves (its flags and counts are one plan).
        const std::string at = steps_where(g);
        auto mib = [](std::uint64_t b) {
            std::ostringstream o;
            o << std::fixed << std::setprecision(1) << double(b) / (1 << 20) << " MiB";
            return o.str();
        };
        std::ostringstream cause, action;
        cause << p.waits << " waits at " << at << " on loads the HBM had idle time to move earlier (" << dma_list(g) << ")";
        action << "prefetch ahead: load " << p.dmas << " DMAs (" << mib(p.bytes)
               << ") earlier, where the HBM idled before they were needed, each into a buffer of its own in unused VMEM (at most "
               << mib(p.peak_vmem) << " at once) with its reads renamed and a flag of its own (" << changes_text(count_and_keep_changes(sc.run, g.s))
               << ")";
        g.s.cause = cause.str();
        g.s.action = action.str();
        out.push_back(std::move(g.s));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> prefetch_ahead_finder() { return std::make_unique<PrefetchAhead>(); }

}  // namespace xpu::analysis
