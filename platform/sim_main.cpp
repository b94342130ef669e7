// sim_main: replay a trace on a platform description and report.
//   sim_main --platform configs/xpu.yaml --trace t.bin [--out DIR] [--set K=V]... [--quiet]
// Exit codes (docs/outputs.md): 0 ok, 1 internal error, 2 usage, 3 bad platform description,
// 4 bad trace, 5 deadlock (run incomplete), 6 cannot write outputs.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>
#include <systemc>

#include "platform/module_types.h"
#include "platform/platform_config.h"
#include "platform/run_report.h"
#include "platform/simulation.h"

namespace po = boost::program_options;
using namespace xpu::platform;

#ifndef XPU_VERSION
#define XPU_VERSION "0.0.0"
#endif

namespace {
enum Exit { kOk = 0, kInternal = 1, kUsage = 2, kBadConfig = 3, kBadTrace = 4, kDeadlock = 5, kOutput = 6 };

int fail(int code, const std::string& msg) {
    std::cerr << "sim_main: " << msg << "\n";
    return code;
}
}  // namespace

int sc_main(int argc, char* argv[]) {
    // SystemC reports go through our own messages, never straight to the terminal.
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);

    po::options_description opts("sim_main: replay an accelerator instruction trace on a platform description");
    std::string platform_file, trace_file, out_dir = "xpusim-out";
    std::vector<std::string> sets;
    opts.add_options()
        ("platform,p", po::value(&platform_file), "platform description (YAML), e.g. configs/xpu.yaml")
        ("trace,t", po::value(&trace_file), "instruction trace (binary .bin, see docs/trace-format.md)")
        ("out,o", po::value(&out_dir), "output folder (default xpusim-out)")
        ("set", po::value(&sets)->composing(), "override a platform key: --set chip.modules.core0.mxu0.rows=256 (repeatable)")
        ("dump-config", "print the effective platform configuration (defaults filled in) and exit")
        ("list-types", "list the module types and their parameters and exit")
        ("quiet,q", "print nothing but errors")
        ("version", "print the version and exit")
        ("help,h", "this help");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        return fail(kUsage, std::string(e.what()) + " (see --help)");
    }
    if (vm.count("help")) {
        std::cout << opts << "\nexit codes: 0 ok, 1 internal error, 2 usage, 3 bad platform description, "
                             "4 bad trace, 5 deadlock, 6 cannot write outputs\n";
        return kOk;
    }
    if (vm.count("version")) {
        std::cout << "xpusim sim_main " << XPU_VERSION << " (SystemC " << sc_core::sc_version() << ")\n";
        return kOk;
    }
    if (vm.count("list-types")) {
        std::cout << describe_module_types();
        return kOk;
    }
    bool quiet = vm.count("quiet") > 0;
    std::string stats_path = (std::filesystem::path(out_dir) / "stats.json").string();
    if (!vm.count("dump-config")) std::remove(stats_path.c_str());  // a stale result must not outlive a failed run
    if (platform_file.empty()) return fail(kUsage, "--platform FILE is required (see --help)");

    PlatformConfig cfg;
    try {
        cfg = load_platform(platform_file, sets);
    } catch (const ConfigError& e) {
        return fail(kBadConfig, e.what());
    }
    if (vm.count("dump-config")) {
        std::cout << dump_config(cfg);
        return kOk;
    }
    if (trace_file.empty()) return fail(kUsage, "--trace FILE is required (see --help)");

    try {
        std::filesystem::create_directories(out_dir);
    } catch (const std::exception& e) {
        return fail(kOutput, out_dir + ": cannot create the output folder: " + e.what());
    }

    std::unique_ptr<Simulation> sim;
    RunResult result;
    try {
        sim = std::make_unique<Simulation>(cfg, trace_file);
        result = sim->run([&](std::uint64_t n, double sim_ns) {
            if (!quiet)
                std::cerr << "sim_main: " << n << " of " << sim->trace().total_instructions()
                          << " instructions retired, " << sim_ns / 1e3 << " us simulated\n";
        });
    } catch (const xpu::trace::TraceError& e) {
        return fail(kBadTrace, e.what());
    } catch (const ConfigError& e) {
        return fail(kBadConfig, e.what());
    } catch (const sc_core::sc_report& e) {
        std::string type = e.get_msg_type();
        if (type == "xpusim/trace" || type == "xpusim/run") return fail(kBadTrace, e.get_msg());
        return fail(kInternal, std::string("SystemC: ") + e.what());
    } catch (const std::exception& e) {
        return fail(kInternal, std::string("internal error: ") + e.what());
    }

    RunInputs in{platform_file, trace_file};
    try {
        write_stats_json(stats_path, in, result, sim->platform());
    } catch (const std::exception& e) {
        return fail(kOutput, e.what());
    }
    if (!quiet) {
        print_summary(std::cout, in, result);
        std::cout << "stats      " << stats_path << "\n";
    }
    if (!result.completed) {
        std::cerr << "sim_main: " << trace_file << ": the run did not complete: " << result.diagnosis;
        return kDeadlock;
    }
    return kOk;
}

// Our own main: SystemC's banner would otherwise go to stdout before sc_main runs (and corrupt
// --dump-config output); the kernel honours this variable only if it is set before it starts.
int main(int argc, char* argv[]) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    return sc_core::sc_elab_and_sim(argc, argv);
}
