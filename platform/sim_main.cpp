// sim_main: replay a trace on a platform description and report.
//   sim_main --platform configs/xpu.yaml --trace t.bin [--out DIR] [--set K=V]... [--quiet]
//            [--max-sim-time 10ms] [--deterministic]
// Exit codes (docs/outputs.md): 0 ok, 1 internal error, 2 usage, 3 bad platform description,
// 4 bad trace, 5 deadlock (run incomplete), 6 cannot write outputs, 7 time limit reached (run
// incomplete), 130 interrupted by SIGINT (143 by SIGTERM).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <boost/program_options.hpp>
#include <systemc>

#include "models/sim_time.h"
#include "platform/param_catalog.h"
#include "platform/output_folder.h"
#include "platform/param_reader.h"
#include "platform/platform_config.h"
#include "platform/run_report.h"
#include "platform/simulation.h"
#include "platform/txlog_meta.h"
#include "traces/progress.h"
#include "platform/vcd_writer.h"
#include "analysis/outputs.h"
#include "traces/huge_page_malloc.h"
#include "platform/txlog_writer.h"
#include "traces/file_digest.h"
#include "traces/file_paths.h"

namespace po = boost::program_options;
using namespace xpu::platform;

#ifndef XPU_VERSION
#define XPU_VERSION "0.0.0"
#endif

namespace {

// Whole vector or matrix units the trace never used while others of their kind worked (a trace
// generated for one vector unit replayed on configs/xpu-2vpu.yaml): a what-if on them measures
// nothing, and the run is slower than the platform could be. Said once per kind, with the run's
// summary (stdout: a finished run's stderr stays for errors).
void warn_unused_units(std::ostream& os, const xpu::platform::RunResult& r) {
    for (auto [role, what] : {std::pair{xpu::Role::Vector, "vector"}, std::pair{xpu::Role::Matrix, "matrix"}}) {
        std::vector<std::string> idle;
        std::size_t total = 0;
        for (const auto& u : r.units)
            if (u.role == role) {
                ++total;
                if (u.busy_ns <= 0) idle.push_back(u.name);
            }
        if (idle.empty() || idle.size() == total) continue;
        // The first few by name, then a count: on a 256-chip ring running one chip's trace the
        // whole list was ~55 KB on one line.
        constexpr std::size_t kNamed = 6;
        std::string list;
        for (std::size_t i = 0; i < idle.size() && i < kNamed; ++i) list += (list.empty() ? "" : ", ") + idle[i];
        if (idle.size() > kNamed) list += " and " + std::to_string(idle.size() - kNamed) + " more";
        os << "warning    the trace used " << total - idle.size() << " of the platform's " << total << " " << what
                  << " units; never used: " << list
                  << " (xpu_tracegen ... --platform FILE generates for the platform's units)\n";
    }
}
enum Exit {
    kOk = 0,
    kInternal = 1,
    kUsage = 2,
    kBadConfig = 3,
    kBadTrace = 4,
    kDeadlock = 5,
    kOutput = 6,
    kTimeLimit = 7,
    kSignalBase = 128,  // + the signal number: 130 for SIGINT, 143 for SIGTERM
};

const char* kExitCodes =
    "exit codes: 0 ok, 1 internal error, 2 usage, 3 bad platform description, 4 bad trace, "
    "5 deadlock, 6 cannot write outputs, 7 --max-sim-time reached, 130 interrupted (SIGINT), "
    "143 terminated (SIGTERM)\n";

// Set by the signal handler, polled by the run loop between slices of simulated time.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) { g_signal = sig; }

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills at once
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);  // a closed terminal: the same clean-up as Ctrl-C
}

const char* signal_text(int sig) {
    return sig == SIGTERM ? "terminated (SIGTERM)" : sig == SIGHUP ? "hung up (SIGHUP)" : "interrupted (SIGINT)";
}

// Writes what went to stdout (--dump-config, --list-types, the summary) through: a full disk
// or a closed pipe must not pass for success.
bool stdout_ok() {
    std::cout.flush();
    return static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && !std::ferror(stdout);
}

int fail(int code, const std::string& msg) {
    std::cerr << "sim_main: " << msg << "\n";
    return code;
}

