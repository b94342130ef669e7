// reorder across the stream: stretches of code where the core waited on results while later,
// independent work sat behind the stall in program order. The typical case is a loop whose
// iterations each run a dependent chain (a softmax row's load, reduce, exponential, reduce,
// scale, store), one iteration after the other: the units' pipelines (a vector unit's ALU,
// transcendental, cross-lane and load/store pipes; a matrix unit's push and stream) then work one
// at a time. List-scheduling the stretch against the machine model of the run
// (analysis/schedule.h) interleaves independent iterations so that the pipelines work side by
// side, as a compiler's software pipelining does, and moves loads ahead of work that does not
// need them.
//
// Why not reorder's windows at waits (reorder.cpp): such a loop has no wait inside it (its data
// is in VMEM already); a window that starts at a wait and ends past its first use is a few
// instructions there.
//
// When (the finding): a window of the stream (cut at multiples of kWindow instructions) whose
// operand waits (the core stalled with the instruction in hand, its source registers not yet
// written or its destination still being read: the issue gap's Operands part,
// traces/issue_stall.h) add up to at least kMinStallPerMille of the window's span in the run,
// and whose list schedule the model finishes sooner than program order by more than the model's
// error (as reorder.cpp, 1% of the window's modelled span). At most kMaxWindows windows (2 M
// instructions) are scheduled, those with the most operand-wait time: the analysis' cost stays
// bounded on long traces.
// The change: each such window in its scheduled order (a permutation; the scheduler's edges are
// the dependency rules of dependencies.h: registers, memory, sync semantics).
// The estimate: per stream, the sum over its windows of the model's finish in program order
// less in the new order, each at most the HBM time idle over the window in the run (the
// roofline: where the HBM is busy throughout, issuing work sooner only queues it sooner; the
// model, which takes each DMA's duration from the run, would count that as a gain), a window
// with none left as it is; the suggestion the largest over streams (they run side by side). A
// model of the core and its units, not a replay: the verification measures.
// Windows are cut at fixed places, so the patched trace's windows hold the same instructions: a
// second analysis schedules its own order again, and finds a remainder at most (the scheduler is
// greedy and the patched run's timing is new; tests/e2e/reorder_stream.sh).
#pragma once

#include "analysis/analysis.h"

namespace xpu::analysis {

struct SuggestContext;

// The reorder across the stream in `out` (kind "reorder"); false when no window gains.
bool schedule_stream(const SuggestContext& sc, Suggestion& out);

}  // namespace xpu::analysis
