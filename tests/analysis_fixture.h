// Tests of the analysis on simulated runs: simulate a trace with the transaction log recorded
// (as sim_main does), read the log back (analysis/run_data.h) and analyse it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "tests/sim_fixture.h"

namespace xpu::test {

struct Analyzed {
    std::unique_ptr<Run> run;
    analysis::RunData data;
    analysis::Analysis a;
};

// Simulates `trace` with a transaction log in a fresh output folder, then analyses it (keeping
// at most `max_suggestions`, AnalyzeOptions). With `effective_platform`, the folder also holds
// the run's platform.yaml, as sim_main writes it: the analysis then knows which matrix units
// are alike (analysis/matrix_groups.h: their bounds, spread_matmuls).
Analyzed analyzed(const std::string& trace, const std::vector<std::string>& sets = {},
                  const std::string& platform = "configs/xpu.yaml", std::size_t max_suggestions = 10,
                  bool effective_platform = false);

// The highest ranked suggestion of `kind` in r's analysis, or null.
inline const analysis::Suggestion* first_of_kind(const Analyzed& r, const std::string& kind) {
    for (const analysis::Suggestion& x : r.a.suggestions)
        if (x.kind == kind) return &x;
    return nullptr;
}

}  // namespace xpu::test
