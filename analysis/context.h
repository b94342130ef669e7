// What the passes of analyze() share: the run's index, the cores' timelines, and the stall
// each wait suffered and each DMA caused (computed once by the core pass).
#pragma once

#include <vector>

#include "analysis/analysis.h"
#include "analysis/attribution.h"
#include "analysis/index.h"

namespace xpu::analysis {

struct WaitStall {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    Tick stall = 0;   // [ready, issue]: the wait itself
    std::uint32_t raise = kNone, raiser_dma = kNone;
};

struct Context {
    explicit Context(const RunData& r) : run(r), ix(r) {}
    const RunData& run;
    RunIndex ix;
    // Per stream, tiling [0, end]; the unit pass then moves them into the cores' UnitAccounts
    // (Analysis::units[stream].timeline), where later passes read them.
    std::vector<std::vector<Segment>> core_segments;
    std::vector<CauseTimes> core_time;                 // per stream: its segments' time per cause
    std::vector<Tick> dma_caused;                      // per DMA record: core time waiting on it
    std::vector<WaitStall> waits;                      // every swait that stalled, program order per stream
};

// Labels of the core of `stream` over [b, e), appended to out (clipped).
void core_labels(const Context& cx, std::uint32_t stream, Tick b, Tick e, std::vector<Segment>& out);

// Analysis::critical_path holds the latest `keep` steps with their texts (AnalyzeOptions::
// path_steps_kept); critical_path_steps and critical_by_cause count them all.
void find_critical_path(const Context& cx, Analysis& a, std::size_t keep);
void make_suggestions(const Context& cx, Analysis& a, std::size_t max);

}  // namespace xpu::analysis
