// xpu_sweep: one trace replayed on many platforms (docs/sweep.md).
//   xpu_sweep SPEC.yaml --out DIR [-j N] [--slurm [--partition P] [--time T] [--no-wait]] [--resume]
// SPEC lists traces, platforms and a grid of platform keys (the cross product of their values);
// every point is one sim_main run into DIR/runs/NNNN; DIR/results.csv has a row per point and
// DIR/report.html plots speedup and stall mix per point. Points run on a local process pool, or
// as a Slurm job array (sbatch), which the sweep waits for (or --resume collects later).
// Exit codes: 0 every point ok, 2 usage, 3 bad spec (or a point whose platform is not valid),
// 6 cannot write the outputs, 10 outputs written but some points not ok (see their status and
// error), 130/143 interrupted (the rows of the points not run say so; --resume continues).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "platform/run_report.h"
#include "platform/sweep.h"

extern char** environ;

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace xpu::platform;
using namespace xpu::platform::sweep;

namespace {
constexpr int kOk = 0, kUsage = 2, kBadSpec = 3, kOutput = 6, kSomeFailed = 10, kSignalBase = 128;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }

int fail(int code, const std::string& msg) {
    std::cerr << "xpu_sweep: " << msg << "\n";
    return code;
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") == std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string joined(const std::vector<std::string>& argv) {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + shell_quote(a);
    return line;
}

// sim_main beside this executable: the build tree's platform/ and an installed bin/ alike.
std::string find_sim_main() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec && fs::exists(self.parent_path() / "sim_main", ec)) return (self.parent_path() / "sim_main").string();
    return "";
}

// Progress on stderr: "xpu_sweep: 3 of 8 points done (38%), 1 not ok, 12.3 s, ETA 20.5 s".
struct Progress {
    std::size_t total = 0, done = 0, bad = 0;
    Clock::time_point t0 = Clock::now();
    bool quiet = false;
    void tick(bool ok) {
        ++done;
        if (!ok) ++bad;
        if (quiet) return;
        const double el = std::chrono::duration<double>(Clock::now() - t0).count();
        const double eta = done ? el / static_cast<double>(done) * static_cast<double>(total - done) : 0;
        char line[200];
        std::snprintf(line, sizeof line, "xpu_sweep: %zu of %zu points done (%.0f%%), %zu not ok, %.1f s, ETA %.1f s\n", done, total,
                      total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, bad, el, eta);
        std::cerr << line << std::flush;
    }
};

void write_rc(const fs::path& runs, const Point& p, int rc) {
    const fs::path tmp = runs / (p.name() + ".rc.tmp");
    {
        std::ofstream f(tmp);
        f << rc << "\n";
    }
    fs::rename(tmp, runs / (p.name() + ".rc"));
}

