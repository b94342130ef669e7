// The order in which a stream needs its DMAs' data, for the suggestions that hoist DMAs
// (hoist_dma, double_buffer, pipeline_collective). The dependency rules (dependencies.h) say how
// far a DMA may move up; this says how far it should: not above a DMA its stream needs sooner.
// DMA engines and HBM channels serve in arrival order, so a DMA that overtakes one needed sooner
// delays it by its own transfer. Moving each late DMA to its earliest legal point put a GEMM's
// later steps' weight loads ahead of its first step's (1000x1000x1000 with late weight loads:
// 75.7% of the planted loss recovered; 82.4% in need order). Needed-sooner first is the
// earliest-deadline-first order, the best order for a queue served first come, first served.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "analysis/dependencies.h"

namespace xpu::analysis {

class NeedOrder {
public:
    NeedOrder(const RunData& run, const Planner& plan);
    // Lowers the moves of one suggestion (hoisted DMAs, all moving up) so that no DMA ends above
    // a DMA of its stream that is needed strictly sooner (needed: first covered by a swait of
    // the stream), wherever that one ends up itself (moved in the same suggestion, or in its
    // place). A DMA its own stream never waits for (a send, a store) keeps its move and holds
    // nothing back. Moves left with nowhere to go are dropped. Deterministic: the same moves
    // give the same result.
    void keep(std::vector<Move>& moves) const;
    // Where DMA k of stream s may move up to, from `p`, if the DMAs its stream needs sooner
    // stayed in their places: just below the nearest of them in [p, k), else p. What the
    // estimates of a hoist count on before the whole suggestion is known (keep() then lets the
    // DMA pass those that move too).
    std::uint64_t floor(std::uint32_t s, std::uint64_t k, std::uint64_t p) const;

private:
    static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
    // Per stream, its DMAs in program order: (index, the first swait of the stream covering it).
    std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> need_;
};

}  // namespace xpu::analysis
