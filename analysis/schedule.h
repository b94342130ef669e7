// List scheduling of a window of one stream, for the `reorder` suggestion.
//
// The dependency graph of the window follows the rules of dependencies.h: registers (read after
// write, write after read, write after write), memory (overlapping accesses, one a write), and
// sync semantics (nothing crosses sset/sadd/barrier/halt; an instruction moves above a swait
// only if it touches nothing the wait's raisers wrote or read and does not raise its flag; a
// DMA stays above the waits on its flag).
//
// The order is chosen against a machine model of the core and its units built from the run
// itself: the core issues in order, one instruction per issue slot, once its source registers
// are complete and the registers it writes have been read (the core's scoreboard); a unit
// accepts an instruction when its queue has room (the depth the run showed) and runs each
// pipeline in order (matrix unit: weight push, LHS stream, result pop; vector unit: ALU,
// transcendental, cross-lane, load/store) for the occupancy and latency each instruction showed
// in the run; a matmul starts once the push before it has loaded, a push once the previous
// tile's first matmul has started (double buffering); a DMA completes as long after its issue
// as it did in the run; a swait passes when its raisers have completed (as measured, or as
// modelled if they are in the window). Greedy list scheduling: the next instruction is, among
// those whose predecessors are placed, one that can issue earliest, and among those the one
// with the longest path to the end of the window (dependencies plus the pipeline time queued
// behind it), so that the bottleneck unit is fed first and other work fills the slots it leaves.
// That path is measured two ways (through every edge, or through true data dependencies only:
// schedule.cpp, heights), and of the two orders the one kept is the one the model finishes
// sooner together with as many instructions after the window again, in program order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/context.h"
#include "analysis/dependencies.h"

namespace xpu::analysis {

// A window's modelled gain counts only above this share of the window's span as the model times
// it in program order: replaying that order, the model lands within 2% of the simulator on the
// planted runs' windows (31 ns late on a ~4 us window of the planted GEMM, docs/analysis.md), so a
// gain below 1% is within its error, not a finding (between 1 and 2%, replay decides).
// The model's span, not the run's: where the run stalled on what the model leaves out, such as a
// queue of 4 KiB DMAs, the measured span is 30 times the modelled one and the gain is no smaller
// for that.
// After a GEMM 999x1777x513's --bad-order reorder, a window at a wait that stalled 0.7 ns found
// 19 ns over the order the reorder had just written (0.35% of its 5.5 us; measured 15 ns), and
// the patched run proposed the same reorder again. A wait's stall is no test: on a 2-layer
// llama2-7b batch-8 decode with --bad-order, a window at a wait that stalled 0.7 ns gains 24 us
// (58% of its span; 97.3% of the loss recovered with it, 81.8% without).
// Used by both reorder windows (at waits: suggest/reorder.cpp; across the stream:
// suggest/stream_schedule.cpp).
inline constexpr Tick kModelErrorPerMille = 10;

struct WindowSchedule {
    std::vector<std::uint64_t> order;  // the window's instruction indices in their new order
    // Finish: the latest issue or completion of the window's instructions.
    Tick modelled_before = 0;          // the model's finish of the window in program order
    Tick modelled_after = 0;           // ... and in the new order
    Tick start = 0, measured = 0;      // the run's issue of the window's first instruction, and its finish
};

class WindowScheduler {
public:
    // How the window's memory dependencies are found. Pages (the default): accesses indexed by
    // 4 KiB page, an access dropped from a page once a later write covers its part of it (the
    // graph keeps its transitive closure, which is all the schedule depends on). AllPairs:
    // every access compared with every earlier one, an edge per conflicting pair; the
    // reference the tests hold Pages to (quadratic: small windows only).
    enum class MemoryEdges { Pages, AllPairs };
    WindowScheduler(const Context& cx, const Planner& plan, MemoryEdges memory_edges = MemoryEdges::Pages);
    ~WindowScheduler();
    // List-schedules [begin, end) of stream s. An empty order if the window cannot be modelled
    // (an instruction of it never issued in the run).
    WindowSchedule schedule(std::uint32_t s, std::uint64_t begin, std::uint64_t end);

private:
    const Context& cx_;
    const Planner& plan_;
    MemoryEdges memory_edges_;
    std::vector<unsigned> queue_depth_;  // per unit, the most the run showed so far
    std::vector<std::vector<Tick>> waiting_;  // measure_queue_depths' scratch
    void measure_queue_depths(std::uint32_t s, std::uint64_t from, std::uint64_t to);
};

// The dependency graph the scheduler builds for [begin, end) of stream s: for each instruction
// of the window (by position), the positions that must stay after it. For the tests, which
// hold MemoryEdges::Pages to AllPairs.
std::vector<std::vector<std::uint32_t>> window_dependencies(const Context& cx, const Planner& plan, std::uint32_t s, std::uint64_t begin,
                                                            std::uint64_t end, WindowScheduler::MemoryEdges memory_edges);

}  // namespace xpu::analysis
