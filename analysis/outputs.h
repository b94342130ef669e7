// Everything the analysis writes into a run's output folder, in one call shared by sim_main
// (at the end of a run) and xpu_analyze: report.txt, analysis.json, report.html, timeline.json.
#pragma once

#include <ostream>
#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct OutputOptions {
    bool print = true;       // the terminal report on `os`
    std::size_t top = 10;    // rows per table in the terminal report
    bool html = true, timeline = true;
};

// Reads OUT's transaction log, analyses it, writes OUT/{report.txt, analysis.json, report.html,
// timeline.json}. Throws LogError for an unreadable log, std::runtime_error for an output that
// cannot be written (then none of the four is left behind).
Analysis analyze_folder(const std::string& out_dir, std::ostream& os, const OutputOptions& opt = {});

}  // namespace xpu::analysis
