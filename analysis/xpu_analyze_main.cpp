// xpu_analyze: the stall analysis of a finished run, from its output folder's transaction log.
//   xpu_analyze OUT                          report on the terminal + OUT/{report.txt, analysis.json,
//                                            report.html, timeline.json}
//   xpu_analyze OUT --apply N[,M...] -o patched.bin the trace with suggestion N (and M...) applied (re-simulate it
//                                            to measure the gain against the estimate)
//   xpu_analyze OUT --rounds K -o patched.bin apply the best verified suggestion(s), re-simulate, re-analyse
//                                            and verify, K rounds at most (analysis/rounds.h)
//   xpu_analyze --compare OUT_A OUT_B [-o DIR] two runs side by side: platform differences, time by
//                                            cause, op and layer; DIR/compare.{txt,json,html}
//                                            (default xpusim-compare)
//   xpu_analyze OUT --verify K | --no-verify  replay K suggestions (default 5; each kind's best first) and rank them
//                                            by measured saving, or do not replay
//   xpu_analyze OUT --sensitivity [--factor F] also the measured speedup of each resource scaled by F
//   xpu_analyze OUT --per-layer              time by op per layer (default: added up over layers)
//   xpu_analyze OUT --timing                 also the seconds of each phase on stderr (scripts/bench.sh)
//   xpu_analyze OUT --timeline full|summary|off  how much timeline.json shows (default: summary above
//                                            1,000,000 events, analysis/timeline_json.h)
// Exit codes: 0 done, 2 usage, 4 unreadable log or trace, 6 an output could not be written,
// 130/143 (129) interrupted by SIGINT/SIGTERM (SIGHUP): no analysis file left behind.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include "analysis/apply.h"
#include "analysis/bounds.h"
#include "analysis/compare.h"
#include "analysis/outputs.h"
#include "analysis/patch.h"
#include "analysis/render_util.h"
#include "analysis/replay.h"
#include "analysis/report.h"
#include "analysis/rounds.h"
#include "traces/file_paths.h"
#include "traces/huge_page_malloc.h"

namespace po = boost::program_options;
using namespace xpu::analysis;

