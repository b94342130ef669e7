#include "analysis/outputs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "analysis/report.h"
#include "analysis/report_html.h"
#include "analysis/timeline_json.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

Analysis analyze_folder(const std::string& out_dir, std::ostream& os, const OutputOptions& opt) {
    const RunData run = load_run(out_dir);
    const Analysis a = analyze(run);
    const std::string files[] = {"report.txt", "analysis.json", "report.html", "timeline.json"};
    auto path = [&](const std::string& f) { return (fs::path(out_dir) / f).string(); };
    for (const auto& f : files) fs::remove(path(f));  // no stale result beside a new one
    try {
        std::ostringstream text;
        print_report(text, run, a, opt.top);
        {
            std::ofstream f(path("report.txt"), std::ios::binary);
            f << text.str();
            if (!f) throw std::runtime_error(path("report.txt") + ": cannot write");
        }
        write_analysis_json_file(path("analysis.json"), run, a);
        if (opt.html) write_report_html(path("report.html"), run, a);
        if (opt.timeline) write_timeline_json(path("timeline.json"), run, a);
        if (opt.print) os << text.str();
    } catch (...) {
        for (const auto& f : files) fs::remove(path(f));
        throw;
    }
    return a;
}

}  // namespace xpu::analysis
