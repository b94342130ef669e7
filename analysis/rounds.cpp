#include "analysis/rounds.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "analysis/apply.h"
#include "analysis/replay.h"
#include "analysis/report.h"
#include "analysis/verify.h"
#include "traces/json_writer.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

namespace {

// A run's suggestions as its report ranked them: the analysis of the folder with its
// verification file applied (what `xpu_analyze DIR --apply N` reads).
struct RankedRun {
    RunData run;
    Analysis a;
};

RankedRun ranked_run(const std::string& dir) {
    RankedRun r{load_run(dir), {}};
    r.a = analyze(r.run);
    const std::string v = (fs::path(dir) / "verification.txt").string();
    // No verification file: no suggestion to verify (then the rounds stop there), or a run that
    // was not verified (an error: rounds apply only what a replay measured).
    if (!read_verification(v, r.a) && !r.a.suggestions.empty())
        throw std::runtime_error(dir + ": the run's suggestions were not verified (no verification.txt): rounds apply only what a "
                                       "replay measured; analyse it with verification (xpu_analyze " + dir + ")");
    return r;
}

// What a round applies: the verified suggestions that compose, together, when their replay saved
// more than the best one alone; else the best one. Empty when nothing is verified.
std::vector<std::uint32_t> best_verified(const Analysis& a, Tick& saving) {
    saving = 0;
    std::vector<std::uint32_t> ranks;
    if (!a.suggestions.empty() && a.suggestions[0].verdict == Verdict::Verified && a.suggestions[0].measured_saving > 0) {
        ranks = {1};
        saving = static_cast<Tick>(a.suggestions[0].measured_saving);
    }
    if (a.together.measured && a.together.ranks.size() > 1 && a.together.measured_saving > 0 &&
        static_cast<Tick>(a.together.measured_saving) > saving) {
        ranks = a.together.ranks;
        saving = static_cast<Tick>(a.together.measured_saving);
    }
    return ranks;
}

// How many of a run's suggestions its verification did not replay.
std::size_t not_replayed(const Analysis& a) {
    std::size_t n = 0;
    for (const Suggestion& x : a.suggestions) n += x.verdict == Verdict::NotVerified;
    return n;
}

// Removes what a finished round's folder needs no more (its log and timeline: the biggest files;
// the reports, stats.json and verification.txt stay).
void trim(const std::string& dir) {
    std::error_code ec;
    for (const char* f : {"txlog.bin", "txlog.trace.bin", "timeline.json"}) fs::remove(fs::path(dir) / f, ec);
}

}  // namespace