namespace {
constexpr int kOk = 0, kUsage = 2, kBadLog = 4, kOutput = 6, kSignalBase = 128;
int fail(int code, const std::string& msg) {
    std::cerr << "xpu_analyze: " << msg << "\n";
    return code;
}

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills at once
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

const char* signal_text(int sig) {
    return sig == SIGTERM ? "terminated (SIGTERM)" : sig == SIGHUP ? "hung up (SIGHUP)" : "interrupted (SIGINT)";
}

// The analysis polls for a signal only between its replays; this thread makes any signal take
// effect within half a second: it removes the analysis files and ends the process.
class Watchdog {
public:
    explicit Watchdog(std::string dir) : dir_(std::move(dir)), thread_([this] { watch(); }) {}
    ~Watchdog() {
        done_ = true;
        thread_.join();
    }

private:
    void watch() {
        using namespace std::chrono_literals;
        while (!done_ && !g_signal) std::this_thread::sleep_for(20ms);
        for (int i = 0; i < 25 && !done_; ++i) std::this_thread::sleep_for(20ms);  // the replays' loop stops its workers
        if (done_) return;
        if (!dir_.empty()) remove_analysis_outputs(dir_);
        const int sig = g_signal ? g_signal : SIGINT;
        const std::string msg = std::string("xpu_analyze: ") + signal_text(sig) + "; no analysis written\n";
        if (::write(2, msg.data(), msg.size()) < 0) {
        }
        _exit(kSignalBase + sig);
    }
    std::string dir_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// What went to stdout must have gone: a full disk or a closed pipe is an error.
bool stdout_ok() {
    std::cout.flush();
    return static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && !std::ferror(stdout);
}

// A count option as text: boost would read "-5" into a size_t as a huge number.
bool parse_count(const std::string& text, std::size_t lo, std::size_t hi, std::size_t& out) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
    const std::size_t v = std::stoul(text);
    if (v < lo || v > hi) return false;
    out = v;
    return true;
}

// One line per phase, "xpu_analyze timing: PHASE SECONDS s", then the records and the speed of
// load + analyze (the part that turns the log into the Analysis; the writers are separate),
// and the process's peak RSS so far. scripts/bench.sh reads these lines. The CPU seconds are
// those of the thread that ran the phase (timeline.json is written beside the other files).
void print_timing(const PhaseTimes& t) {
    for (std::size_t i = 0; i < t.seconds.size(); ++i)
        std::fprintf(stderr, "xpu_analyze timing: %s %.6f s (thread CPU %.3f s)\n", t.seconds[i].first.c_str(), t.seconds[i].second,
                     i < t.thread_cpu.size() ? t.thread_cpu[i] : 0.0);
    const double la = t.of("load") + t.of("analyze");
    std::fprintf(stderr, "xpu_analyze timing: records %llu (%.2f M records/s over load + analyze)\n",
                 static_cast<unsigned long long>(t.records), la > 0 ? static_cast<double>(t.records) / la / 1e6 : 0.0);
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        std::fprintf(stderr, "xpu_analyze timing: peak_rss %llu bytes\n", static_cast<unsigned long long>(ru.ru_maxrss) * 1024);  // KiB on Linux
}

// The exact command that re-simulates a patched trace on the run's effective platform: the
// sim_main beside this executable (by the path it was found at, so that it can be pasted as
// is), into a folder of its own named after the trace, so that it never overwrites the run.
std::string resimulate_command(const std::string& dir, const std::string& patched) {
    std::string sim = find_sim_main();
    if (sim.empty()) sim = "sim_main";
    std::filesystem::path stem(patched);
    stem.replace_extension();
    auto quote = [](const std::string& s) {
        if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") == std::string::npos)
            return s;
        std::string q = "'";
        for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
        return q + "'";
    };
    return quote(sim) + " --platform " + quote((std::filesystem::path(dir) / "platform.yaml").string()) + " --trace " + quote(patched) +
           " --out " + quote(stem.string() + "-out");
}

// --apply LIST: the trace with the suggestions at these ranks applied (in the ranking the report
// showed, the replays' one when the run was verified), written to `out`.
int apply_suggestions(const std::string& dir, const std::string& list, const std::string& out, bool quiet) {
    const RunData run = load_run(dir);
    Analysis a = analyze(run);
    try {
        read_verification((std::filesystem::path(dir) / "verification.txt").string(), a);
    } catch (const std::runtime_error& e) {
        return fail(kBadLog, e.what());
    }
    Applied ap;
    try {
        ap = apply_ranks(run, a, parse_ranks(list), list, out);
    } catch (const ApplyError& e) {
        return fail(e.kind == ApplyError::Kind::Usage ? kUsage : e.kind == ApplyError::Kind::Output ? kOutput : kBadLog, e.what());
    }
    const Suggestion& s = ap.s;
    const bool together = ap.together, measured = ap.measured;
    const std::int64_t saving = ap.measured_saving;
    const PatchCount& n = ap.changes;
    if (quiet) return kOk;
    std::cout << "applied suggestion" << (together ? "s " : " ") << list << " [" << s.kind << "] at " << s.where << ": " << changes_text(n)
              << "; ";
    if (measured)
        std::cout << (together ? "replayed together" : verdict_key(s.verdict)) << ", measured saving " << (saving < 0 ? "-" : "")
                  << format_time(static_cast<xpu::Tick>(std::llabs(saving))) << " (estimated " << format_time(s.estimated_saving) << capped_note(s) << ")\n";
    else
        std::cout << "not verified, estimated saving " << format_time(s.estimated_saving) << capped_note(s) << "\n";
    std::cout << "patched trace " << out << "; re-simulate it:\n  " << resimulate_command(dir, out) << "\n";
    return kOk;
}

// Why a patched trace may not be written to `out`: it would replace a file of the run folder
// `dir` (its trace copy is what --apply reads, its log what the analysis reads), or the folder
// itself. "" when it may.
std::string overwrites_run(const std::string& out, const std::string& dir) {
    if (xpu::lies_inside(dir, out)) return "-o " + out + " would replace the run folder " + dir;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (xpu::same_file(out, e.path().string()))
            return "-o " + out + " would overwrite " + e.path().string() + ", a file of the run it is made from: choose another name";
    return "";
}
}  // namespace

// Malloc tuned for the analysis: huge pages, a fixed mmap threshold (traces/huge_page_malloc.h).
XPU_TUNE_MALLOC;

