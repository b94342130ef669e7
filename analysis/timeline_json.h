// timeline.json: the run in Chrome trace-event format (JSON object form), which Perfetto's UI
// (ui.perfetto.dev) and chrome://tracing load. A process per chip (and one for the links and
// units on no chip); per core a track of its stalls (from its UnitAccount timeline, named by
// cause) and tracks of its instructions (issue to complete, named by annotation); a track per
// unit (its UnitOps, start to end), per DMA engine (each DMA, start to complete, named by the
// DMA instruction's annotation) and per inter-chip link (its transactions); the Series as
// counters. Slices that overlap in time go to extra tracks ("lanes": "NAME (2)", ...), since the
// format requires the slices of one track to nest. Past `max_slices_per_track`, a track's slices
// are merged (runs of one name; then groups of runs) and the file's metadata says where.
// ts/dur are microseconds with 6 decimals (exact ps). Streamed: the file is never held whole
// in memory. Deterministic.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/analysis.h"
#include "analysis/run_data.h"

namespace xpu::analysis {

// How much of the run timeline.json shows (xpu_analyze and sim_main --timeline):
//  full     every slice, up to max_slices_per_track per track (then merged, as below);
//  summary  at most summary_slices slices in the whole file, shared by its tracks (at least
//           summary_min_per_track each): a track with more merges its consecutive slices of one
//           name into one (args: merged_items, runs, first), then groups of such runs; a stall
//           track keeps its longest stalls. Counters are complete. Its size does not grow with
//           the trace; the file's metadata says what was merged ("timeline", "summary");
//  off      no timeline.json;
//  auto     (no --timeline) full up to kTimelineSummaryAbove events, summary above.
enum class TimelineMode { Auto, Full, Summary, Off };

// The slices a full timeline.json holds, above which `auto` writes a summary: ~100 bytes each,
// so a full file of up to ~100 MB.
inline constexpr std::size_t kTimelineSummaryAbove = 1000000;
// A summary's slice budget (~350 bytes a merged slice: ~14 MB).
inline constexpr std::size_t kTimelineSummarySlices = 40000;
// The --timeline line of sim_main's and xpu_analyze's --help.
std::string timeline_option_help();

// "full", "summary", "off"; false for anything else (the command lines refuse it).
bool parse_timeline_mode(const std::string& text, TimelineMode& out);
// The events a full timeline would show: the instructions the run issued, the units'
// operations, the DMAs, the links' transactions and the cores' stalls.
std::size_t timeline_events(const RunData& run, const Analysis& a);
// Full or Summary for Auto (summary above `summary_above` timeline_events), `mode` otherwise.
TimelineMode resolve_timeline_mode(TimelineMode mode, const RunData& run, const Analysis& a,
                                   std::size_t summary_above = kTimelineSummaryAbove);

struct TimelineOptions {
    std::size_t max_slices_per_track = 200000;
    std::size_t max_lanes = 256;  // past this, a slice that overlaps every lane is dropped (and counted)
    bool summary = false;
    std::size_t summary_slices = kTimelineSummarySlices;
    std::size_t summary_min_per_track = 256;
};

// Writes the trace to `path`. Throws std::runtime_error (naming the path) if it cannot be written.
void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a);
void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a, const TimelineOptions& opt);

}  // namespace xpu::analysis
