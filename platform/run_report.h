// What a run reports: the terminal summary and stats.json (schema in docs/outputs.md).
#pragma once

#include <ostream>
#include <string>

#include "platform/simulation.h"

namespace xpu::platform {

struct RunInputs {
    std::string platform_file, trace_file;
    bool deterministic = false;  // --deterministic: host figures were not measured (written as 0)
};

void print_summary(std::ostream& os, const RunInputs& in, const RunResult& r);
// Writes DIR/stats.json under a temporary name and renames it when complete.
void write_stats_json(const std::string& path, const RunInputs& in, const RunResult& r, const Platform& p);
// Writes `text` to `path` atomically (temp file + rename); throws std::runtime_error.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace xpu::platform