RoundsResult run_rounds(const std::string& out_dir, const std::string& patched, const std::string& rounds_dir,
                        const RoundsOptions& opt) {
    const std::string sim_main = opt.sim_main.empty() ? find_sim_main() : opt.sim_main;
    if (sim_main.empty()) throw std::runtime_error("no sim_main beside xpu_analyze: the rounds re-simulate each patched trace");
    const std::string platform = (fs::path(out_dir) / "platform.yaml").string();
    if (!fs::exists(platform))
        throw std::runtime_error(out_dir + ": no platform.yaml (the run's effective platform, which every round runs on)");
    std::error_code ec;
    if (fs::exists(rounds_dir, ec) && !fs::is_empty(rounds_dir, ec))
        throw std::runtime_error(rounds_dir + ": already exists and is not empty (the rounds' runs go there: remove it or choose "
                                              "another -o)");
    // Round n's run: sim_main on its patched trace, into its folder, with the round's options and
    // `extra`.
    auto run_round = [&](const std::string& trace, const std::string& to, unsigned n, const std::vector<std::string>& extra) {
        std::vector<std::string> args = {sim_main, "--platform", platform, "--trace", trace, "--out", to, "--deterministic", "-q"};
        // An option of `extra` replaces the same option of the round's (sim_main takes each once).
        for (std::size_t i = 0; i < opt.sim_args.size(); ++i) {
            const bool replaced = opt.sim_args[i].rfind("--", 0) == 0 &&
                                  std::find(extra.begin(), extra.end(), opt.sim_args[i]) != extra.end();
            if (replaced) {
                if (i + 1 < opt.sim_args.size() && opt.sim_args[i + 1].rfind("--", 0) != 0) ++i;  // and its value
                continue;
            }
            args.push_back(opt.sim_args[i]);
        }
        args.insert(args.end(), extra.begin(), extra.end());
        const std::string log = to + ".log";
        const int rc = run_program(args, log, opt.stop_requested);
        if (rc == kStopped) throw std::runtime_error("interrupted during round " + std::to_string(n));
        if (rc != 0)
            throw std::runtime_error("round " + std::to_string(n) + ": sim_main on " + trace + " exited " +
                                     (rc == kNotStarted ? std::string("(could not start ") + sim_main + ")" : std::to_string(rc)) +
                                     "; its messages: " + log);
    };
    RoundsResult res;
    std::string dir = out_dir, last_trace;
    RankedRun cur = ranked_run(dir);  // before anything is written: a run it cannot start from leaves no folder
    fs::create_directories(rounds_dir, ec);
    if (ec) throw std::runtime_error(rounds_dir + ": cannot create the folder: " + ec.message());
    res.start = res.end = cur.run.end;
    res.lower_bound = cur.a.bounds.lower;
    if (!cur.a.bounds.bounds.empty()) res.bound_name = cur.a.bounds.bounds[cur.a.bounds.limiting].name;
    for (unsigned n = 1;; ++n) {
        if (n > opt.rounds) {
            res.stopped = "after " + std::to_string(opt.rounds) + " rounds (--rounds)";
            break;
        }
        Tick saving = 0;
        std::vector<std::uint32_t> ranks = best_verified(cur.a, saving);
        if (ranks.empty() && dir != out_dir && !last_trace.empty()) {
            // Nothing verified, but suggestions its verification did not replay (beyond --verify K,
            // whose slots went to each kind's best estimate): replay them all before stopping,
            // by running the round again with verification of every suggestion (the run is the
            // same deterministic simulation). A round's no-gain kind used to take the slot of a
            // reorder that would have been verified, and the rounds stopped one round early
            // (docs/analysis.md). Never the user's own run: its folder stays as it was.
            const std::size_t unreplayed = not_replayed(cur.a);
            if (unreplayed > 0) {
                if (opt.progress)
                    *opt.progress << "rounds: nothing verified in " << dir << ", " << unreplayed
                                  << " suggestions not replayed: running it again, replaying every suggestion\n"
                                  << std::flush;
                run_round(last_trace, dir, n - 1, {"--verify", std::to_string(cur.a.suggestions.size())});
                cur = ranked_run(dir);
                ranks = best_verified(cur.a, saving);
            }
        }
        if (ranks.empty()) {
            res.stopped = "no verified suggestion in " + dir;
            break;
        }
        const std::string list = ranks_text(ranks);
        const std::string trace = (fs::path(rounds_dir) / ("round-" + std::to_string(n) + ".bin")).string();
        const Applied ap = apply_ranks(cur.run, cur.a, ranks, list, trace);
        Round r;
        r.applied = list;
        r.kind = ap.s.kind;
        r.where = ap.s.where;
        r.before = cur.run.end;
        r.replayed_saving = saving;
        r.dir = (fs::path(rounds_dir) / ("round-" + std::to_string(n))).string();
        if (opt.progress)
            *opt.progress << "rounds: round " << n << " of at most " << opt.rounds << ": applying " << list << " [" << r.kind << "] at "
                          << r.where << " (replayed: saves " << format_time(saving) << "), running sim_main on it\n"
                          << std::flush;
        run_round(trace, r.dir, n, {});
        if (dir != out_dir) trim(dir);  // never the user's run
        dir = r.dir;
        last_trace = trace;
        cur = ranked_run(dir);
        r.after = cur.run.end;
        res.end = r.after;
        res.rounds.push_back(r);
        // The run must show what the replay measured (both are the same simulation of the same
        // trace on the same platform): anything else is reported, and the rounds stop.
        const Tick expected = r.before - saving;
        const Tick diff = r.after > expected ? r.after - expected : expected - r.after;
        if (diff > 1000) {  // 1 ns
            res.stopped = "round " + std::to_string(n) + "'s run took " + format_time(r.after) + ", not the " + format_time(expected) +
                          " its replay measured";
            break;
        }
    }
    if (!last_trace.empty()) {
        const std::string tmp = patched + ".tmp";
        fs::copy_file(last_trace, tmp, fs::copy_options::overwrite_existing, ec);
        if (!ec) fs::rename(tmp, patched, ec);
        if (ec) {
            fs::remove(tmp);
            throw std::runtime_error(patched + ": cannot write the patched trace: " + ec.message());
        }
    }
    const std::string json = (fs::path(rounds_dir) / "rounds.json").string();
    {
        std::ofstream f(json + ".tmp");
        f << rounds_json(res);
        if (!f.flush()) throw std::runtime_error(json + ": cannot write");
    }
    fs::rename(json + ".tmp", json, ec);
    if (ec) throw std::runtime_error(json + ": cannot write: " + ec.message());
    return res;
}

