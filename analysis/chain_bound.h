// The data-dependency chain bound: the longest chain of true data dependencies of a stream, each
// link taking the least time its instruction can take, whatever else runs.
//
// Links: a register read after the write that produced it (the producer's completion); a read of
// memory (VMEM or HBM, per chip) after the DMA or store that wrote it; a matmul after the last
// weight push on its matrix unit. Least times: a DMA that touches HBM moves its bytes at no more
// than the HBM's peak of its chip (at least bytes / peak, its own transfer alone; split_dma's
// pieces share that HBM, so together no less), but a write-back out of VMEM nothing (pipeline_store
// issues its pieces as their bytes are written, the last one possibly small), another DMA
// nothing; a unit instruction its pipeline occupancy in the run (shape over the unit's rate, not
// queueing); everything else nothing. Waits, anti-dependencies and buffer reuse are left out:
// suggestions may drop a wait, rename a buffer or move instructions, but keep every true data
// dependency (their legality rules, dependencies.h), so no suggestion can make a stream end
// before this chain does. Streams are followed in program order one after another; data another
// stream produces counts only once that stream has been followed (a later one contributes
// nothing), which can only lower the bound.
#pragma once

#include <string>

#include "analysis/context.h"

namespace xpu::analysis {

struct ChainBound {
    Tick time = 0;
    std::string where;  // the stream whose chain is longest: "chip0.core0"
};

ChainBound data_chain_bound(const Context& cx);

}  // namespace xpu::analysis
