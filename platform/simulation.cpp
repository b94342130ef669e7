#include "platform/simulation.h"

#include <chrono>
#include <sys/resource.h>
#include <sstream>

#include "models/hbm_controller.h"
#include "models/matrix_unit.h"
#include "models/sim_time.h"
#include "models/sync_flags.h"
#include "traces/trace_text.h"

namespace xpu::platform {

Simulation::Simulation(const PlatformConfig& cfg, const std::string& trace_path)
    : cfg_(cfg), trace_(trace::TraceFile::open(trace_path)) {
    platform_ = std::make_unique<Platform>(cfg_, &trace_);
}

std::string Simulation::deadlock_diagnosis() const {
    std::ostringstream os;
    os << "deadlock at " << ticks_to_ns(now_ticks()) << " ns: no event can ever wake these cores:\n";
    for (auto* core : platform_->cores()) {
        if (core->finished()) continue;
        os << "  " << core->name() << " (chip " << core->config().chip << ", core " << core->config().core << ")";
        if (const Instruction* in = core->blocked_on())
            os << " blocked at instruction " << core->blocked_index() << ": " << trace::format_instruction(*in);
        os << "\n";
    }
    for (auto* m : platform_->modules())
        if (auto* f = dynamic_cast<SyncFlags*>(m))
            for (const auto& w : f->waiters()) {
                if (w.op == FlagCommand::Op::Barrier) {
                    os << "  " << w.requester << " waits at a barrier of " << f->name() << " (" << f->barrier_arrivals()
                       << " core(s) arrived)\n";
                    continue;
                }
                os << "  " << w.requester << " waits for " << f->name() << " flag " << w.flag << " "
                   << cond_name(w.cond) << " " << w.value << "; its value is " << f->value(w.flag)
                   << " and nothing pending will change it\n";
            }
    return os.str();
}

RunResult Simulation::run(const std::function<void(std::uint64_t, double)>& progress) {
    RunResult r;
    auto t0 = std::chrono::steady_clock::now();
    auto last_report = t0;
    const sc_core::sc_time slice(100, sc_core::SC_US);
    auto retired = [&] {
        std::uint64_t n = 0;
        for (auto* c : platform_->cores()) n += c->retired();
        return n;
    };
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    while (sc_core::sc_pending_activity()) {
        sc_core::sc_start(slice, sc_core::SC_EXIT_ON_STARVATION);
        auto now = std::chrono::steady_clock::now();
        if (progress && now - last_report > std::chrono::seconds(2)) {
            progress(retired(), ticks_to_ns(now_ticks()));
            last_report = now;
        }
    }
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) r.peak_rss_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;  // KiB on Linux
    r.simulated_ns = ticks_to_ns(now_ticks());
    r.instructions = retired();
    r.streams = trace_.streams().size();
    for (auto* c : platform_->cores())
        if (!c->finished()) r.completed = false;
    if (!r.completed) r.diagnosis = deadlock_diagnosis();

    for (auto* m : platform_->modules()) {
        if (auto busy = m->busy_time()) {
            UnitFigure u;
            u.name = m->name();
            u.kind = m->kind();
            u.busy_ns = ticks_to_ns(*busy);
            u.utilization = r.simulated_ns > 0 ? u.busy_ns / r.simulated_ns : 0;
            r.units.push_back(u);
        }
        if (auto* h = dynamic_cast<HbmController*>(m)) {
            r.hbm_bytes_read += h->bytes_read();
            r.hbm_bytes_written += h->bytes_written();
            r.hbm_peak_gbps += h->peak_gbps();
        }
        if (auto* x = dynamic_cast<MatrixUnit*>(m)) {
            r.flops += static_cast<double>(x->flops());
            r.peak_flops_per_s += x->peak_flops_per_s();
        }
    }
    return r;
}

}  // namespace xpu::platform
