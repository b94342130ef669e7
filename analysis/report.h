// The analysis' own outputs: the terminal report and analysis.json (the comparison of two runs
// is analysis/compare.h's; report.html and timeline.json have their own writers: report_html.h,
// timeline_json.h).
#pragma once

#include <ostream>
#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

// Time by op: added up over layers (Analysis::by_op_merged), or per layer (by_op) if per_layer.
void print_report(std::ostream& os, const RunData& run, const Analysis& a, std::size_t top = 10, bool per_layer = false);
void write_analysis_json(std::ostream& os, const RunData& run, const Analysis& a);
// Writes `path` atomically (temp file + rename); throws std::runtime_error naming it.
void write_analysis_json_file(const std::string& path, const RunData& run, const Analysis& a);

// "12.345 us" with a unit that suits the magnitude (ps in, deterministic formatting).
std::string format_time(Tick t);

}  // namespace xpu::analysis
