#include "analysis/verify.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/compose.h"
#include "analysis/patch.h"
#include "analysis/relower.h"
#include "analysis/replay.h"
#include "analysis/report.h"
#include "traces/crc32.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

const char* verdict_key(Verdict v) {
    switch (v) {
        case Verdict::Verified: return "verified";
        case Verdict::NoGain: return "no_gain";
        case Verdict::NotVerified: break;
    }
    return "not_verified";
}

std::string parse_verify_count(const std::string& text, std::size_t& k) {
    if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos || std::stoul(text) > 1000)
        return "--verify '" + text + "': expected a number of suggestions to replay, 0..1000";
    k = std::stoul(text);
    return "";
}

std::string verify_budget_problem(double seconds) {
    if (std::isfinite(seconds) && seconds >= 0) return "";
    std::ostringstream os;
    os << "--verify-budget " << seconds << ": expected wall seconds for all replays, 0 (no limit) or more";
    return os.str();
}

Tick verify_floor(Tick end) { return std::max<Tick>(1000, end / 1000); }

Tick ticks_of_replay_ns(double ns) { return static_cast<Tick>(std::llround(ns * 1000.0)); }

std::uint32_t file_crc(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> buf(1 << 20);
    std::uint32_t crc = 0;
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = f.gcount();
        if (n > 0) crc = trace::crc32(buf.data(), static_cast<std::size_t>(n), crc);
    }
    return crc;
}

namespace {

int group(const Suggestion& s) { return s.verdict == Verdict::Verified ? 0 : s.verdict == Verdict::NotVerified ? 1 : 2; }

// A suggestion that can be replayed: it patches this trace (moves or edits instructions).
bool replayable(const Suggestion& s) { return s.changes_trace(); }

void set_measured(Suggestion& s, std::int64_t saving, Tick floor) {
    s.measured = true;
    s.measured_saving = saving;
    s.verdict = saving > static_cast<std::int64_t>(floor) ? Verdict::Verified : Verdict::NoGain;
    if (s.verdict == Verdict::NoGain)
        s.verdict_note = saving < 0 ? "replayed: the patched trace ran " + format_time(static_cast<Tick>(-saving)) + " slower"
                                    : "replayed: a gain of " + format_time(static_cast<Tick>(saving)) + ", not above the floor";
}

// The verified suggestions that compose with every one before them, in rank order.
std::vector<std::uint32_t> composing_verified(const RunData& run, const Analysis& a) {
    std::vector<std::uint32_t> ranks;
    Composition composition(run, a.suggestions);
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
        if (a.suggestions[i].verdict != Verdict::Verified) continue;
        bool ok = true;
        for (std::uint32_t r : ranks) ok = ok && composition.composable(r - 1, i);
        if (ok) ranks.push_back(static_cast<std::uint32_t>(i + 1));
    }
    return ranks;
}

// Replays the verified suggestions that compose, applied together (when there are two or more).
void verify_together(const RunData& run, Analysis& a, ReplayOptions ro, const std::string& work, Tick base, double spent) {
    a.together = {};
    const std::vector<std::uint32_t> ranks = composing_verified(run, a);
    if (ranks.size() < 2) return;
    if (ro.budget_seconds > 0) {
        if (spent >= ro.budget_seconds) return;
        ro.budget_seconds -= spent;
    }
    std::vector<const Suggestion*> parts;
    for (std::uint32_t r : ranks) parts.push_back(&a.suggestions[r - 1]);
    std::error_code ec;
    fs::create_directories(work, ec);
    const std::string path = (fs::path(work) / "together.bin").string();
    try {
        write_patched_trace(run, compose(parts, a.bounds.headroom), path);
    } catch (const std::exception&) {
        return;
    }
    a.together.ranks = ranks;
    a.together.patch_crc = file_crc(path);
    ro.progress = nullptr;
    const std::vector<ReplayResult> r = replay_all({{path, {}}}, ro);
    fs::remove_all(work, ec);
    if (!r[0].ok) return;
    a.together.measured = true;
    a.together.measured_saving = static_cast<std::int64_t>(base) - static_cast<std::int64_t>(ticks_of_replay_ns(r[0].simulated_ns));
}

}  // namespace

std::vector<std::uint32_t> parse_ranks(const std::string& text) {
    std::vector<std::uint32_t> out;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t j = i;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        if (j == i || j - i > 9 || (j < text.size() && text[j] != ',')) return {};
        out.push_back(static_cast<std::uint32_t>(std::stoul(text.substr(i, j - i))));
        i = j + 1;
        if (j < text.size() && i == text.size()) return {};  // a trailing comma
    }
    return out;
}

