// After a hoist (hoist_dma, double_buffer) has moved the DMAs a stalled wait waits for up, the
// wait itself, and the register loads right after it that read what those DMAs brought, still
// sit right before the instructions that read the loaded registers. The DMAs now land earlier;
// the loads still issue late, and where a vector load takes longer than the work around it
// hides (a 256 KiB weight tile on xpu-2vpu.yaml or tpu-v6e-4.yaml), every reader stalls for
// the load. A compiler issues them in the work before (the previous step's matmuls).
// `--late-dma` and `--no-double-buffer` plant exactly that: the DMAs and the waits and loads
// moved next to their use, so undoing the DMAs' move alone recovered 69-75% of the loss on
// those platforms.
//
// raise_waits moves such a wait and its loads up, together and in their order, to the earliest
// place the run issued no sooner than the later of: when the hoisted DMAs are estimated to be
// done (their new issue plus their duration in the run: the wait does not stall there), and
// the wait's estimated new issue less the readers' stall (no earlier than the loads need).
// The rules (dependencies.h): the wait stays below every DMA it waits for (where the suggestion
// moved it), passes no DMA or wait on its own flag and no sset/sadd/barrier/halt; a load passes
// nothing that reads or writes its destination register, nothing whose memory access conflicts
// with its read, and no wait that orders its data other than its own. Only waits whose raisers
// are DMAs of their own stream. The estimate it adds: per wait, the readers' stall, at most how
// much earlier the loads now issue.
#pragma once

#include <optional>

#include "analysis/analysis.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

struct SuggestContext;

// The suggestion of kind `hoist_wait`: a hoist kind's finished suggestion (g.s, its texts set)
// with its waits raised as well; nothing if none can be. A suggestion of its own beside the
// hoist, not a change of it: when the DMAs land later than estimated (they now share the HBM
// with what they pass), a raised wait stalls the work it passed, and on 5 of 12 planted cases
// on xpu-2vpu.yaml and tpu-v6e-4.yaml the raise alone recovered less than the hoist alone;
// replayed side by side, the one that measures better ranks first.
std::optional<Suggestion> with_raised_waits(const SuggestContext& sc, const WaitGroup& g);

}  // namespace xpu::analysis