int main(int argc, char* argv[]) {
    po::options_description opts("xpu_analyze: where a run's time went, why, and what to change");
    std::vector<std::string> dirs;
    std::string out;
    std::string apply, rounds_text;
    std::size_t top = 10, verify_k = 5;
    std::string top_text, verify_text;
    double verify_budget = 300, factor = 2;
    opts.add_options()
        ("apply", po::value(&apply), "write the trace with suggestion N (1 = the top one) applied, or several that compose (1,3); needs -o")
        ("output,o", po::value(&out), "where --apply (--rounds: the last round) writes the patched trace; with --compare, the folder of "
                                        "compare.txt, compare.json, compare.html (default xpusim-compare)")
        ("compare", "compare two output folders: xpu_analyze --compare OUT_A OUT_B")
        ("top", po::value(&top_text), "rows per table in the terminal report (default 10)")
        ("per-layer", "time by op per layer (layer0/attn/qkv_proj, layer1/...) in report.txt and report.html, not added up over layers")
        ("rounds", po::value(&rounds_text), "apply what the run's verification measured best, re-simulate the patched trace (a full "
                                             "run: analysis, verification), and again, K rounds at most; needs -o (the last patched "
                                             "trace); each round's run in PATCHED-rounds/ (docs/analysis.md)")
        ("verify", po::value(&verify_text), "replay K suggestions (each kind's best estimate, then the best estimates) on the run's platform and rank by measured saving (default 5)")
        ("sensitivity", "also replay the trace with each major resource of its platform scaled (--factor), a table of measured speedups")
        ("factor", po::value(&factor), "how much more capable --sensitivity makes each resource (default 2)")
        ("no-verify", "do not replay: suggestions ranked by estimate, marked not verified")
        ("verify-budget", po::value(&verify_budget), "wall seconds for all replays (default 300; 0 = none); the rest stay not verified")
        ("timeline", po::value<std::string>(), xpu::analysis::timeline_option_help().c_str())
        ("quiet,q", "print nothing but errors")
        ("timing", "print the seconds of each phase (load, analyze, each file written) to stderr")
        ("version", "print the version and exit")
        ("help,h", "this help");
    po::options_description hidden;
    hidden.add_options()("dir", po::value(&dirs)->composing());
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description pos;
    pos.add("dir", -1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
        po::notify(vm);
    } catch (const std::exception& e) {
        return fail(kUsage, std::string(e.what()) + " (see --help)");
    }
    if (vm.count("help")) {
        std::cout << "usage: xpu_analyze OUT [--apply N -o patched.bin | --rounds K -o patched.bin] | xpu_analyze --compare OUT_A OUT_B\n"
                  << opts;
        return kOk;
    }
    if (vm.count("version")) {
        std::cout << "xpusim xpu_analyze " << XPU_VERSION << "\n";
        return kOk;
    }
    if (vm.count("top") && !parse_count(top_text, 1, 100000, top))
        return fail(kUsage, "--top '" + top_text + "': expected a number of rows, 1..100000");
    std::size_t rounds = 0;
    if (vm.count("rounds") && !parse_count(rounds_text, 1, 100, rounds))
        return fail(kUsage, "--rounds '" + rounds_text + "': expected a number of rounds, 1..100");
    if (vm.count("verify"))
        if (const std::string why = parse_verify_count(verify_text, verify_k); !why.empty()) return fail(kUsage, why);
    if (const std::string why = verify_budget_problem(verify_budget); !why.empty()) return fail(kUsage, why);
    TimelineMode timeline = TimelineMode::Auto;
    if (vm.count("timeline") && !parse_timeline_mode(vm["timeline"].as<std::string>(), timeline))
        return fail(kUsage, "--timeline '" + vm["timeline"].as<std::string>() + "': expected full, summary or off");
    const bool quiet = vm.count("quiet") > 0;
    install_signal_handlers();
    try {
        // The modes: each does something else with the folder (a plain analysis takes --sensitivity).
        const char* modes[] = {"compare", "apply", "rounds", "sensitivity"};
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j)
                if (vm.count(modes[i]) && vm.count(modes[j]))
                    return fail(kUsage, std::string("--") + modes[i] + " and --" + modes[j] + " do different things: one at a time (see --help)");
        for (const std::string& d : dirs)
            if (!std::filesystem::is_directory(d))
                return fail(kUsage, d + ": not a folder; expected the output folder of a run (sim_main --out)");
        if (vm.count("compare")) {
            if (dirs.size() != 2) return fail(kUsage, "--compare needs two output folders: xpu_analyze --compare OUT_A OUT_B");
            for (const std::string& d : dirs)
                if (!out.empty() && xpu::lies_inside(out, d))
                    return fail(kUsage, "-o " + out + ": inside the run folder " + d +
                                            " (a run replaces its whole folder, and refuses one holding other files): choose another folder");
            Watchdog watchdog("");  // writes nothing but stdout
            const RunData ra = load_run(dirs[0]), rb = load_run(dirs[1]);
            const Analysis a = analyze(ra), b = analyze(rb);
            const Comparison c = compare_runs(dirs[0], a, dirs[1], b);
            // Loud on stderr as well: a comparison piped into a file must not hide it.
            if (!c.same_trace) std::cerr << "xpu_analyze: " << trace_warning(c) << "\n";
            const std::string cmp_dir = out.empty() ? "xpusim-compare" : out;
            std::ostringstream text;
            print_comparison(text, c, top);
            try {
                std::filesystem::create_directories(cmp_dir);
                const std::filesystem::path d(cmp_dir);
                render::FileOut t((d / "compare.txt").string());
                t.write(text.str());
                t.close();
                write_comparison_json((d / "compare.json").string(), c);
                write_comparison_html((d / "compare.html").string(), c);
            } catch (const std::exception& e) {
                return fail(kOutput, cmp_dir + ": cannot write the comparison: " + e.what());
            }
            if (!quiet) std::cout << text.str() << "comparison " << cmp_dir << "/{compare.txt, compare.json, compare.html}\n";
            if (!stdout_ok()) return fail(kOutput, "cannot write the comparison to stdout");
            return kOk;
        }
        if (dirs.size() != 1) return fail(kUsage, "expected one output folder (of sim_main --out), see --help");
        if (vm.count("apply")) {
            if (out.empty()) return fail(kUsage, "--apply N needs -o PATCHED.bin");
            if (const std::string why = overwrites_run(out, dirs[0]); !why.empty()) return fail(kUsage, why);
            Watchdog watchdog("");
            const int rc = apply_suggestions(dirs[0], apply, out, quiet);
            if (rc == kOk && !quiet && !stdout_ok()) return fail(kOutput, "cannot write to stdout");
            return rc;
        }
        if (rounds > 0) {
            if (out.empty()) return fail(kUsage, "--rounds K needs -o PATCHED.bin (the last round's patched trace)");
            if (const std::string why = overwrites_run(out, dirs[0]); !why.empty()) return fail(kUsage, why);
            if (vm.count("no-verify") || verify_k == 0) return fail(kUsage, "--rounds applies only verified suggestions: not with --no-verify or --verify 0");
            RoundsOptions ro;
            ro.rounds = static_cast<unsigned>(rounds);
            ro.sim_args = {"--verify", std::to_string(verify_k), "--verify-budget", std::to_string(verify_budget)};
            ro.stop_requested = [] { return g_signal != 0; };
            if (!quiet) ro.progress = &std::cerr;
            std::filesystem::path stem(out);
            stem.replace_extension();
            try {
                const RoundsResult r = run_rounds(dirs[0], out, stem.string() + "-rounds", ro);
                if (!quiet) {
                    print_rounds(std::cout, r);
                    if (!r.rounds.empty())
                        std::cout << "patched trace " << out << " (all rounds applied); its run, reports and further suggestions: "
                                  << r.rounds.back().dir << "\n";
                }
            } catch (const ApplyError& e) {
                return fail(e.kind == ApplyError::Kind::Usage ? kUsage : e.kind == ApplyError::Kind::Output ? kOutput : kBadLog, e.what());
            } catch (const LogError&) {
                throw;
            } catch (const std::runtime_error& e) {
                if (g_signal) return fail(kSignalBase + g_signal, std::string(signal_text(g_signal)) + ": " + e.what());
                return fail(kOutput, e.what());
            }
            if (!quiet && !stdout_ok()) return fail(kOutput, "cannot write to stdout");
            return kOk;
        }
        OutputOptions o;
        o.print = !quiet;
        if (!quiet) o.progress = &std::cerr;
        o.top = top;
        o.per_layer = vm.count("per-layer") > 0;
        o.timeline = timeline;
        o.verify.enabled = !vm.count("no-verify") && verify_k > 0;
        o.verify.candidates = verify_k;
        o.verify.budget_seconds = verify_budget;
        if (!quiet) o.verify.progress = &std::cerr;
        o.sensitivity = vm.count("sensitivity") > 0;
        if (!(factor >= 1e-3 && factor <= 1e3)) {
            std::ostringstream f;
            f << "--factor " << factor << ": expected 0.001..1000 (how many times as capable --sensitivity makes each resource; 2 by default)";
            return fail(kUsage, f.str());
        }
        o.sensitivity_options.factor = factor;
        if (!quiet) o.sensitivity_options.progress = &std::cerr;
        PhaseTimes timing;
        if (vm.count("timing")) o.timing = &timing;
        o.verify.stop_requested = [] { return g_signal != 0; };
        o.sensitivity_options.stop_requested = o.verify.stop_requested;
        try {
            Watchdog watchdog(dirs[0]);
            analyze_folder(dirs[0], std::cout, o);
            if (o.timing) print_timing(timing);
        } catch (const LogError&) {
            throw;
        } catch (const std::runtime_error& e) {
            if (g_signal) {
                remove_analysis_outputs(dirs[0]);
                return fail(kSignalBase + g_signal, std::string(signal_text(g_signal)) + "; no analysis written");
            }
            return fail(kOutput, e.what());
        }
        if (g_signal) {
            remove_analysis_outputs(dirs[0]);
            return fail(kSignalBase + g_signal, std::string(signal_text(g_signal)) + "; no analysis written");
        }
        if (!quiet && !stdout_ok()) return fail(kOutput, "cannot write the report to stdout");
    } catch (const LogError& e) {
        return fail(kBadLog, e.what());
    }
    return kOk;
}