std::string ranks_text(const std::vector<std::uint32_t>& ranks) {
    std::string s;
    for (std::uint32_t r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
    return s;
}

void rank_by_verdict(std::vector<Suggestion>& s) {
    std::stable_sort(s.begin(), s.end(), [](const Suggestion& x, const Suggestion& y) {
        if (group(x) != group(y)) return group(x) < group(y);
        if (group(x) == 1) return x.estimated_saving > y.estimated_saving;
        return x.measured_saving > y.measured_saving;
    });
}

bool tied_with_replayed_base(const std::vector<Suggestion>& s, std::size_t v, const std::vector<std::size_t>& replayed) {
    if (v >= s.size() || !s[v].variant) return false;
    for (std::size_t b : replayed)
        if (b < s.size() && !s[b].variant && s[b].kind == s[v].kind && s[b].estimated_saving == s[v].estimated_saving) return true;
    return false;
}

std::vector<std::size_t> candidate_order(const std::vector<Suggestion>& s) {
    std::vector<std::size_t> first, rest;
    std::set<std::string> kinds;
    for (std::size_t i = 0; i < s.size(); ++i) (!s[i].variant && kinds.insert(s[i].kind).second ? first : rest).push_back(i);
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
}

void verify_suggestions(const RunData& run, const std::string& out_dir, Analysis& a, const VerifyOptions& opt) {
    a.verified = false;
    const std::string platform = (fs::path(out_dir) / "platform.yaml").string();
    const std::string shown_platform = opt.shown_dir.empty() ? platform : (fs::path(opt.shown_dir) / "platform.yaml").string();
    const std::string sim = opt.sim_main.empty() ? find_sim_main() : opt.sim_main;
    auto skip = [&](const std::string& why) {
        a.verify_note = "suggestions not verified: " + why;
        for (auto& s : a.suggestions) s.verdict_note = why;
    };
    if (a.suggestions.empty()) return;
    if (run.status != 0) return skip("the run did not complete");
    if (!fs::exists(platform)) return skip(platform + " is missing (a run of an older sim_main?)");
    if (sim.empty()) return skip("no sim_main beside this program to replay with");

    const std::string work = (fs::path(out_dir) / "verify.tmp").string();
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work);
    // Job 0: the original trace, the reference. Then the candidates: candidate_order().
    std::vector<ReplayJob> jobs = {{(fs::path(out_dir) / "txlog.trace.bin").string(), {}}};
    std::vector<std::size_t> which;  // suggestion of job k+1
    // Relowerings the analysis's search replayed already (analysis/relower.h): the same trace on
    // the same platform with the same sim_main, so that replay is the measurement; not run again.
    std::vector<std::size_t> searched;
    for (std::size_t i : candidate_order(a.suggestions)) {
        if (which.size() + searched.size() >= opt.candidates && !tied_with_replayed_base(a.suggestions, i, which)) continue;
        Suggestion& s = a.suggestions[i];
        if (!replayable(s)) {
            s.verdict_note = "a change of lowering, not a patch of this trace: re-simulate the other lowering to measure it";
            continue;
        }
        const std::string path = (fs::path(work) / ("candidate" + std::to_string(s.candidate) + ".bin")).string();
        try {
            write_patched_trace(run, s, path);
        } catch (const std::exception& e) {
            s.verdict_note = std::string("the patched trace could not be written: ") + e.what();
            continue;
        }
        s.patch_crc = file_crc(path);
        if (s.relowering && s.relowering->simulated_ns > 0) {
            searched.push_back(i);
            continue;
        }
        jobs.push_back({path, {}});
        which.push_back(i);
    }
    for (std::size_t i = 0; i < a.suggestions.size(); ++i)
        if (std::find(which.begin(), which.end(), i) == which.end() && std::find(searched.begin(), searched.end(), i) == searched.end() &&
            a.suggestions[i].verdict_note.empty())
            a.suggestions[i].verdict_note = "not replayed: only " + std::to_string(opt.candidates) +
                                            " are (--verify K): each kind's best estimate, then the best estimates, and a variant tied with its replayed base";

    ReplayOptions ro;
    ro.sim_main = sim;
    ro.platform = platform;
    ro.work_dir = work;
    ro.jobs = opt.jobs;
    ro.budget_seconds = opt.budget_seconds;
    ro.stop_requested = opt.stop_requested;
    const auto t0 = std::chrono::steady_clock::now();
    if (opt.progress) ro.progress = progress_lines(*opt.progress, "verify");
    const std::vector<ReplayResult> r = replay_all(jobs, ro);
    fs::remove_all(work, ec);

    if (!r[0].ok) return skip("the replay of the original trace failed: " + r[0].error);
    const Tick base = ticks_of_replay_ns(r[0].simulated_ns);
    const Tick diff = base > run.end ? base - run.end : run.end - base;
    if (diff > 1000)
        return skip("the replay of the original trace took " + format_time(base) + ", the run " + format_time(run.end) +
                    ": OUT/platform.yaml does not reproduce the run");
    const Tick floor = verify_floor(base);
    std::size_t replayed = 0;
    for (std::size_t k = 0; k < which.size(); ++k) {
        Suggestion& s = a.suggestions[which[k]];
        const ReplayResult& rr = r[k + 1];
        if (!rr.ok) {
            s.verdict_note = rr.run ? "the replay failed: " + rr.error : rr.error;
            continue;
        }
        ++replayed;
        set_measured(s, static_cast<std::int64_t>(base) - static_cast<std::int64_t>(ticks_of_replay_ns(rr.simulated_ns)), floor);
    }
    for (std::size_t i : searched) {
        Suggestion& s = a.suggestions[i];
        ++replayed;
        set_measured(s, static_cast<std::int64_t>(base) - static_cast<std::int64_t>(ticks_of_replay_ns(s.relowering->simulated_ns)), floor);
    }
    rank_by_verdict(a.suggestions);
    verify_together(run, a, ro, work, base, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    a.verified = true;
    std::ostringstream note;
    note << replayed << " of " << a.suggestions.size() << " suggestions replayed on " << shown_platform << " (the original replays in "
         << format_time(base) << ", as the run); verified means faster by more than " << format_time(floor);
    a.verify_note = note.str();
}

void write_verification(const std::string& path, const Analysis& a) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        f << "# xpusim verification: rank candidate verdict measured_saving_ps patch_crc32 (xpu_analyze --apply reads it)\n";
        for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
            const Suggestion& s = a.suggestions[i];
            f << i + 1 << ' ' << s.candidate << ' ' << verdict_key(s.verdict) << ' '
              << (s.measured ? std::to_string(s.measured_saving) : std::string("-")) << ' ' << s.patch_crc << '\n';
        }
        if (!a.together.ranks.empty())
            f << "together " << ranks_text(a.together.ranks) << ' '
              << (a.together.measured ? std::to_string(a.together.measured_saving) : std::string("-")) << ' ' << a.together.patch_crc << '\n';
        if (!f) throw std::runtime_error(tmp + ": cannot write");
    }
    fs::rename(tmp, path);
}

