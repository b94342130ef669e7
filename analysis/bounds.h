// The run's lower bounds: how fast the same work could possibly run on the same machine, from
// what the run moved and computed, whatever the order of its instructions. Every suggestion
// keeps the work (the bytes each HBM and link moves, the operations each unit executes), so no
// suggestion can make the run end before the largest bound: the headroom (end - bound) caps every
// estimated saving, and the report states it ("5.8% above its HBM bound: at most 0.674 ms can
// be saved").
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace xpu::analysis {

// Bound and RunBounds are in analysis.h (Analysis holds them).

// HBM: the bytes each chip's HBM controllers moved (as pieces on their channels, a reducing
// write counted twice) over their peak bandwidth. Link: the bytes each inter-chip link carried,
// with the least packet overhead they take on the wire, over its bandwidth, plus one hop latency
// (the last of them still has to arrive). Compute: the summed streaming time of each matrix unit's matmuls (their
// shapes set it, not their order).
RunBounds run_bounds(const RunData& run, Tick end);

// Picoseconds per byte at the summed peak of chip's HBM controllers, the rate of the HBM bound
// (0: no HBM of that chip in the log). Also what the window scheduler and the chain bound charge
// a DMA for the bytes it moves through that HBM.
double hbm_ps_per_byte(const RunData& run, int chip);

// The span of each matrix unit: its matmuls' summed streaming time (the compute bound) plus the
// least chain time before any of them can start and the least chain after any of them
// (chain_bound.h). Whichever matmul a unit streams first, it starts no sooner than the first;
// whichever streams last, what depends on it still follows: "span" for the longest.
struct ChainBound;
void add_span_bound(RunBounds& r, const RunData& run, const ChainBound& chain, Tick end);

// Adds a bound found elsewhere (the dependency chain: chain_bound.h) and settles which one limits.
void add_bound(RunBounds& r, Bound b, Tick end);

// Caps every estimate at the headroom (no suggestion can save more), drops those left at 0, ranks
// them by estimate and numbers them (Suggestion::candidate).
void cap_estimates(const RunBounds& b, std::vector<Suggestion>& s);
// ", capped at the headroom" for an estimate the cap cut (Suggestion::estimate_capped: a bound, not
// the finder's figure), else "": what every report writes beside the estimate.
const char* capped_note(const Suggestion& s);

// "this run is 5.8% above its HBM bound (chip0 HBM, 11.722 ms): at most 674.230 us can be saved"
std::string describe_headroom(const RunBounds& b, Tick end);

}  // namespace xpu::analysis