// Writes `text` to `path` via a temporary name (no half-written file looks complete).
void write_text_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        f << text;
        if (!f.flush()) throw std::runtime_error(path + ": cannot write");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + ec.message());
    }
}

// "10ms", "2.5 us", "1s", "500ns" -> ps. False if malformed, not positive or too large.
bool parse_sim_time(const std::string& s, xpu::Tick& out) {
    std::size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    std::string num = s.substr(0, i), unit = s.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
    double v;
    if (num.empty() || !parse_real(num, v) || !(v > 0)) return false;
    double ps_per;
    if (unit == "ns") ps_per = 1e3;
    else if (unit == "us") ps_per = 1e6;
    else if (unit == "ms") ps_per = 1e9;
    else if (unit == "s") ps_per = 1e12;
    else return false;
    const double ps = v * ps_per;
    if (ps < 1 || ps > 1.8e19) return false;
    out = static_cast<xpu::Tick>(ps);
    return true;
}

// The files a run writes outside its staged output folder (the waveforms of a --vcd that lies
// elsewhere): removed with their temporaries when the run fails or is interrupted.
struct Outputs {
    OutputFolder* folder = nullptr;
    std::vector<std::string> files;
    void discard() const {
        if (folder) folder->discard();
        for (const auto& f : files) {
            std::remove(f.c_str());
            std::remove((f + ".tmp").c_str());
        }
    }
};

int interrupted(const Outputs& outs, const std::string& where) {
    outs.discard();
    const int sig = g_signal ? g_signal : SIGINT;
    std::cerr << "sim_main: " << signal_text(sig) << where << "; no outputs written\n";
    return kSignalBase + sig;
}

// A signal during the analysis: the simulation is complete, so its outputs (stats.json, the log,
// the effective platform, the waveforms) are kept: the analysis files are removed, the staging
// folder replaces OUT, and the message says how to analyse the run later. Called by the main
// thread, or by the watchdog while the analysis still runs (then what it wrote into the folder
// after its move is removed from OUT as well). Returns the exit status; if OUT cannot be replaced,
// nothing is kept (as for any other interrupt).
int interrupted_analysis(const Outputs& outs) noexcept {
    const int sig = g_signal ? g_signal : SIGINT;
    std::string msg = std::string("sim_main: ") + signal_text(sig) + " while analysing the run; ";
    try {
        xpu::analysis::remove_analysis_outputs(outs.folder->stage());
        outs.folder->commit();
        xpu::analysis::remove_analysis_outputs(outs.folder->out());
        msg += "the simulation's outputs are kept in " + outs.folder->out() +
               " (stats.json, txlog.bin, platform.yaml), without their analysis: analyse them with `xpu_analyze " +
               outs.folder->out() + "`\n";
    } catch (...) {
        outs.discard();
        msg += "no outputs written\n";
    }
    if (::write(2, msg.data(), msg.size()) < 0) {
    }
    return kSignalBase + sig;
}

// During the analysis (seconds on a long run) a signal must take effect promptly, but the
// analysis polls for it only between replays. This thread does: once a signal has arrived and
// the analysis has not returned within a grace period (long enough for the replays' loop to
// stop its workers), it keeps the simulation's outputs without the analysis and ends the process.
class AnalysisWatchdog {
public:
    explicit AnalysisWatchdog(const Outputs& outs) : outs_(outs), thread_([this] { watch(); }) {}
    ~AnalysisWatchdog() {
        done_ = true;
        thread_.join();
    }

private:
    void watch() {
        using namespace std::chrono_literals;
        while (!done_ && !g_signal) std::this_thread::sleep_for(20ms);
        for (int i = 0; i < 25 && !done_; ++i) std::this_thread::sleep_for(20ms);
        if (done_) return;
        _exit(interrupted_analysis(outs_));
    }
    const Outputs& outs_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};
}  // namespace

