// What a run reports: the terminal summary and stats.json (schema in docs/outputs.md).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "platform/simulation.h"

namespace xpu::platform {

// How a run was made: enough to tell two runs apart and to make one again (stats.json records it).
struct RunInputs {
    std::string platform_file, trace_file;
    bool deterministic = false;  // --deterministic: host figures were not measured (written as 0)
    // The command line as given, the program named "sim_main" rather than by the path it was
    // started from (which differs between checkouts while the run does not).
    std::vector<std::string> command_line;
    std::vector<std::string> overrides;  // the --set KEY=VALUE list, in order
    std::string version;                 // "xpusim X.Y.Z": the project version (deterministic)
    std::string trace_sha256;            // of the trace file's bytes: what was replayed, whatever its path
};

void print_summary(std::ostream& os, const RunInputs& in, const RunResult& r);
// Writes DIR/stats.json under a temporary name and renames it when complete.
void write_stats_json(const std::string& path, const RunInputs& in, const RunResult& r, const Platform& p);
// Writes `text` to `path` atomically (temp file + rename); throws std::runtime_error.
void write_file_atomically(const std::string& path, const std::string& text);
// The same with the text written by `write` straight into the temporary file (no copy of a
// large file in memory: a 256-chip stats.json is 1.7 MB).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace xpu::platform
