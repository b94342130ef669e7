// A small run and its analysis, built by hand (no simulation), for the renderers' tests
// (analysis_render_test.cpp) and the end-to-end checks of report.html and timeline.json
// (analysis_sample_main.cpp -> tests/e2e/analysis_outputs.sh, report_html.sh).
// Every cause has time somewhere; strings carry HTML/JSON metacharacters and invalid UTF-8.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/analysis.h"
#include "analysis/run_data.h"

namespace xpu::analysis::sample {

// An annotation that must come out escaped.
inline const std::string kEvil = "<script>alert(\"x\")</script> & 'q'";
inline constexpr std::size_t kOps = 25;   // by_op rows (the report shows the top 20)
inline constexpr std::size_t kDmaViews = 25;  // Analysis::dmas (the report shows the top 20)

RunData run();
Analysis analysis(const RunData& run);

// One core running `n` instructions whose annotations change every `run_length` instructions,
// back to back, with a stall between runs: for the slice cap of the timeline.
RunData long_run(std::size_t n, std::size_t run_length);
Analysis long_analysis(const RunData& run);

}  // namespace xpu::analysis::sample
