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

struct TimelineOptions {
    std::size_t max_slices_per_track = 200000;
    std::size_t max_lanes = 256;  // past this, a slice that overlaps every lane is dropped (and counted)
};

// Writes the trace to `path`. Throws std::runtime_error (naming the path) if it cannot be written.
void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a);
void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a, const TimelineOptions& opt);

}  // namespace xpu::analysis
