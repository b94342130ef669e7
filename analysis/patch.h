// Proof by replay, step one: the trace with one suggestion applied (its moves: instructions
// moved up or down in their stream, or deleted; its edits: instructions rewritten in place). Re-simulating the patched trace measures the
// gain the analysis estimated.
#pragma once

#include <functional>
#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

// What a suggestion changes, each instruction counted once: deleted; else moved, if it changes
// place (its position among the stream's instructions that are not deleted differs from the
// original's: a list-scheduled window moves every instruction of the window, but those the new
// order leaves where they were do not change place); else rewritten (edited). The finders'
// texts (reorder: "N instructions change place") and xpu_analyze --apply's message count alike.
struct PatchCount {
    std::size_t moved = 0, deleted = 0, rewritten = 0;
    std::size_t inserted = 0;  // new instructions (an edit's `then`: split_dma's and pipeline_store's pieces)
    std::size_t total() const { return moved + deleted + rewritten + inserted; }
};
PatchCount count_changes(const RunData& run, const Suggestion& s);

// "12 instructions change place, 3 dropped, 1 rewritten, 8 inserted" (the parts that are not 0; "no
// instruction changes").
std::string changes_text(const PatchCount& c);

// The trace with `s` applied, stream by stream: stream_begin(stream), then visit(stream, index,
// edit) for each instruction that stays, in its new order (index: its place in the original;
// edit: its new fields, or null). Throws std::runtime_error on a move or edit outside the trace.
void visit_patched(const RunData& run, const Suggestion& s, const std::function<void(std::uint32_t)>& stream_begin,
                   const std::function<void(std::uint32_t, std::uint64_t, const Edit*)>& visit);

// Writes the run's trace with `s` applied to `path` (atomically, via the trace writer).
// Returns what it changed (count_changes). Throws std::runtime_error naming the file on a
// write error.
PatchCount write_patched_trace(const RunData& run, const Suggestion& s, const std::string& path);

}  // namespace xpu::analysis