bool read_verification(const std::string& path, Analysis& a) {
    std::ifstream f(path);
    if (!f) return false;
    std::vector<Suggestion> ranked;
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
        ++n;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream is(line);
        if (line.rfind("together ", 0) == 0) {
            std::string word, ranks, measured;
            is >> word >> ranks >> measured >> a.together.patch_crc;
            a.together.ranks = parse_ranks(ranks);
            a.together.measured = measured != "-";
            if (a.together.measured) a.together.measured_saving = std::stoll(measured);
            continue;
        }
        std::size_t rank = 0, cand = 0;
        std::string verdict, measured;
        std::uint32_t crc = 0;
        if (!(is >> rank >> cand >> verdict >> measured >> crc) || cand < 1 || cand > a.suggestions.size())
            throw std::runtime_error(path + ": line " + std::to_string(n) + ": expected 'RANK CANDIDATE VERDICT MEASURED CRC' with a candidate of this run's " +
                                     std::to_string(a.suggestions.size()) + " suggestions");
        Suggestion s = a.suggestions[cand - 1];
        s.patch_crc = crc;
        if (measured != "-") {
            s.measured = true;
            s.measured_saving = std::stoll(measured);
        }
        s.verdict = verdict == "verified" ? Verdict::Verified : verdict == "no_gain" ? Verdict::NoGain : Verdict::NotVerified;
        ranked.push_back(std::move(s));
    }
    if (ranked.size() != a.suggestions.size())
        throw std::runtime_error(path + ": lists " + std::to_string(ranked.size()) + " suggestions, the analysis of this run finds " +
                                 std::to_string(a.suggestions.size()));
    a.suggestions = std::move(ranked);
    a.verified = true;
    return true;
}

}  // namespace xpu::analysis
