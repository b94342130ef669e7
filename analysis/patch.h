// Proof by replay, step one: the trace with one suggestion applied (its moves: instructions
// moved up or down in their stream, or deleted; its edits: instructions rewritten in place). Re-simulating the patched trace measures the
// gain the analysis estimated.
#pragma once

#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

// Writes the run's trace with `s` applied to `path` (atomically, via the trace writer).
// Returns the number of instructions moved, deleted or rewritten (edits). Throws std::runtime_error naming the
// file on a write error.
std::size_t write_patched_trace(const RunData& run, const Suggestion& s, const std::string& path);

}  // namespace xpu::analysis
