// vcd_dump: a test-only driver of VcdWriter (tests/e2e/vcd.sh). Runs TRACE on PLATFORM and
// writes OUT.vcd, OUT.gtkw and the GTKWave filter files. sim_main's --vcd does the same.
// usage: vcd_dump PLATFORM TRACE OUT.vcd [--signals GLOBS] [--window A:B] [--set KEY=VALUE]... [--none]
// --none runs without the writer (the baseline of the cost figures in docs/waveforms.md).
// Exit: 0 ok, 1 error, 2 usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <systemc>

#include "models/sim_time.h"
#include "platform/platform_config.h"
#include "platform/simulation.h"
#include "platform/vcd_writer.h"

namespace {

int usage(const char* why) {
    std::fprintf(stderr, "vcd_dump: %s\nusage: vcd_dump PLATFORM TRACE OUT.vcd [--signals GLOBS] [--window A:B] "
                         "[--set KEY=VALUE]... [--none]\n", why);
    return 2;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    std::vector<std::string> pos, sets;
    xpu::platform::VcdOptions opts;
    bool none = false;
    try {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
                return argv[++i];
            };
            if (a == "--signals") opts.signals = value();
            else if (a == "--window") opts.set_window_ns(value());
            else if (a == "--set") sets.push_back(value());
            else if (a == "--none") none = true;
            else if (a.rfind("--", 0) == 0) return usage(("unknown option " + a).c_str());
            else pos.push_back(a);
        }
    } catch (const std::invalid_argument& e) {
        return usage(e.what());
    }
    if (pos.size() != 3) return usage("need PLATFORM TRACE OUT.vcd");
    opts.path = pos[2];
    try {
        auto cfg = xpu::platform::load_platform(pos[0], sets);
        xpu::platform::Simulation sim(cfg, pos[1]);
        if (none) {
            auto r = sim.run();
            std::printf("no waveform: %.0f ns simulated, %llu instructions, %.2f s\n", r.simulated_ns,
                        static_cast<unsigned long long>(r.instructions), r.wall_seconds);
            return r.completed ? 0 : 1;
        }
        xpu::platform::VcdWriter vcd(sim.platform(), opts);
        vcd.attach(sim.platform());
        auto r = sim.run();
        if (!r.completed) std::fprintf(stderr, "vcd_dump: run did not complete: %s\n", r.diagnosis.c_str());
        vcd.finish(xpu::ns_to_ticks(r.simulated_ns));
        std::printf("%s: %zu of %zu signals, %llu changes, %.0f ns simulated, %.2f s\n", opts.path.c_str(),
                    vcd.selected_signals().size(), vcd.declared_signals(),
                    static_cast<unsigned long long>(vcd.changes()), r.simulated_ns, r.wall_seconds);
        return r.completed ? 0 : 1;
    } catch (const std::invalid_argument& e) {
        return usage(e.what());
    } catch (const sc_core::sc_report& e) {
        std::fprintf(stderr, "vcd_dump: %s\n", e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vcd_dump: %s\n", e.what());
    }
    return 1;
}

int main(int argc, char* argv[]) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    return sc_core::sc_elab_and_sim(argc, argv);
}
