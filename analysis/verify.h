// Verification by replay: the top candidates of the analysis are applied and re-simulated on the
// run's effective platform (OUT/platform.yaml, every --set applied), in parallel worker processes
// without the transaction log, and ranked by what the replay measured. A suggestion is presented
// as a saving only when its replay was faster than the original by more than the floor.
//
// The floor: max(1 ns, 0.1% of the run). The simulator is deterministic, so any gain is real, but
// one below 0.1% of the run is not worth a change to a program; it is reported as no_gain with its
// measured effect.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct VerifyOptions {
    bool enabled = true;
    std::size_t candidates = 5;   // how many are replayed, in candidate_order()
    double budget_seconds = 300;  // wall time for all replays (0 = none); the rest stay not_verified
    unsigned jobs = 0;            // worker processes, 0 = the number of cores
    std::string sim_main;         // empty: the sim_main beside this executable (find_sim_main)
    std::function<bool()> stop_requested;
    std::ostream* progress = nullptr;  // "verify: ..." lines with percent and ETA
    std::string shown_dir;             // the folder the texts name (default: out_dir); sim_main stages its outputs elsewhere
};

Tick verify_floor(Tick end);
// A replay's simulated time (its stats.json's simulated_time_ns) in ticks, as every measured
// saving is counted.
Tick ticks_of_replay_ns(double ns);

// What is wrong with a --verify-budget of `seconds` (sim_main's and xpu_analyze's option), or ""
// when it is a budget: finite and not negative (0: no limit).
std::string verify_budget_problem(double seconds);
// Reads --verify's K, 0..1000, from its text (sim_main's and xpu_analyze's option; boost would
// read "-1" into a count as 2^64 - 1). Returns what is wrong with it, or "" (then k is set).
std::string parse_verify_count(const std::string& text, std::size_t& k);

// The order in which suggestions (in estimate order) are replayed: each kind's best estimate
// first, then the rest by estimate. The estimates of the kinds are calibrated differently (the
// median measured/estimated ratio per kind, docs/analysis.md: 1.0 for hoist_dma, 0.5 for
// reorder), so many candidates of one kind must not crowd out another kind's best: on a
// llama2-13b decode layer at batch 4 with a planted false dependency, once double_buffer took
// in its step's plain hoists (and their estimates), the drop_wait that removes all of the loss
// (measured 30.6 us) was sixth by estimate, behind hoists and reorders of at best 10.7 us.
// A variant (Suggestion::variant) takes no kind's first place: it competes for the places left
// (hoist_wait, placed first as a kind of its own, left that drop_wait unreplayed again).
std::vector<std::size_t> candidate_order(const std::vector<Suggestion>& s);

// Whether s[v] is a variant whose estimate equals that of a replayed suggestion of its kind that
// is not a variant (its base: hoist_dma's engine variant, whose estimate does not model the
// engines): the estimates cannot tell the two apart, so it is replayed too, beyond --verify K.
// On the planted 1000^3 GEMM with --late-dma on xpu-2vpu the variant recovers 84.8% of the loss
// and the plain hoist 71.4%; once spread_matmuls took a kind's place among the five, the
// variant was no longer replayed.
bool tied_with_replayed_base(const std::vector<Suggestion>& s, std::size_t v, const std::vector<std::size_t>& replayed);

// Replays the original trace (the reference: it must reproduce the run) and the top candidates,
// fills each suggestion's measurement and verdict, and ranks: verified by measured saving, then
// not verified by estimate, then no gain; then replays the verified ones that compose applied
// together (Analysis::together). Writes the patched traces under OUT/verify.tmp (removed
// after). Sets a.verified and a.verify_note.
void verify_suggestions(const RunData& run, const std::string& out_dir, Analysis& a, const VerifyOptions& opt);

// The ranking: verified (measured saving, largest first), not verified (estimate), no gain
// (measured, largest first); ties keep the estimate order.
void rank_by_verdict(std::vector<Suggestion>& s);

// OUT/verification.txt: the presented order, so that xpu_analyze OUT --apply N applies the
// suggestion the report shows as N, and checks that it writes the very trace that was replayed.
void write_verification(const std::string& path, const Analysis& a);
// Re-applies a verification file to a fresh analysis of the same run (suggestions in estimate
// order): fills the measurements and verdicts and ranks them as the file says. False if the file
// does not exist; throws std::runtime_error if it does not fit the analysis.
bool read_verification(const std::string& path, Analysis& a);

// "1,3" <-> {1, 3}; parse_ranks gives {} for anything else than comma-separated positive numbers.
std::vector<std::uint32_t> parse_ranks(const std::string& text);
std::string ranks_text(const std::vector<std::uint32_t>& ranks);

// CRC-32 of a file's bytes (the patched trace that was replayed).
std::uint32_t file_crc(const std::string& path);

}  // namespace xpu::analysis
