// report.html: one self-contained page (no script, no network, no external file; the charts are
// inline SVG drawn here) that shows an Analysis: run facts, where the time went per unit, op,
// layer and chip (stacked bars, one colour per cause), utilisation, HBM bandwidth and VMEM
// occupancy over time, the critical path, the most stalled instructions, the DMAs that stalled
// most, and the ranked suggestions. Every string from the run is HTML-escaped; the same inputs
// give the same bytes (no timestamps).
#pragma once

#include <string>

#include "analysis/analysis.h"
#include "analysis/run_data.h"

namespace xpu::analysis {

// Writes the page to `path`. Throws std::runtime_error (naming the path) if it cannot be written.
// Time per op added up over layers (Analysis::by_op_merged), or per layer (by_op) if per_layer.
void write_report_html(const std::string& path, const RunData& run, const Analysis& a, bool per_layer = false);

}  // namespace xpu::analysis