std::string rounds_json(const RoundsResult& r) {
    std::ostringstream os;
    JsonWriter j(os);
    auto ns = [](Tick t) { return static_cast<double>(t) / 1000.0; };
    j.begin_object();
    j.field("schema", "xpusim.rounds/1");
    j.field("start_ns", ns(r.start));
    j.field("end_ns", ns(r.end));
    j.field("saving_ns", (static_cast<double>(r.start) - static_cast<double>(r.end)) / 1000.0);  // < 0 if a mismatched round ran slower
    j.field("lower_bound_ns", ns(r.lower_bound));
    j.field("lower_bound", r.bound_name);
    j.field("headroom_ns", ns(r.start > r.lower_bound ? r.start - r.lower_bound : 0));
    j.begin_array("rounds");
    for (const Round& x : r.rounds) {
        j.begin_object();
        j.field("applied", x.applied);
        j.field("kind", x.kind);
        j.field("where", x.where);
        j.field("before_ns", ns(x.before));
        j.field("after_ns", ns(x.after));
        j.field("replayed_saving_ns", ns(x.replayed_saving));
        j.field("dir", x.dir);
        j.end_object();
    }
    j.end_array();
    j.field("stopped", r.stopped);
    j.end_object();
    os << "\n";
    return os.str();
}

void print_rounds(std::ostream& os, const RoundsResult& r) {
    for (std::size_t n = 0; n < r.rounds.size(); ++n) {
        const Round& x = r.rounds[n];
        os << "round " << n + 1 << ": applied " << x.applied << " [" << x.kind << "] at " << x.where << ": " << format_time(x.before)
           << " -> " << format_time(x.after) << " (run in " << x.dir << ")\n";
    }
    const Tick head = r.start > r.lower_bound ? r.start - r.lower_bound : 0;
    char share[200] = "";
    if (head > 0)
        std::snprintf(share, sizeof share, " (%.1f%% of the %s headroom over the %s bound)",
                      100.0 * (static_cast<double>(r.start) - static_cast<double>(r.end)) / static_cast<double>(head),
                      format_time(head).c_str(),
                      r.bound_name.c_str());
    os << "rounds: " << format_time(r.start) << " -> " << format_time(r.end) << ", "
       << (r.end <= r.start ? format_time(r.start - r.end) + " saved" : format_time(r.end - r.start) + " slower") << share
       << "; stopped: " << r.stopped << "\n";
}

}  // namespace xpu::analysis
