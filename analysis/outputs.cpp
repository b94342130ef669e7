#include "analysis/outputs.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "analysis/report.h"
#include "analysis/report_html.h"
#include "analysis/timeline_json.h"
#include "traces/progress.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

double PhaseTimes::of(const std::string& phase) const {
    for (const auto& [name, s] : seconds)
        if (name == phase) return s;
    return 0;
}

namespace {

// Times the phases of analyze_folder into PhaseTimes (a no-op without one).
class PhaseClock {
public:
    explicit PhaseClock(PhaseTimes* t) : t_(t), last_(std::chrono::steady_clock::now()) {}
    void lap(const char* phase) {
        if (!t_) return;
        const auto now = std::chrono::steady_clock::now();
        t_->seconds.emplace_back(phase, std::chrono::duration<double>(now - last_).count());
        last_ = now;
    }

private:
    PhaseTimes* t_;
    std::chrono::steady_clock::time_point last_;
};

}  // namespace

Analysis analyze_folder(const std::string& out_dir, std::ostream& os, const OutputOptions& opt) {
    PhaseClock clock(opt.timing);
    const std::string label = opt.progress_label + ": analysis";
    ProgressLine load_progress(opt.progress, label);
    const RunData run = load_run(out_dir, [&](double f) {
        load_progress.update(f, "reading the transaction log");
    });
    clock.lap("load");
    if (opt.timing) opt.timing->records = run.records;
    ProgressLine analyze_progress(opt.progress, label);
    AnalyzeOptions ao;
    ao.progress = [&](double f, const char* next) { analyze_progress.update(f, std::string("analysing: ") + next); };
    Analysis a = analyze(run, ao);
    clock.lap("analyze");
    const std::string files[] = {"report.txt", "analysis.json", "report.html", "timeline.json", "verification.txt"};
    auto path = [&](const std::string& f) { return (fs::path(out_dir) / f).string(); };
    for (const auto& f : files) fs::remove(path(f));  // no stale result beside a new one
    if (opt.verify.enabled) {
        verify_suggestions(run, out_dir, a, opt.verify);
        clock.lap("verify");
    }
    if (opt.sensitivity) {
        a.sensitivity = measure_sensitivity(out_dir, static_cast<double>(run.end) / 1000.0, opt.sensitivity_options);
        clock.lap("sensitivity");
    }
    ProgressLine write_progress(opt.progress, label);
    const double files_to_write = 2.0 + (opt.html ? 1 : 0) + (opt.timeline ? 1 : 0);
    double written = 0;
    auto wrote = [&](const char* next) {
        write_progress.update(++written / files_to_write, std::string("writing the reports: ") + next);
    };
    try {
        if (a.verified) write_verification(path("verification.txt"), a);
        std::ostringstream text;
        print_report(text, run, a, opt.top, opt.per_layer);
        {
            std::ofstream f(path("report.txt"), std::ios::binary);
            f << text.str();
            if (!f) throw std::runtime_error(path("report.txt") + ": cannot write");
        }
        clock.lap("report.txt");
        wrote("analysis.json");
        write_analysis_json_file(path("analysis.json"), run, a);
        clock.lap("analysis.json");
        wrote(opt.html ? "report.html" : "timeline.json");
        if (opt.html) {
            write_report_html(path("report.html"), run, a, opt.per_layer);
            clock.lap("report.html");
            wrote("timeline.json");
        }
        if (opt.timeline) {
            write_timeline_json(path("timeline.json"), run, a);
            clock.lap("timeline.json");
        }
        if (opt.print) os << text.str();
    } catch (...) {
        for (const auto& f : files) fs::remove(path(f));
        throw;
    }
    return a;
}

}  // namespace xpu::analysis
