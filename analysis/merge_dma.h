// merge_dma: runs of small DMAs that one DMA could replace, and what merging them would save.
//
// The rule (legality). A run is two or more DMAs of one stream that
//  - go to the same engine (unit), raise the same completion flag, have the same source and
//    destination spaces and chips, do not reduce (no dtype), and are contiguous in both source
//    and destination (each piece starts where the previous one ended);
//  - follow each other in program order with no swait, sset, sadd, barrier or halt between
//    them and no other DMA on their engine; any other instruction between them must not
//    conflict in memory (dependencies.h) with a later piece (the merged DMA issues at the first
//    piece's place: the later pieces' bytes move up past those instructions, as a hoist does);
//  - raise a flag that is monotone over the whole trace: on its chip, every instruction that
//    touches it is a DMA adding a positive value or a swait with cond ge or gt; no sset or sadd.
// The merged DMA is the first piece with bytes = the run's bytes and val = the sum of the
// pieces' increments, so the flag reaches the same values at the end: no wait needs a new
// value. What changes is that the intermediate values are skipped (the flag jumps by the sum
// when the whole run lands). On a monotone flag every wait is ge/gt, so a wait satisfied by
// some value is satisfied by every larger one: each wait of the patched program is still
// satisfied, never earlier than all the data of the run it may cover has landed, and the
// program cannot deadlock (every raise is issued no later in program order than before, and a
// DMA's completion does not depend on any wait).
// The rule (speed): a wait that in this run observed an intermediate value of a run (it covers
// some pieces but not all, dependencies.h) would now wait for the whole run; runs are cut there,
// so that every wait covers all of a run's pieces or none of them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/dependencies.h"

namespace xpu::analysis {

struct MergeRun {
    std::uint32_t stream = 0;
    std::vector<std::uint64_t> pieces;  // program order; pieces[0] becomes the merged DMA, the rest go
    std::uint64_t bytes = 0;            // the run's bytes
    std::int64_t value = 0;             // the merged DMA's flag increment: the pieces' summed
};

// Every run of the trace that the rule above allows to merge, in stream then program order.
std::vector<MergeRun> merge_runs(const Context& cx, const Planner& plan);

// The merged DMA of a run (its first piece with the run's bytes and summed increment).
Instruction merged_dma(const RunData& run, const MergeRun& r);

// The merge_dma suggestion of this run (runs whose pieces cost time): no edits if none.
// hbm_idle(chip, a, b): the time in [a, b] the chip's HBM could have moved more data (may be empty).
Suggestion merge_suggestion(const Context& cx, const Planner& plan, const std::function<Tick(int, Tick, Tick)>& hbm_idle);

}  // namespace xpu::analysis
