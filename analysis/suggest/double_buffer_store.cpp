// double_buffer_store: waits before a staging buffer is written again, stalled on the previous
// block's write-back of it (VMEM -> HBM). Give the buffer more copies in VMEM nothing uses and
// each copy's write-backs a flag of their own, so that a block's stores wait only for the
// write-back of the copy they overwrite, kStoreCopies blocks back (the plan, its legality rule
// and its estimate: analysis/suggest/store_rename.h).
//
// A kind of its own, not a case of double_buffer: that one renames the destinations of loads,
// by the pipeline steps of the waits a load's readers need, and then hoists the loads; here
// the fills are the core's own stores, the waits are for DMAs reading the buffer (write-after-
// read), and nothing moves: the waits change what they wait for. The two share only where the
// free VMEM and the unused flags are (BufferRenamer::room).
#include <iomanip>
#include <sstream>

#include "analysis/suggest/finder.h"
#include "analysis/suggest/store_rename.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class DoubleBufferStore : public SuggestionFinder {
public:
    const char* kind() const override { return "double_buffer_store"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (StoreRenamePlan& p : plan_store_renames(sc)) {
            WaitGroup g;
            g.s = std::move(p.s);
            g.s.kind = kind();
            g.saving_on = p.saving_on;
            g.ops = p.wait_ops;
            g.dma_anns = p.dma_ops;
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << p.waits << " waits at " << at << " stalled until the previous write-back of their staging buffer landed, "
                  << "before the buffer is written again (" << dma_list(g) << ")";
            action << "multi-buffer the write-back: give " << p.buffers << " staging buffer" << (p.buffers == 1 ? "" : "s") << " ("
                   << std::fixed << std::setprecision(1) << double(p.buffer_bytes) / 1024 << " KiB) " << kStoreCopies - 1
                   << " more copies in free VMEM, the blocks' stores and write-backs in turn, each copy's write-backs on a flag "
                   << "of its own, so that each wait waits only for the write-back of the copy it overwrites ("
                   << p.generations << " blocks; " << p.full_waits << " waits still wait for all)";
            g.s.cause = cause.str();
            g.s.action = action.str();
            out.push_back(std::move(g.s));
        }
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> double_buffer_store_finder() { return std::make_unique<DoubleBufferStore>(); }

}  // namespace xpu::analysis