// Runs the points on a pool of `width` processes; each writes runs/NAME.log, and its exit code
// goes to runs/NAME.rc when it ends. False if interrupted (the points still running are stopped
// and left without a .rc: not run).
bool run_local(const std::vector<std::vector<std::string>>& cmds, const std::vector<Point>& todo, const fs::path& runs,
               unsigned width, Progress& prog) {
    struct Running {
        pid_t pid;
        const Point* p;
    };
    std::vector<Running> running;
    std::size_t next = 0;
    while (next < todo.size() || !running.empty()) {
        if (g_signal) {
            for (const auto& r : running) kill(r.pid, SIGTERM);
            for (const auto& r : running) waitpid(r.pid, nullptr, 0);
            return false;
        }
        while (next < todo.size() && running.size() < width) {
            const Point& p = todo[next++];
            std::vector<std::string> args = cmds[p.index];
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            posix_spawn_file_actions_t fa;
            posix_spawn_file_actions_init(&fa);
            const std::string log = (runs / (p.name() + ".log")).string();
            posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            posix_spawn_file_actions_adddup2(&fa, 1, 2);
            posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
            pid_t pid = -1;
            const int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
            posix_spawn_file_actions_destroy(&fa);
            if (rc != 0) {
                std::ofstream(log) << "could not start " << args[0] << "\n";
                write_rc(runs, p, 127);
                prog.tick(false);
                continue;
            }
            running.push_back({pid, &p});
        }
        bool reaped = false;
        for (std::size_t k = 0; k < running.size();) {
            int status = 0;
            if (waitpid(running[k].pid, &status, WNOHANG) == running[k].pid) {
                const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : kSignalBase + WTERMSIG(status);
                write_rc(runs, *running[k].p, rc);
                prog.tick(rc == 0);
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
                reaped = true;
            } else {
                ++k;
            }
        }
        if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// Runs a command, its stdout captured; the exit code in `rc` (-1 if it could not start).
std::string capture(const std::string& cmd, int& rc) {
    std::string out;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) {
        rc = -1;
        return out;
    }
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    const int st = pclose(f);
    rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

struct SlurmOptions {
    std::string partition, time;
};

// Submits the points as one job array (an element per point, its index the point's); returns
// the job id. The batch script reads the point's command from DIR/commands.txt, so that a
// resubmission runs exactly what the first did.
std::string slurm_submit(const fs::path& dir, const std::vector<Point>& todo, const SlurmOptions& so) {
    const fs::path abs = fs::absolute(dir);
    std::string array;
    for (const Point& p : todo) array += (array.empty() ? "" : ",") + std::to_string(p.index);
    std::ostringstream sh;
    sh << "#!/bin/bash\n"
       << "# Written by xpu_sweep: one array element per point; runs DIR/commands.txt's line for it.\n"
       << "#SBATCH --job-name=xpu_sweep\n"
       << "#SBATCH --chdir=" << fs::current_path().string() << "\n"
       << "#SBATCH --output=" << (abs / "runs" / "slurm-%A_%a.out").string() << "\n"
       << "#SBATCH --ntasks=1\n";
    if (!so.partition.empty()) sh << "#SBATCH --partition=" << so.partition << "\n";
    if (!so.time.empty()) sh << "#SBATCH --time=" << so.time << "\n";
    sh << "i=$SLURM_ARRAY_TASK_ID\n"
       << "name=$(printf %04d \"$i\")\n"
       << "runs=" << shell_quote((abs / "runs").string()) << "\n"
       << "cmd=$(sed -n \"$((i + 1))p\" " << shell_quote((abs / "commands.txt").string()) << ")\n"
       << "rm -f \"$runs/$name.rc\"\n"
       << "eval \"$cmd\" > \"$runs/$name.log\" 2>&1\n"
       << "echo $? > \"$runs/$name.rc.tmp\" && mv \"$runs/$name.rc.tmp\" \"$runs/$name.rc\"\n";
    write_file_atomically((dir / "sweep.sbatch").string(), sh.str());
    std::string cmd = "sbatch --parsable --array=" + array + " " + shell_quote((dir / "sweep.sbatch").string()) + " 2>&1";
    int rc = 0;
    const std::string out = trim(capture(cmd, rc));
    if (rc != 0) throw std::runtime_error("sbatch failed (exit " + std::to_string(rc) + "): " + out);
    const std::string id = out.substr(0, out.find(';'));  // "JOBID" or "JOBID;CLUSTER"
    write_file_atomically((dir / "slurm_job").string(), id + "\n");
    return id;
}

// True while the job (any element of the array) is pending or running.
bool slurm_active(const std::string& id) {
    int rc = 0;
    const std::string out = trim(capture("squeue -h -j " + shell_quote(id) + " -o %i 2>/dev/null", rc));
    return rc == 0 && !out.empty();
}

bool slurm_wait(const std::string& id, const fs::path& runs, const std::vector<Point>& todo, Progress& prog) {
    std::set<std::size_t> seen;
    for (;;) {
        const bool active = slurm_active(id);
        for (const Point& p : todo)
            if (!seen.count(p.index) && fs::exists(runs / (p.name() + ".rc"))) {
                seen.insert(p.index);
                prog.tick(read_result(runs.parent_path().string(), p).status == "ok");
            }
        if (!active) return true;
        if (g_signal) return false;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}
}  // namespace

int main(int argc, char* argv[]) {
    po::options_description opts("xpu_sweep: replay traces on a grid of platforms (docs/sweep.md)");
    std::string spec_file, out_dir;
    unsigned jobs = 0;
    SlurmOptions so;
    opts.add_options()
        ("out,o", po::value(&out_dir), "the sweep's folder: runs/NNNN per point, results.csv, report.html (required)")
        ("jobs,j", po::value(&jobs), "points run at once on this machine (default: the number of cores)")
        ("slurm", "submit the points as a Slurm job array (sbatch) and wait for it")
        ("partition", po::value(&so.partition), "with --slurm: the partition (sbatch --partition)")
        ("time", po::value(&so.time), "with --slurm: each point's time limit (sbatch --time, e.g. 30:00)")
        ("no-wait", "with --slurm: submit and return; xpu_sweep SPEC --out DIR --resume collects later")
        ("resume", "continue a sweep in DIR: skip the points complete, run the others (with --slurm: wait for a job still queued)")
        ("quiet,q", "no progress lines")
        ("help,h", "this help");
    po::options_description hidden;
    hidden.add_options()("spec", po::value(&spec_file));
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description pos;
    pos.add("spec", 1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
        po::notify(vm);
    } catch (const std::exception& e) {
        return fail(kUsage, std::string(e.what()) + " (see --help)");
    }
    if (vm.count("help")) {
        std::cout << "usage: xpu_sweep SPEC.yaml --out DIR [-j N] [--slurm [--partition P] [--time T] [--no-wait]] [--resume]\n"
                  << opts
                  << "exit codes: 0 every point ok, 2 usage, 3 bad spec, 6 cannot write outputs, 10 some points not ok "
                     "(their rows say why), 130/143 interrupted\n";
        return kOk;
    }
    if (spec_file.empty()) return fail(kUsage, "expected a spec file: xpu_sweep SPEC.yaml --out DIR (see --help)");
    if (out_dir.empty()) return fail(kUsage, "--out DIR is required (see --help)");
    const bool slurm = vm.count("slurm") > 0, resume = vm.count("resume") > 0;
    if (!slurm && (vm.count("partition") || vm.count("time") || vm.count("no-wait")))
        return fail(kUsage, "--partition, --time and --no-wait go with --slurm (see --help)");
    if (vm.count("jobs") && jobs == 0) return fail(kUsage, "-j 0: expected at least 1 process");

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    Spec spec;
    try {
        spec = load_spec(spec_file);
    } catch (const ConfigError& e) {
        return fail(kBadSpec, e.what());
    }
    const std::string sim_main = find_sim_main();
    if (sim_main.empty()) return fail(kUsage, "no sim_main beside this executable (expected in the same folder)");
    const std::vector<Point> pts = points_of(spec);

    // Every point's platform is checked before anything runs: a typo in a grid key is one
    // message now, not a column of failed points later.
    std::set<std::pair<std::size_t, std::vector<std::size_t>>> checked;
    for (const Point& p : pts) {
        if (!checked.insert({p.platform, p.value}).second) continue;
        try {
            (void)load_platform(spec.platform_paths[p.platform], p.sets(spec));
        } catch (const ConfigError& e) {
            std::string sets;
            for (const auto& s : p.sets(spec)) sets += " --set " + s;
            return fail(kBadSpec, spec_file + ": point " + p.name() + " (platform " + spec.platforms[p.platform] + sets +
                                      ") is not a valid platform: " + e.what());
        }
    }

    const fs::path dir(out_dir), runs = dir / "runs";
    std::vector<std::vector<std::string>> cmds;
    std::string commands;
    for (const Point& p : pts) {
        cmds.push_back(command_of(spec, p, sim_main, out_dir));
        commands += joined(cmds.back()) + "\n";
    }
    std::error_code ec;
    const bool started = fs::exists(dir / "commands.txt", ec);
    if (started && !resume)
        return fail(kUsage, out_dir + " holds a sweep already: --resume to continue it, or another --out");
    if (resume && started) {
        std::ifstream f(dir / "commands.txt");
        std::stringstream old;
        old << f.rdbuf();
        if (old.str() != commands)
            return fail(kUsage, out_dir + "/commands.txt: the sweep there ran other commands (the spec, or sim_main's path, "
                                "changed): expected the same spec to --resume, or another --out");
    }
    try {
        fs::create_directories(runs);
        if (!started) write_file_atomically((dir / "commands.txt").string(), commands);
    } catch (const std::exception& e) {
        return fail(kOutput, out_dir + ": cannot write the sweep's folder: " + e.what());
    }

    // The points still to run: all of a new sweep; with --resume, those not complete.
    std::string active_job;
    if (slurm && resume && fs::exists(dir / "slurm_job")) {
        std::ifstream f(dir / "slurm_job");
        std::getline(f, active_job);
        if (!active_job.empty() && !slurm_active(active_job)) active_job.clear();
    }
    std::vector<Point> todo;
    for (const Point& p : pts) {
        if (resume && read_result(out_dir, p).status == "ok") continue;
        todo.push_back(p);
    }
    Progress prog;
    prog.quiet = vm.count("quiet") > 0;
    prog.total = todo.size();
    if (!prog.quiet)
        std::cerr << "xpu_sweep: " << pts.size() << " points, " << todo.size() << " to run"
                  << (slurm ? " on Slurm" : " on " + std::to_string(jobs ? jobs : std::max(1u, std::thread::hardware_concurrency())) +
                                                " local processes")
                  << "\n";
    bool complete = true;
    if (slurm) {
        try {
            if (!active_job.empty()) {
                // A job of this sweep is still queued or running: wait for it rather than run its points twice.
                if (!prog.quiet) std::cerr << "xpu_sweep: waiting for Slurm job " << active_job << " (submitted earlier)\n";
                complete = slurm_wait(active_job, runs, todo, prog);
                std::vector<Point> left;
                for (const Point& p : todo)
                    if (read_result(out_dir, p).status != "ok" && !fs::exists(runs / (p.name() + ".rc"))) left.push_back(p);
                todo = left;
            }
            if (complete && !todo.empty()) {
                for (const Point& p : todo) {
                    fs::remove(runs / (p.name() + ".rc"), ec);
                }
                const std::string id = slurm_submit(dir, todo, so);
                if (!prog.quiet) std::cerr << "xpu_sweep: submitted Slurm job array " << id << " (" << todo.size() << " points)\n";
                if (vm.count("no-wait")) {
                    std::cerr << "xpu_sweep: not waiting; collect with: xpu_sweep " << shell_quote(spec_file) << " --out " << shell_quote(out_dir)
                              << " --slurm --resume\n";
                    return kOk;
                }
                complete = slurm_wait(id, runs, todo, prog);
            }
        } catch (const std::exception& e) {
            return fail(kOutput, e.what());
        }
    } else {
        for (const Point& p : todo) {
            fs::remove(runs / (p.name() + ".rc"), ec);  // a stale code must not pass for this run's
        }
        complete = run_local(cmds, todo, runs, jobs ? jobs : std::max(1u, std::thread::hardware_concurrency()), prog);
    }

    std::vector<Result> rs;
    for (const Point& p : pts) rs.push_back(read_result(out_dir, p));
    set_speedups(spec, pts, rs);
    try {
        write_results_csv((dir / "results.csv").string(), spec, pts, rs);
        write_report_html((dir / "report.html").string(), spec, pts, rs);
    } catch (const std::exception& e) {
        return fail(kOutput, e.what());
    }
    std::size_t ok = 0;
    for (const auto& r : rs) ok += r.status == "ok";
    if (!prog.quiet)
        std::cerr << "xpu_sweep: " << ok << " of " << pts.size() << " points ok; " << out_dir << "/results.csv, " << out_dir << "/report.html\n";
    if (!complete) {
        const int sig = g_signal ? static_cast<int>(g_signal) : SIGINT;
        std::cerr << "xpu_sweep: interrupted; the points not run are marked not-run: --resume continues the sweep\n";
        return kSignalBase + sig;
    }
    return ok == pts.size() ? kOk : kSomeFailed;
}

// libsystemc references sc_main at link time; the sweep checks platform descriptions with the
// platform library but never elaborates or starts the kernel (its points are sim_main processes).
int sc_main(int, char*[]) { return 0; }
