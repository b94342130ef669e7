// Everything the analysis writes into a run's output folder, in one call shared by sim_main
// (at the end of a run) and xpu_analyze: report.txt, analysis.json, report.html, timeline.json.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/timeline_json.h"
#include "analysis/verify.h"

namespace xpu::analysis {

// Wall seconds of each phase of analyze_folder, in order: "load", "analyze", the steps of
// analyze ("analyze/finding_suggestions", ...: they add up to "analyze"), then one per file
// written ("report.txt", ...). What xpu_analyze --timing prints and scripts/bench.sh measures.
struct PhaseTimes {
    std::uint64_t records = 0;  // log records read
    std::vector<std::pair<std::string, double>> seconds;
    std::vector<double> thread_cpu;  // per phase, the CPU seconds of the thread that ran it (helper threads not counted)
    double of(const std::string& phase) const;  // 0 if the phase did not run
};

struct OutputOptions {
    bool print = true;       // the terminal report on `os`
    std::size_t top = 10;    // rows per table in the terminal report
    bool per_layer = false;  // time by op per layer in report.txt and report.html (default: added up over layers)
    bool html = true;
    TimelineMode timeline = TimelineMode::Auto;  // timeline.json: full, summary, off, or by the run's size (timeline_json.h)
    PhaseTimes* timing = nullptr;  // if set, filled with the phases' wall times
    VerifyOptions verify;          // replay the top candidates (enabled by default)
    bool sensitivity = false;      // also replay with each major resource scaled (analysis/sensitivity.h)
    SensitivityOptions sensitivity_options;
    std::string shown_dir;         // the folder the outputs name (report.html, the verification note): sim_main writes
                                   // into a staging folder that becomes OUT (default: out_dir)
    // Progress lines of each phase (loading, analysing, writing) on this stream, "LABEL: ..."
    // (traces/progress.h: only once a phase has taken two seconds); null: none.
    std::ostream* progress = nullptr;
    std::string progress_label = "xpu_analyze";
};

// Reads OUT's transaction log, analyses it, verifies the top suggestions by replay (unless
// opt.verify.enabled is false), writes OUT/{report.txt, analysis.json, report.html,
// timeline.json, verification.txt}. Throws LogError for an unreadable log, std::runtime_error for an output that
// cannot be written (then none of the four is left behind).
Analysis analyze_folder(const std::string& out_dir, std::ostream& os, const OutputOptions& opt = {});

// Removes what analyze_folder writes into DIR (the analysis files, their temporaries, the replays'
// work folders), and nothing else: an interrupted analysis leaves the run's own files as they were.
void remove_analysis_outputs(const std::string& dir) noexcept;

}  // namespace xpu::analysis
