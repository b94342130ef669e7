// xpu_sweep's model of a sweep (docs/sweep.md): the spec (traces x platforms x a grid of platform
// keys), its points in a fixed order, each point's result read back from its run folder, and the
// sweep's outputs (results.csv, report.html). Running the points (a local process pool, or a
// Slurm job array) is xpu_sweep_main.cpp's; this part never starts a process, so that a sweep's
// outputs depend only on its runs' outputs, never on the order they finished in.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace xpu::platform::sweep {

struct Spec {
    std::string file;                       // the spec's path as given
    std::vector<std::string> traces;        // as written in the spec (the CSV shows these)
    std::vector<std::string> platforms;
    std::vector<std::string> trace_paths;   // resolved against the spec's folder
    std::vector<std::string> platform_paths;
    std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // key -> values, in spec order
    std::vector<std::string> sim_args;      // appended to every sim_main command
    std::vector<std::string> baseline;      // one value per grid key: the point speedups are against
    std::size_t baseline_platform = 0;      // index into platforms
};

// Reads and checks a spec. Throws ConfigError "SPEC:LINE:COL: KEY: expected ..." on bad input
// (unknown key, wrong type, empty list, missing file, a sim_args option the sweep sets itself).
Spec load_spec(const std::string& file);

struct Point {
    std::size_t index = 0;       // 0-based, in the cross-product order: trace, platform, grid keys (last fastest)
    std::size_t trace = 0, platform = 0;
    std::vector<std::size_t> value;  // per grid key, the index of its value
    std::string name() const;        // "0007": the folder under DIR/runs/
    std::vector<std::string> sets(const Spec& s) const;  // KEY=VALUE per grid key
};
std::vector<Point> points_of(const Spec& s);

// The sim_main command line of a point (argv, the executable first): its platform, trace,
// --out DIR/runs/NAME, a --set per grid key, then -q --deterministic, --no-verify unless the
// spec's sim_args mention --verify, then the spec's sim_args.
std::vector<std::string> command_of(const Spec& s, const Point& p, const std::string& sim_main, const std::string& out_dir);

struct Result {
    std::string status = "not-run";  // ok, deadlock, time-limit, failed, not-run
    std::string error;               // why not ok: sim_main's exit code and last message
    bool have_stats = false;
    double simulated_ns = 0, instructions = 0, tflops = 0, hbm_gbps = 0, comm_share = 0;
    std::vector<std::pair<std::string, double>> core_ns;  // core time by cause (analysis.json), in its order
    double speedup = 0;                                    // baseline time / this time (same trace); 0 if unknown
};

// Reads a point's outcome from DIR/runs/NAME/ and DIR/runs/NAME.rc (the exit code the runner
// wrote) and NAME.log (sim_main's messages). A point with no .rc file is not-run.
Result read_result(const std::string& out_dir, const Point& p);
// Fills in Result::speedup against each trace's baseline point.
void set_speedups(const Spec& s, const std::vector<Point>& pts, std::vector<Result>& rs);

// results.csv (one row per point, in point order) and report.html (self-contained); atomically.
void write_results_csv(const std::string& path, const Spec& s, const std::vector<Point>& pts, const std::vector<Result>& rs);
void write_report_html(const std::string& path, const Spec& s, const std::vector<Point>& pts, const std::vector<Result>& rs);

// The exit code of a finished point as a status.
std::string status_of_exit(int code);

}  // namespace xpu::platform::sweep
