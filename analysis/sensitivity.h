// Hardware sensitivity, measured: the run's trace replayed with one major resource of its
// platform scaled at a time (factor 2 by default), the architect's "which hardware change helps
// this trace most". Each line is a replay (analysis/replay.h) on OUT/platform.yaml with --set
// overrides, which the report prints so that the line can be reproduced.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/replay.h"

namespace xpu::analysis {

struct SensitivityLine {
    std::string resource;           // "HBM bandwidth", "DMA engines", "ICI link latency", ...
    std::string key;                // the keys it scales, one pattern: "chip.modules.dma*.bandwidth_gbps"
    double factor = 2;              // the resource is this many times as capable
    std::vector<std::string> sets;  // the sim_main --set overrides that do it
    bool measured = false;
    double simulated_time_ns = 0;
    double speedup = 0;             // the run's time / this one's
    std::string error;              // why not measured
};

struct SensitivityOptions {
    double factor = 2;
    unsigned jobs = 0;
    double budget_seconds = 0;
    std::string sim_main;  // empty: find_sim_main()
    std::function<bool()> stop_requested;
    std::ostream* progress = nullptr;
};

// The levers the platform has (those whose keys are in OUT/platform.yaml), replayed; sorted by
// speedup, largest first. Empty if OUT/platform.yaml is missing.
std::vector<SensitivityLine> measure_sensitivity(const std::string& out_dir, double run_time_ns, const SensitivityOptions& opt);

// The --set overrides of every lever the platform at `platform_yaml` has, scaled by `factor`.
std::vector<SensitivityLine> sensitivity_levers(const std::string& platform_yaml, double factor);

}  // namespace xpu::analysis
