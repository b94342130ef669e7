#include "analysis/replay.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace xpu::analysis {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
    pid_t pid = -1;
    std::size_t job = 0;
    Clock::time_point started;
};

std::string job_dir(const ReplayOptions& opt, std::size_t i) { return (fs::path(opt.work_dir) / ("replay" + std::to_string(i))).string(); }

// Starts the program args[0] with args; its stdout and stderr go to `log`. -1 if it could not start.
pid_t spawn(std::vector<std::string> args, const std::string& log) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

// Starts sim_main for job i; its stdout and stderr go to JOB_DIR.log. -1 if it could not start.
pid_t start(const ReplayJob& job, const ReplayOptions& opt, std::size_t i) {
    const std::string dir = job_dir(opt, i);
    std::vector<std::string> args = {opt.sim_main, "--platform", opt.platform, "--trace", job.trace, "--out", dir,
                                     "--no-txlog", "--deterministic", "-q"};
    for (const auto& s : job.sets) {
        args.push_back("--set");
        args.push_back(s);
    }
    return spawn(std::move(args), dir + ".log");
}

std::string last_line(const std::string& path) {
    std::ifstream f(path);
    std::string line, last;
    while (std::getline(f, line))
        if (!line.empty()) last = line;
    return last;
}

// simulated_time_ns from a stats.json (the writer puts it on a line of its own).
bool read_simulated_ns(const std::string& stats, double& ns) {
    std::ifstream f(stats);
    std::string line;
    static const std::regex re("\"simulated_time_ns\":\\s*([0-9.eE+-]+)");
    std::smatch m;
    while (std::getline(f, line))
        if (std::regex_search(line, m, re)) {
            ns = std::stod(m[1].str());
            return true;
        }
    return false;
}

void finish(const ReplayOptions& opt, std::size_t i, int status, ReplayResult& r) {
    const std::string dir = job_dir(opt, i);
    r.run = true;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && read_simulated_ns(dir + "/stats.json", r.simulated_ns)) {
        r.ok = true;
    } else {
        std::ostringstream os;
        if (WIFEXITED(status)) os << "sim_main exited " << WEXITSTATUS(status);
        else if (WIFSIGNALED(status)) os << "sim_main ended by signal " << WTERMSIG(status);
        const std::string msg = last_line(dir + ".log");
        if (!msg.empty()) os << ": " << msg;
        r.error = os.str();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::remove(dir + ".log", ec);
}

}  // namespace

std::vector<ReplayResult> replay_all(const std::vector<ReplayJob>& jobs, const ReplayOptions& opt) {
    std::vector<ReplayResult> out(jobs.size());
    const unsigned width = opt.jobs ? opt.jobs : std::max(1u, std::thread::hardware_concurrency());
    const Clock::time_point t0 = Clock::now();
    auto over_budget = [&] {
        return opt.budget_seconds > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= opt.budget_seconds;
    };
    std::vector<Worker> running;
    std::size_t next = 0, done = 0;
    bool stopping = false;
    while (next < jobs.size() || !running.empty()) {
        stopping = stopping || over_budget() || (opt.stop_requested && opt.stop_requested());
        while (!stopping && next < jobs.size() && running.size() < width) {
            const pid_t pid = start(jobs[next], opt, next);
            if (pid < 0) {
                out[next].run = true;
                out[next].error = "could not start " + opt.sim_main;
                ++done;
            } else {
                running.push_back({pid, next, Clock::now()});
            }
            ++next;
        }
        if (stopping) {
            for (const Worker& w : running) kill(w.pid, SIGTERM);
            for (const Worker& w : running) {
                int status = 0;
                waitpid(w.pid, &status, 0);
                out[w.job].error = "stopped: the replay budget ran out (or the run was interrupted)";
                std::error_code ec;
                fs::remove_all(job_dir(opt, w.job), ec);
                fs::remove(job_dir(opt, w.job) + ".log", ec);
            }
            running.clear();
            for (; next < jobs.size(); ++next) out[next].error = "not run: the replay budget ran out";
            break;
        }
        bool reaped = false;
        for (std::size_t k = 0; k < running.size();) {
            int status = 0;
            if (waitpid(running[k].pid, &status, WNOHANG) == running[k].pid) {
                ReplayResult& r = out[running[k].job];
                r.wall_seconds = std::chrono::duration<double>(Clock::now() - running[k].started).count();
                finish(opt, running[k].job, status, r);
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
                ++done;
                reaped = true;
                if (opt.progress) opt.progress(done, jobs.size());
            } else {
                ++k;
            }
        }
        if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return out;
}

int run_program(const std::vector<std::string>& args, const std::string& log, const std::function<bool()>& stop_requested) {
    const pid_t pid = spawn(args, log);
    if (pid < 0) return kNotStarted;
    for (;;) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (stop_requested && stop_requested()) {
            kill(pid, SIGTERM);
            waitpid(pid, &status, 0);
            return kStopped;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::function<void(std::size_t, std::size_t)> progress_lines(std::ostream& os, std::string label) {
    const Clock::time_point t0 = Clock::now();
    return [&os, label = std::move(label), t0](std::size_t done, std::size_t total) {
        const double el = std::chrono::duration<double>(Clock::now() - t0).count();
        const double eta = done ? el / static_cast<double>(done) * static_cast<double>(total - done) : 0;
        char line[200];
        std::snprintf(line, sizeof line, "%s: %zu of %zu replays done (%.0f%%), %.1f s, ETA %.1f s\n", label.c_str(), done, total,
                      total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, el, eta);
        os << line << std::flush;
    };
}

std::string find_sim_main() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    for (const fs::path& p : {self.parent_path() / "sim_main", self.parent_path().parent_path() / "platform" / "sim_main"})
        if (fs::exists(p, ec)) return p.string();
    return {};
}

}  // namespace xpu::analysis
