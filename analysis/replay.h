// Replays of a trace by the simulator itself, in parallel worker processes: the analysis's way
// of measuring instead of estimating ("fake runs, real fixes"). analysis/ does not link the
// simulator (it needs no SystemC); it runs the sim_main executable, one process per replay, each
// with --no-txlog --deterministic into a folder of its own, and reads simulated_time_ns back
// from its stats.json.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace xpu::analysis {

struct ReplayJob {
    std::string trace;              // the trace to simulate
    std::vector<std::string> sets;  // sim_main --set KEY=VALUE overrides on the platform
};

struct ReplayResult {
    bool run = false;         // started and finished within the budget
    bool ok = false;          // finished with exit 0 and a readable stats.json
    double simulated_ns = 0;  // its stats.json's simulated_time_ns
    double wall_seconds = 0;
    std::string error;        // why not ok: the exit code and sim_main's last message, or "budget"
};

struct ReplayOptions {
    std::string sim_main;     // the executable
    std::string platform;     // the platform description every job runs on
    std::string work_dir;     // one sub-folder per job is made (and removed) here
    unsigned jobs = 0;        // worker processes at once; 0 = the number of cores
    double budget_seconds = 0;  // wall time for all jobs; 0 = none. Jobs not started by then are not run,
                                // running ones are stopped (SIGTERM) at the deadline.
    std::function<bool()> stop_requested;  // checked while waiting: true stops every worker
    std::function<void(std::size_t done, std::size_t total)> progress;
};

// Runs the jobs, the first ones first (callers put the most promising first, so that a budget
// cuts the least). The results are in job order, whatever order the workers finished in.
std::vector<ReplayResult> replay_all(const std::vector<ReplayJob>& jobs, const ReplayOptions& opt);

// A progress callback that prints "LABEL: 3 of 6 replays done (50%), 4.1 s, ETA 4.1 s" lines on
// `os` (long work shows percent and ETA), timed from when it is made.
std::function<void(std::size_t, std::size_t)> progress_lines(std::ostream& os, std::string label);

// Runs the program args[0] with `args` to its end, its stdout and stderr into the file `log`,
// checking `stop_requested` while it runs (true: SIGTERM it, wait, kStopped). Its exit status
// (128 + N if signal N ended it), or kNotStarted.
inline constexpr int kNotStarted = -1, kStopped = -2;
int run_program(const std::vector<std::string>& args, const std::string& log, const std::function<bool()>& stop_requested);

// The sim_main executable beside the running one: the same folder (an installed prefix's bin/),
// or the build tree's platform/ next to analysis/. Empty if neither exists.
std::string find_sim_main();

}  // namespace xpu::analysis
