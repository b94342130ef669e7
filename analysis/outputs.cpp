#include "analysis/outputs.h"

#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

#include "analysis/beside.h"
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
    explicit PhaseClock(PhaseTimes* t) : t_(t), last_(std::chrono::steady_clock::now()), last_cpu_(thread_cpu()) {}
    void lap(const char* phase) {
        if (!t_) return;
        const auto now = std::chrono::steady_clock::now();
        const double cpu = thread_cpu();
        t_->seconds.emplace_back(phase, std::chrono::duration<double>(now - last_).count());
        t_->thread_cpu.push_back(cpu - last_cpu_);
        last_ = now;
        last_cpu_ = cpu;
    }
    // A phase that ran on another thread, beside the ones lapped here: its own seconds. What
    // this thread spent since the last lap (waiting for it) is not counted.
    void add(const char* phase, double wall, double cpu) {
        if (!t_) return;
        t_->seconds.emplace_back(phase, wall);
        t_->thread_cpu.push_back(cpu);
        last_ = std::chrono::steady_clock::now();
        last_cpu_ = thread_cpu();
    }
    // This thread's CPU seconds: on a loaded host a phase's wall time is mostly waiting for a
    // core, its CPU time is not.
    static double thread_cpu() {
        timespec t{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
    }

private:
    PhaseTimes* t_;
    std::chrono::steady_clock::time_point last_;
    double last_cpu_;
};

// Writes PATH through PATH.tmp, renamed when complete: an interrupted or failed write never
// leaves a file that looks complete under the final name.
template <class Write>
void write_via_tmp(const std::string& path, Write&& write) {
    const std::string tmp = path + ".tmp";
    try {
        write(tmp);
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write (rename failed)");
    }
}

}  // namespace

Analysis analyze_folder(const std::string& out_dir, std::ostream& os, const OutputOptions& opt) {
    PhaseClock clock(opt.timing);
    const std::string label = opt.progress_label + ": analysis";
    ProgressLine load_progress(opt.progress, label);
    RunData loaded = load_run(out_dir, [&](double f) { load_progress.update(f, "reading the transaction log"); });
    if (!opt.shown_dir.empty()) loaded.dir = opt.shown_dir;
    const RunData& run = loaded;
    clock.lap("load");
    if (opt.timing) opt.timing->records = run.records;
    ProgressLine analyze_progress(opt.progress, label);
    AnalyzeOptions ao;
    // The steps of analyze() timed apart as "analyze/STEP" (the step's words joined by '_'),
    // in the order they ran; "analyze" is their sum.
    PhaseTimes steps;
    PhaseClock step_clock(opt.timing ? &steps : nullptr);
    std::string step_key;
    ao.progress = [&](double f, const char* next) {
        analyze_progress.update(f, std::string("analysing: ") + next);
        if (!step_key.empty()) step_clock.lap(step_key.c_str());
        step_key = "analyze/" + std::string(next);
        for (char& ch : step_key)
            if (ch == ' ') ch = '_';
    };
    Analysis a = analyze(run, ao);
    clock.lap("analyze");
    if (opt.timing)
        for (std::size_t i = 0; i < steps.seconds.size(); ++i) {
            opt.timing->seconds.push_back(std::move(steps.seconds[i]));
            opt.timing->thread_cpu.push_back(steps.thread_cpu[i]);
        }
    const std::string files[] = {"report.txt", "analysis.json", "report.html", "timeline.json", "verification.txt"};
    auto path = [&](const std::string& f) { return (fs::path(out_dir) / f).string(); };
    for (const auto& f : files) fs::remove(path(f));  // no stale result beside a new one
    if (opt.verify.enabled) {
        VerifyOptions vo = opt.verify;
        if (vo.shown_dir.empty()) vo.shown_dir = opt.shown_dir;
        verify_suggestions(run, out_dir, a, vo);
        clock.lap("verify");
    }
    if (opt.sensitivity) {
        a.sensitivity = measure_sensitivity(out_dir, static_cast<double>(run.end) / 1000.0, opt.sensitivity_options);
        clock.lap("sensitivity");
    }
    ProgressLine write_progress(opt.progress, label);
    const TimelineMode timeline = resolve_timeline_mode(opt.timeline, run, a);
    const double files_to_write = 2.0 + (opt.html ? 1 : 0) + (timeline != TimelineMode::Off ? 1 : 0);
    double written = 0;
    auto wrote = [&](const char* next) {
        write_progress.update(++written / files_to_write, std::string("writing the reports: ") + next);
    };
    // timeline.json is written on a second thread beside the other files (it reads the run and
    // the analysis, as they do; 0.3 s of a 32-layer decode's): its time, and its error if any,
    // come back when the others are written.
    struct Timed {
        double wall = 0, cpu = 0;
    };
    std::future<Timed> timeline_written;
    auto write_timeline = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = PhaseClock::thread_cpu();
        TimelineOptions to;
        to.summary = timeline == TimelineMode::Summary;
        write_via_tmp(path("timeline.json"), [&](const std::string& tmp) { write_timeline_json(tmp, run, a, to); });
        return Timed{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                     PhaseClock::thread_cpu() - c0};
    };
    try {
        if (timeline != TimelineMode::Off) timeline_written = beside(write_timeline);
        if (a.verified) write_verification(path("verification.txt"), a);
        std::ostringstream text;
        print_report(text, run, a, opt.top, opt.per_layer);
        write_via_tmp(path("report.txt"), [&](const std::string& tmp) {
            std::ofstream f(tmp, std::ios::binary);
            f << text.str();
            if (!f.flush()) throw std::runtime_error(path("report.txt") + ": cannot write");
        });
        clock.lap("report.txt");
        wrote("analysis.json");
        write_analysis_json_file(path("analysis.json"), run, a);
        clock.lap("analysis.json");
        wrote(opt.html ? "report.html" : "timeline.json");
        if (opt.html) {
            write_via_tmp(path("report.html"), [&](const std::string& tmp) { write_report_html(tmp, run, a, opt.per_layer); });
            clock.lap("report.html");
            wrote("timeline.json");
        }
        if (timeline_written.valid()) {
            const Timed t = timeline_written.get();
            clock.add("timeline.json", t.wall, t.cpu);
        }
        if (opt.print) os << text.str();
    } catch (...) {
        if (timeline_written.valid()) timeline_written.wait();  // it writes into the folder: done first
        for (const auto& f : files) {
            fs::remove(path(f));
            std::remove((path(f) + ".tmp").c_str());
        }
        throw;
    }
    return a;
}

void remove_analysis_outputs(const std::string& dir) noexcept {
    std::error_code ec;
    for (const char* f : {"report.txt", "analysis.json", "report.html", "timeline.json", "verification.txt"}) {
        const fs::path p = fs::path(dir) / f;
        fs::remove(p, ec);
        fs::remove(fs::path(p.string() + ".tmp"), ec);
    }
    for (const char* work : {"verify.tmp", "sensitivity.tmp"}) fs::remove_all(fs::path(dir) / work, ec);
}

}  // namespace xpu::analysis