int sc_main(int argc, char* argv[]) {
    install_signal_handlers();
    // SystemC reports go through our own messages, never straight to the terminal.
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);

    po::options_description opts("sim_main: replay an accelerator instruction trace on a platform description");
    std::string platform_file, trace_file, out_dir = "xpusim-out", max_time_text;
    std::vector<std::string> sets;
    opts.add_options()
        ("platform,p", po::value(&platform_file), "platform description (YAML), e.g. configs/xpu.yaml")
        ("trace,t", po::value(&trace_file), "instruction trace (binary .bin, see docs/trace-format.md)")
        ("out,o", po::value(&out_dir), "output folder (default xpusim-out)")
        ("set", po::value(&sets)->composing(), "override a platform key: --set chip.modules.core0.mxu0.rows=256 (repeatable)")
        ("max-sim-time", po::value(&max_time_text),
         "stop (exit 7, outputs marked incomplete) rather than simulate past this time: e.g. 500us, 10ms, 2s (units ns, us, ms, s)")
        ("deterministic", "write the host figures (build_seconds, wall_seconds, instructions_per_second, peak_rss_bytes) as 0, "
                          "so that the same inputs give byte-identical outputs")
        ("vcd", po::value<std::string>(), "write waveforms for GTKWave to FILE.vcd (+ .gtkw save file; docs/waveforms.md)")
        ("vcd-signals", po::value<std::string>(), "only these signals: comma-separated globs, e.g. '*.mxu0.busy,*.scalar.*'")
        ("vcd-window", po::value<std::string>(), "only this time window, START_NS:END_NS (either side may be empty)")
        ("verify", po::value<std::string>(), "replay K suggestions (each kind's best estimate, then the best estimates) on the effective platform and rank by measured saving (default 5)")
        ("sensitivity", "also replay the trace with each major resource scaled x2 (HBM, DMA, vector units, VMEM, clock, ICI links): measured speedups")
        ("no-verify", "do not replay the suggestions: ranked by estimate, marked not verified")
        ("verify-budget", po::value<double>(), "wall seconds for all replays (default 300; 0 = none); the rest stay not verified")
        ("timeline", po::value<std::string>(), xpu::analysis::timeline_option_help().c_str())
        ("no-analysis", "do not analyse the run at the end (the transaction log is still written; run xpu_analyze OUT later)")
        ("no-txlog", "write no transaction log (OUT/txlog.*) and so no analysis: the fastest replay")
        ("dump-config", "print the effective platform configuration (defaults filled in) and exit")
        ("list-types", "list every key of a platform description and of each module type (type, range, unit, "
                       "default, meaning) and exit")
        ("markdown", "with --list-types: as the Markdown tables of docs/platform.md")
        ("quiet,q", "print nothing but errors")
        ("version", "print the version and exit")
        ("help,h", "this help");
    // Words that are not options are collected to be refused: a stray argument is a mistake
    // (a forgotten --trace?), never ignored.
    std::vector<std::string> stray;
    po::options_description hidden;
    hidden.add_options()("stray-argument", po::value(&stray)->composing());
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description pos;
    pos.add("stray-argument", -1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
        po::notify(vm);
    } catch (const std::exception& e) {
        return fail(kUsage, std::string(e.what()) + " (see --help)");
    }
    if (!stray.empty())
        return fail(kUsage, "unexpected argument '" + stray.front() + "': every input is given by an option (--platform FILE, --trace FILE; see --help)");
    if (vm.count("help")) {
        std::cout << opts << "\n" << kExitCodes;
        return kOk;
    }
    if (vm.count("version")) {
        std::cout << "xpusim sim_main " << XPU_VERSION << " (SystemC " << sc_core::sc_version() << ")\n";
        return kOk;
    }
    if (vm.count("markdown") && !vm.count("list-types")) return fail(kUsage, "--markdown goes with --list-types (see --help)");
    if (vm.count("list-types")) {
        std::cout << (vm.count("markdown") ? param_reference_markdown() : param_reference_text());
        if (!stdout_ok()) return fail(kOutput, "cannot write the key reference to stdout");
        return kOk;
    }
    const bool quiet = vm.count("quiet") > 0;
    const bool deterministic = vm.count("deterministic") > 0;
    xpu::Tick max_sim_time = 0;
    if (vm.count("max-sim-time") && !parse_sim_time(max_time_text, max_sim_time))
        return fail(kUsage, "--max-sim-time '" + max_time_text +
                                "': expected a positive time with a unit, at most 18000000 s (2^64 ps), e.g. 500us, 10ms or 2s (units ns, us, ms, s)");
    std::size_t verify_k = xpu::analysis::VerifyOptions{}.candidates;
    if (vm.count("verify"))
        if (const std::string why = xpu::analysis::parse_verify_count(vm["verify"].as<std::string>(), verify_k); !why.empty())
            return fail(kUsage, why);
    if (vm.count("verify-budget"))
        if (const std::string why = xpu::analysis::verify_budget_problem(vm["verify-budget"].as<double>()); !why.empty())
            return fail(kUsage, why);
    xpu::analysis::TimelineMode timeline = xpu::analysis::TimelineMode::Auto;
    if (vm.count("timeline") && !xpu::analysis::parse_timeline_mode(vm["timeline"].as<std::string>(), timeline))
        return fail(kUsage, "--timeline '" + vm["timeline"].as<std::string>() + "': expected full, summary or off");
    if (platform_file.empty()) return fail(kUsage, "--platform FILE is required (see --help)");
    if (!vm.count("dump-config") && trace_file.empty()) return fail(kUsage, "--trace FILE is required (see --help)");

    const bool txlog_on = !vm.count("no-txlog"), analysis_on = txlog_on && !vm.count("no-analysis");
    // Options that would do nothing, asked for: said so, not ignored.
    if (vm.count("sensitivity") && !analysis_on)
        return fail(kUsage, std::string("--sensitivity is a part of the analysis, which ") + (txlog_on ? "--no-analysis" : "--no-txlog") +
                                " turns off (run xpu_analyze OUT --sensitivity on a run with its log)");
    for (const char* o : {"vcd-window", "vcd-signals"})
        if (vm.count(o) && !vm.count("vcd")) return fail(kUsage, std::string("--") + o + " selects what --vcd writes: it needs --vcd FILE");
    // The waveforms: where VcdWriter writes them (its path, and the files beside it).
    std::string vcd_path;
    if (vm.count("vcd")) {
        vcd_path = vm["vcd"].as<std::string>();
        if (vcd_path.empty()) return fail(kUsage, "--vcd '': expected a file name such as out/wave.vcd");
        if (std::filesystem::is_directory(vcd_path))
            return fail(kUsage, "--vcd " + vcd_path + ": is a folder; expected the name of the VCD file to write, such as " +
                                    (std::filesystem::path(vcd_path) / "wave.vcd").string());
    }
    auto vcd_files = [](const std::string& path) {
        std::string stem = path;
        if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".vcd") == 0) stem.resize(stem.size() - 4);
        return std::vector<std::string>{path, stem + ".gtkw", stem + ".opcodes.txt", stem + ".stalls.txt"};
    };
    if (!vcd_path.empty())  // an output that would overwrite an input
        for (const auto& f : vcd_files(vcd_path))
            for (const auto& [opt, in] : {std::pair<const char*, std::string>{"--trace", trace_file}, {"--platform", platform_file}})
                if (!in.empty() && xpu::same_file(f, in))
                    return fail(kUsage, "--vcd " + vcd_path + " would overwrite " + f + ", the " + opt +
                                            " input: choose another name for the waveforms");
    std::string vcd_target = vcd_path;  // a link's end (file_paths.h: output_target)
    if (!vcd_path.empty()) {
        for (const auto& f : vcd_files(vcd_path)) {
            // Inside OUT: not one of the run's own files, which the run writes after the waveforms.
            if (xpu::lies_inside(f, out_dir)) {
                const std::string rel = xpu::relative_inside(f, out_dir);
                if (rel.find('/') == std::string::npos && is_run_file_name(rel))
                    return fail(kUsage, "--vcd " + vcd_path + " would write " + f + ", a file of the run's own (--out " + out_dir +
                                            "): choose another name for the waveforms");
                continue;
            }
            try {
                const std::string t = xpu::output_target(f);
                if (f == vcd_path) vcd_target = t;
            } catch (const std::exception& e) {
                return fail(kUsage, std::string("--vcd: ") + e.what());
            }
        }
    }

    PlatformConfig cfg;
    try {
        cfg = load_platform(platform_file, sets);
    } catch (const ConfigError& e) {
        return fail(kBadConfig, e.what());
    } catch (const std::exception& e) {
        return fail(kInternal, platform_file + ": internal error while loading: " + e.what() +
                                   " (a bug: please report it with the inputs)");
    }
    if (vm.count("dump-config")) {
        std::cout << dump_config(cfg);
        if (!stdout_ok()) return fail(kOutput, "cannot write the configuration to stdout");
        return kOk;
    }
    if (g_signal) return interrupted(Outputs{}, " before the run");

    // Every output goes to a staging folder beside OUT, which replaces OUT when the run
    // succeeds (platform/output_folder.h).
    std::unique_ptr<OutputFolder> folder;
    try {
        folder = std::make_unique<OutputFolder>(out_dir, std::vector<std::string>{trace_file, platform_file});
    } catch (const std::exception& e) {
        return fail(kOutput, e.what());
    }
    Outputs outs;
    outs.folder = folder.get();
    const std::string stats_path = folder->staged("stats.json");
    const std::string txlog_path = folder->staged("txlog.bin");
    const std::string trace_copy = folder->staged("txlog.trace.bin");
    const std::string platform_copy = folder->staged("platform.yaml");
    std::string vcd_write = vcd_target;  // where VcdWriter writes: inside the staging folder if OUT holds it
    if (!vcd_path.empty()) {
        if (xpu::lies_inside(vcd_path, out_dir)) {
            vcd_write = (std::filesystem::path(folder->stage()) / xpu::relative_inside(vcd_path, out_dir)).string();
        } else {
            for (const auto& f : vcd_files(vcd_target)) outs.files.push_back(f);
        }
        std::error_code ec;
        const auto dir = std::filesystem::path(vcd_write).parent_path();
        if (!dir.empty()) std::filesystem::create_directories(dir, ec);  // --vcd out/wave.vcd on a fresh checkout
        if (ec) {
            outs.discard();
            return fail(kOutput, "--vcd " + vcd_path + ": cannot create its folder " + dir.string() + ": " + ec.message());
        }
    }

    std::unique_ptr<Simulation> sim;
    // Whichever way sc_main returns, the platform (thousands of modules on a large torus) is not
    // torn down: SystemC removes each process from a list, quadratic in their number, and the
    // process ends right after anyway.
    struct KeepToExit {
        std::unique_ptr<Simulation>& sim;
        ~KeepToExit() {
            [[maybe_unused]] static Simulation* kept = nullptr;
            if (!sim) return;
            sim->stop_check();  // a check beside the run still going (a failure before the run)
            kept = sim.release();
        }
    } keep_to_exit{sim};
    // stats.json's trace_sha256, from the reads of the check and the run (no pass of its own).
    const auto trace_digest = std::make_shared<xpu::trace::FileDigest>();
    std::unique_ptr<VcdWriter> vcd;
    std::unique_ptr<xpu::txlog::Writer> txlog;
    xpu::RecorderFanOut recorders;
    RunResult result;
    auto stop_requested = [] { return g_signal != 0; };
    auto fail_run = [&](int code, const std::string& msg) {
        outs.discard();  // nothing of a failed run stays: the previous OUT is untouched
        return fail(code, msg);
    };
    try {
        try {
            sim = std::make_unique<Simulation>(cfg, trace_file, stop_requested, trace_digest);
        } catch (const BuildInterrupted&) {
            return interrupted(outs, " while building the platform");
        }
        if (g_signal) return interrupted(outs, " before the run");
        // The check of every instruction runs on a second thread beside the run, which waits for
        // it instruction by instruction; its verdict comes first below, whatever the run did.
        // Only for a trace long enough for the check to cost something (~40 ns an instruction:
        // from 1 M instructions on): the thread's own stack and heap are a few more memory
        // mappings, and a 4096-chip ring's SystemC thread stacks need all but a few of the
        // 65,530 Linux allows by default (vm.max_map_count), so it failed to start with it.
        constexpr std::uint64_t kCheckBesideFrom = 1'000'000;
        if (sim->trace().total_instructions() >= kCheckBesideFrom) {
            sim->start_check(stop_requested);
        } else if (!sim->check_trace(stop_requested)) {
            return interrupted(outs, " while checking the trace");
        }
        if (!vcd_path.empty()) {
            VcdOptions o;
            o.path = vcd_write;
            o.shown_path = vcd_path;
            if (vm.count("vcd-signals")) o.signals = vm["vcd-signals"].as<std::string>();
            try {
                if (vm.count("vcd-window")) o.set_window_ns(vm["vcd-window"].as<std::string>());
                vcd = std::make_unique<VcdWriter>(sim->platform(), o);
            } catch (const std::invalid_argument& e) {
                return fail_run(kUsage, e.what());
            } catch (const std::runtime_error& e) {
                return fail_run(kOutput, e.what());
            }
        }
        if (txlog_on) {
            // The analysis reads only OUT/txlog.*: the log, and the program it ran.
            try {
                std::filesystem::copy_file(trace_file, trace_copy, std::filesystem::copy_options::overwrite_existing);
                txlog = std::make_unique<xpu::txlog::Writer>(txlog_path, xpu::txlog_header(sim->platform(), trace_file, platform_file));
            } catch (const std::exception& e) {
                return fail_run(kOutput, std::string(e.what()));
            }
            if (vcd) {  // both through a fan-out; the log alone straight to it (a virtual call less per event)
                recorders.add(txlog.get());
                recorders.add(vcd.get());
                sim->platform().set_recorder(&recorders);
            } else {
                sim->platform().set_recorder(txlog.get());
            }
        } else if (vcd) {
            vcd->attach(sim->platform());
        }
        RunOptions ro;
        ro.max_sim_time = max_sim_time;
        ro.stop_requested = stop_requested;
        // "sim_main: simulating: N of M instructions retired, T us simulated (P%), E s, ETA R s"
        // (run() calls it every two seconds; the ETA assumes the instructions left go as fast).
        xpu::ProgressLine sim_progress(quiet ? nullptr : &std::cerr, "sim_main", 0, 0);
        ro.progress_seconds = xpu::ProgressLine::default_seconds();
        ro.progress = [&](std::uint64_t n, double sim_ns) {
            const std::uint64_t total = sim->trace().total_instructions();
            std::ostringstream what;
            what << "simulating: " << n << " of " << total << " instructions retired, " << sim_ns / 1e3 << " us simulated";
            sim_progress.update(total ? static_cast<double>(n) / static_cast<double>(total) : 0, what.str());
        };
        try {
            result = sim->run(ro);
        } catch (...) {
            // A run that failed on a trace the check refuses (a corrupt block the run's reader
            // met first, or an instruction the gate held back) fails with the check's message,
            // as when the check came first.
            if (!sim->finish_check()) return interrupted(outs, " while checking the trace");
            throw;
        }
        if (!sim->finish_check()) return interrupted(outs, " while checking the trace");
    } catch (const xpu::trace::TraceError& e) {
        return fail_run(kBadTrace, e.what());
    } catch (const ConfigError& e) {
        return fail_run(kBadConfig, e.what());
    } catch (const sc_core::sc_report& e) {
        std::string type = e.get_msg_type();
        if (type == "xpusim/trace") return fail_run(kBadTrace, e.get_msg());  // names the file already
        if (type == "xpusim/run") return fail_run(kBadTrace, trace_file + ": " + e.get_msg());
        return fail_run(kInternal, std::string("SystemC: ") + e.what() + " (a bug: please report it with the inputs)");
    } catch (const std::exception& e) {
        return fail_run(kInternal, std::string("internal error: ") + e.what() + " (a bug: please report it with the inputs)");
    }
    if (result.stop == StopReason::Interrupted || g_signal) {
        std::ostringstream where;
        where << " at " << result.simulated_ns / 1e3 << " us simulated, " << result.instructions << " of "
              << sim->trace().total_instructions() << " instructions retired";
        int rc = interrupted(outs, where.str());
        if (!quiet) std::cerr << result.diagnosis;
        return rc;
    }
    if (deterministic) {
        result.wall_seconds = 0;
        result.build_seconds = 0;
        result.peak_rss_bytes = 0;
    }

    RunInputs in;
    in.platform_file = platform_file;
    in.trace_file = trace_file;
    in.deterministic = deterministic;
    in.command_line.push_back("sim_main");  // not argv[0]: its path differs between checkouts
    for (int i = 1; i < argc; ++i) in.command_line.push_back(argv[i]);
    in.overrides = sets;
    in.version = std::string("xpusim ") + XPU_VERSION;
    try {
        in.trace_sha256 = trace_digest->finish(trace_file);
    } catch (const std::exception& e) {
        outs.discard();
        return fail(kBadTrace, e.what());
    }
    try {
        if (txlog) {
            const unsigned status = result.stop == StopReason::Deadlock ? 1 : result.stop == StopReason::MaxSimTime ? 2 : 0;
            txlog->finish(xpu::ns_to_ticks(result.simulated_ns), status);
        }
        write_stats_json(stats_path, in, result, sim->platform());
        write_text_file(platform_copy, dump_config(cfg));  // the run's effective platform: what replays run on
    } catch (const std::exception& e) {
        return fail_run(kOutput, e.what());
    }
    if (vcd) {
        try {
            vcd->finish(xpu::ns_to_ticks(result.simulated_ns));
        } catch (const std::exception& e) {
            return fail_run(kOutput, e.what());
        }
    }
    if (g_signal) return interrupted(outs, " while writing the outputs");
    if (!quiet) {
        if (result.stop == StopReason::Completed) warn_unused_units(std::cout, result);
        print_summary(std::cout, in, result);
        // Flushed before the analysis (seconds on a long run): the summary is the run's result.
        std::cout << "stats      " << folder->final_path("stats.json") << std::endl;
    }
    if (analysis_on) {
        xpu::analysis::OutputOptions ao;
        ao.print = !quiet;
        ao.shown_dir = out_dir;
        ao.timeline = timeline;
        ao.verify.candidates = verify_k;
        ao.verify.enabled = !vm.count("no-verify") && verify_k > 0;
        if (vm.count("verify-budget")) ao.verify.budget_seconds = vm["verify-budget"].as<double>();
        ao.verify.stop_requested = stop_requested;
        if (!quiet) ao.verify.progress = &std::cerr;
        ao.sensitivity = vm.count("sensitivity") > 0;
        ao.sensitivity_options.stop_requested = stop_requested;
        if (!quiet) ao.sensitivity_options.progress = &std::cerr;
        if (!quiet) ao.progress = &std::cerr;
        ao.progress_label = "sim_main";
        try {
            AnalysisWatchdog watchdog(outs);
            if (!quiet) std::cout << "\n";
            xpu::analysis::analyze_folder(folder->stage(), std::cout, ao);
        } catch (const std::exception& e) {
            if (g_signal) return interrupted_analysis(outs);
            return fail_run(kOutput, std::string("the analysis of the run failed: ") + e.what());
        }
        if (g_signal) return interrupted_analysis(outs);
        if (!quiet)
            std::cout << "analysis   " << out_dir << "/{report.txt, analysis.json, report.html"
                      << (timeline == xpu::analysis::TimelineMode::Off ? "" : ", timeline.json") << "}\n";
        if (!quiet) std::cout << "platform   " << folder->final_path("platform.yaml") << " (the effective description: replays of this run use it)\n";
        // The summary's peak RSS was the simulation's; the analysis usually needs more.
        if (!quiet && !deterministic)
            std::cout << "peak RSS   " << std::fixed << std::setprecision(2) << static_cast<double>(xpu::platform::process_peak_rss()) / 1048576.0
                      << " MiB (the whole process: simulation and analysis)\n" << std::defaultfloat;
    }
    if (!quiet && !stdout_ok()) return fail_run(kOutput, "cannot write the summary to stdout");
    try {
        folder->commit();
    } catch (const std::exception& e) {
        return fail_run(kOutput, e.what());
    }
    switch (result.stop) {
        case StopReason::Deadlock:
            std::cerr << "sim_main: " << trace_file << ": the run did not complete: " << result.diagnosis;
            return kDeadlock;
        case StopReason::MaxSimTime:
            std::cerr << "sim_main: " << trace_file << ": the run did not complete: " << result.diagnosis;
            return kTimeLimit;
        default: break;
    }
    return kOk;
}

// Malloc tuned for the analysis at the end of a run: huge pages, a fixed mmap threshold (traces/huge_page_malloc.h).
XPU_TUNE_MALLOC;

// Our own main: SystemC's banner would otherwise go to stdout before sc_main runs (and corrupt
// --dump-config output); the kernel honours this variable only if it is set before it starts.
int main(int argc, char* argv[]) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    return sc_core::sc_elab_and_sim(argc, argv);
}
