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
PatchCount count_changes(const RunData& run, const Suggestion& s);
// count_changes(run, s), kept in s (Suggestion::counted): for a finder's text, on its final
// moves and edits.
PatchCount count_and_keep_changes(const RunData& run, Suggestion& s);
// count_changes(run, s): the count kept in s where it was counted on these very moves and edits,
// else counted now (report.html: a 32-layer decode's suggestions change millions of instructions).
PatchCount counted_changes(const RunData& run, const Suggestion& s);

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
