// One simulation run: elaborate the platform for a trace, run the kernel to the end (or to
// a deadlock), and collect what the summary and stats.json report. All figures come from the
// models' own counters.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platform/builder.h"
#include "platform/platform_config.h"
#include "traces/trace_reader.h"

namespace xpu::platform {

struct UnitFigure {
    std::string name;  // SystemC path
    std::string kind;
    double busy_ns = 0;
    double utilization = 0;  // busy / simulated time
};

struct RunResult {
    double simulated_ns = 0;
    std::uint64_t instructions = 0;
    std::uint64_t streams = 0;
    double wall_seconds = 0;
    std::uint64_t peak_rss_bytes = 0;  // of the whole process, at the end of the run
    std::vector<UnitFigure> units;
    std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
    double hbm_peak_gbps = 0;
    double flops = 0, peak_flops_per_s = 0;
    bool completed = true;      // every core ran its stream to the end
    std::string diagnosis;      // why not (deadlock: who waits on what)

    double achieved_gbps() const {
        return simulated_ns > 0 ? static_cast<double>(hbm_bytes_read + hbm_bytes_written) / simulated_ns : 0;
    }
    double instructions_per_second() const { return wall_seconds > 0 ? instructions / wall_seconds : 0; }
};

class Simulation {
public:
    Simulation(const PlatformConfig& cfg, const std::string& trace_path);
    Platform& platform() { return *platform_; }
    const trace::TraceFile& trace() const { return trace_; }
    // Runs to the end. `progress` (optional) is called now and then with instructions retired.
    RunResult run(const std::function<void(std::uint64_t retired, double sim_ns)>& progress = {});

private:
    std::string deadlock_diagnosis() const;
    const PlatformConfig& cfg_;
    trace::TraceFile trace_;
    std::unique_ptr<Platform> platform_;
};

}  // namespace xpu::platform
