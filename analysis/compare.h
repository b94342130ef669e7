// Two runs side by side (xpu_analyze --compare A B): what differed in how they were made (the
// platform key by key, the overrides, the trace by its hash) and what that did (simulated time,
// core time by cause, utilisation per kind of unit, time per op and per layer). Built once as a
// Comparison, then written as text (the terminal), JSON and a self-contained HTML page.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace xpu::analysis {

// How a run was made, from its stats.json (empty fields when it has none, an older run's).
struct RunOrigin {
    std::string dir, platform, trace, trace_sha256, version;
    std::vector<std::string> command_line, overrides;
};
RunOrigin read_run_origin(const std::string& dir);

struct Comparison {
    RunOrigin a, b;
    bool same_trace = true;   // by SHA-256 of the traces' bytes (stats.json, else txlog.trace.bin)
    struct KeyDiff {
        std::string key, a, b;  // "" where the key is absent from one side
    };
    std::vector<KeyDiff> platform;  // keys of OUT/platform.yaml whose values differ
    struct Row {
        std::string key;
        double a = 0, b = 0;  // ns (or a share, for utilisation)
        bool in_a = false, in_b = false;
    };
    Row time, instructions;
    std::vector<Row> causes, utilisation;  // core time by cause; mean busy share per kind of unit
    std::vector<Row> by_op, by_layer;      // core ns; largest |b - a| first, then by name
    std::string top_a, top_b;              // the top suggestion of each
};

Comparison compare_runs(const std::string& dir_a, const Analysis& a, const std::string& dir_b, const Analysis& b);

// The terminal form; `top` rows per op and layer table.
void print_comparison(std::ostream& os, const Comparison& c, std::size_t top = 10);
// compare.json and compare.html; throw std::runtime_error naming the file on failure.
void write_comparison_json(const std::string& path, const Comparison& c);
void write_comparison_html(const std::string& path, const Comparison& c);
// The loud warning when the traces differ ("" when they are the same).
std::string trace_warning(const Comparison& c);

}  // namespace xpu::analysis
