// One simulation run: elaborate the platform for a trace, run the kernel to the end (or to
// a deadlock, a time limit or an interrupt), and collect what the summary and stats.json
// report. All figures come from the models' own counters.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "platform/builder.h"
#include "platform/platform_config.h"
#include "platform/run_breakdown.h"
#include "traces/checked_feed.h"
#include "traces/trace_reader.h"

namespace xpu::platform {

// The process's peak resident memory so far, in bytes (getrusage: VmHWM).
std::uint64_t process_peak_rss();

struct UnitFigure {
    std::string name;  // SystemC path
    std::string kind;  // its type, for display
    Role role = Role::Other;
    double busy_ns = 0;
    double utilization = 0;  // busy / simulated time
};

// Why a run ended.
enum class StopReason {
    Completed,    // every core ran its stream to the end
    Deadlock,     // no event left, cores still waiting (sync flags, barriers)
    MaxSimTime,   // activity left beyond RunOptions::max_sim_time
    Interrupted,  // RunOptions::stop_requested said so (SIGINT)
};
// "completed", "deadlock", "max-sim-time", "interrupted" (the stats.json `stop_reason`).
const char* stop_reason_name(StopReason r);

struct RunResult {
    double simulated_ns = 0;
    std::uint64_t instructions = 0;
    std::uint64_t streams = 0;
    double build_seconds = 0;  // host time building the platform: its modules made and bound (Simulation's constructor)
    double wall_seconds = 0;
    std::uint64_t peak_rss_bytes = 0;  // of the whole process, at the end of the run
    std::vector<UnitFigure> units;
    std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
    double hbm_peak_gbps = 0;
    double flops = 0, peak_flops_per_s = 0;
    bool completed = true;      // every core ran its stream to the end (stop == Completed)
    StopReason stop = StopReason::Completed;
    std::string diagnosis;      // why not: who waits on what, or where each core was
    Breakdown breakdown;        // per chip, and core time by op (run_breakdown.h)

    double achieved_gbps() const {
        return simulated_ns > 0 ? static_cast<double>(hbm_bytes_read + hbm_bytes_written) / simulated_ns : 0;
    }
    double instructions_per_second() const { return wall_seconds > 0 ? instructions / wall_seconds : 0; }
};

struct RunOptions {
    // Stop (StopReason::MaxSimTime) rather than simulate past this time, in ps; 0 = no limit.
    Tick max_sim_time = 0;
    // Polled between slices of simulated time; true = stop now (StopReason::Interrupted).
    std::function<bool()> stop_requested;
    // Called every `progress_seconds` (host time) with instructions retired and simulated ns.
    std::function<void(std::uint64_t retired, double sim_ns)> progress;
    double progress_seconds = 2.0;
};

class Simulation {
public:
    // Opens the trace (TraceError) and elaborates the platform for it (ConfigError);
    // BuildInterrupted if `stop_requested` (polled between chips) says so.
    // `digest`, if given, sees every read of the trace (traces/file_digest.h): the check and the
    // run read it all, so that the trace's SHA-256 needs no pass of its own.
    Simulation(const PlatformConfig& cfg, const std::string& trace_path, const std::function<bool()>& stop_requested = {},
               const std::shared_ptr<trace::FileDigest>& digest = nullptr);
    Platform& platform() { return *platform_; }
    const trace::TraceFile& trace() const { return trace_; }

    // Reads the whole trace once and checks every instruction against this platform before
    // anything runs: register ids, unit indices against the units bound to each core, sync
    // flag ids against the SyncFlags they reach, matrix shapes against the matrix units, DMA
    // and vld/vst operands (bytes > 0, chips that exist, address ranges inside the address
    // map). Throws TraceError "TRACE: stream S (chip C, core K), instruction I (TEXT): what"
    // for a trace problem (or a corrupt block), ConfigError when the platform lacks a whole
    // family of units a stream uses (e.g. no DMA engine bound to a core that issues DMAs).
    // Returns false (nothing checked further) if `stop_requested` said so.
    bool check_trace(const std::function<bool()>& stop_requested = {}) const;

    // The same check on a second thread, while the run goes: the run's readers take the
    // instructions the check read and passed (traces/checked_feed.h) instead of reading the
    // trace again, so the run never executes an instruction the check has not passed, and a
    // problem is the one check_trace names (the first in stream order). What check_trace reads of
    // the platform is read here, on the calling thread; its string-table check throws here.
    // Once, before run() (readers made before it read the file themselves).
    void start_check(const std::function<bool()>& stop_requested = {});
    // Waits for the check start_check began (the run is over: it goes on alone, taken by
    // nobody) and rethrows what it threw (its TraceError or
    // ConfigError: the problem check_trace would have named, whatever the run did meanwhile);
    // false if it stopped because `stop_requested` said so, true if every instruction passed or
    // no check was started.
    bool finish_check();
    // Stops a check still running (its outcome no longer wanted) and waits for its thread: the
    // destructor does it, and so must whoever leaves a Simulation undestroyed at the process's
    // end (sim_main), or the thread would still read the trace while the process exits.
    void stop_check();
    ~Simulation();

    // Runs to the end, a deadlock, the time limit or an interrupt.
    RunResult run(const RunOptions& opts);
    // Runs to the end (or a deadlock). `progress` (optional) is called now and then.
    RunResult run(const std::function<void(std::uint64_t retired, double sim_ns)>& progress = {});

private:
    // Throws ConfigError when the threads' stacks would exceed the host's memory-mapping limit.
    void check_thread_stacks() const;
    std::string deadlock_diagnosis() const;
    std::string position_diagnosis(const char* why) const;
    void collect_figures(RunResult& r) const;
    struct PreparedCheck;  // what the check reads of the platform (simulation.cpp)
    PreparedCheck prepare_check() const;
    bool check_instructions(const PreparedCheck& p, const std::function<bool()>& stop_requested,
                            trace::CheckedFeed* feed) const;

    const PlatformConfig& cfg_;
    std::shared_ptr<trace::FileDigest> digest_;           // sees the check's reads
    std::shared_ptr<trace::CheckedFeed> feed_;  // the check's instructions, to the run's readers
    trace::TraceFile trace_;  // the run's: fed by feed_ once the check starts, reporting to no digest
    std::unique_ptr<Platform> platform_;
    double build_seconds_ = 0;  // RunResult::build_seconds
    std::thread check_thread_;
    std::atomic<bool> check_cancel_{false};  // the destructor stops a check still running
    std::exception_ptr check_error_;
    bool check_ok_ = true;
};

}  // namespace xpu::platform
