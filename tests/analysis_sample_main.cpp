// Test driver: writes report.html and timeline.json of the hand-built sample run
// (analysis_sample.h) into a folder, for the end-to-end checks (tests/e2e/analysis_outputs.sh,
// tests/e2e/report_html.sh) that look at them with Python and headless Chromium.
// usage: analysis_sample OUTDIR                      the sample run
//        analysis_sample OUTDIR --long N [--cap C]   one core, N instructions, slice cap C
//        analysis_sample --run RUN_DIR OUTDIR        a real run's folder (sim_main --out), analysed,
//                                                    rendered, and the time each writer took on stderr
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "analysis/report_html.h"
#include "analysis/timeline_json.h"
#include "analysis_sample.h"

int main(int argc, char** argv) {
    using namespace xpu::analysis;
    if (argc < 2) {
        std::fprintf(stderr, "usage: analysis_sample OUTDIR [--long N] [--cap C]\n");
        return 2;
    }
    if (std::string(argv[1]) == "--run") {
        if (argc != 4) return 2;
        try {
            using clk = std::chrono::steady_clock;
            auto secs = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); };
            const std::string out = argv[3];
            std::filesystem::create_directories(out);
            const auto t0 = clk::now();
            const RunData run = load_run(argv[2]);
            const auto t1 = clk::now();
            const Analysis a = analyze(run);
            const auto t2 = clk::now();
            write_report_html(out + "/report.html", run, a);
            const auto t3 = clk::now();
            write_timeline_json(out + "/timeline.json", run, a);
            const auto t4 = clk::now();
            std::fprintf(stderr, "load %.3f s, analyze %.3f s, report.html %.3f s, timeline.json %.3f s (%llu records)\n", secs(t0, t1),
                         secs(t1, t2), secs(t2, t3), secs(t3, t4), static_cast<unsigned long long>(run.records));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "analysis_sample: %s\n", e.what());
            return 1;
        }
        return 0;
    }
    const std::string dir = argv[1];
    std::size_t long_n = 0;
    TimelineOptions opt;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const auto v = static_cast<std::size_t>(std::strtoull(argv[i + 1], nullptr, 10));
        if (k == "--long")
            long_n = v;
        else if (k == "--cap")
            opt.max_slices_per_track = v;
        else {
            std::fprintf(stderr, "analysis_sample: unknown option %s\n", k.c_str());
            return 2;
        }
    }
    try {
        std::filesystem::create_directories(dir);
        const RunData run = long_n ? sample::long_run(long_n, 10) : sample::run();
        const Analysis a = long_n ? sample::long_analysis(run) : sample::analysis(run);
        write_report_html(dir + "/report.html", run, a);
        write_timeline_json(dir + "/timeline.json", run, a, opt);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "analysis_sample: %s\n", e.what());
        return 1;
    }
    return 0;
}
