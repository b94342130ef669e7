// Rounds of verified suggestions: `xpu_analyze OUT --rounds K -o patched.bin`. A verified
// suggestion is measured alone on the original trace; once it is applied, the run's stalls move
// and the analysis finds what it could not see before (a list-scheduled window opens the next
// one; waits that no longer stall stop hiding the ones behind them). Each round takes the run of
// the previous one, applies what its verification measured best (the verified suggestions that
// compose, applied together, when that set saved more than the best one alone), and runs
// sim_main on the patched trace with the same platform: a full run, its analysis and the
// verification of its own suggestions, which the next round reads. It stops after K rounds, when
// a run has no verified suggestion, or when a round's run does not reproduce the saving its
// replay measured (then it says so: nothing is claimed that a run did not show). A round's run
// with nothing verified but suggestions its verification did not replay (--verify K replays K)
// is run again replaying all of them before the rounds stop there.
//
// Every figure is a simulation: the saving of the rounds is the first run's simulated time
// minus the last's.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct RoundsOptions {
    unsigned rounds = 3;
    std::string sim_main;                // empty: find_sim_main()
    std::vector<std::string> sim_args;   // passed to each round's sim_main (e.g. --verify K, --verify-budget S)
    std::function<bool()> stop_requested;
    std::ostream* progress = nullptr;    // "rounds: ..." lines
};

struct Round {
    std::string applied;        // "1" or "1,3": the ranks applied in the previous run's report
    std::string kind, where;    // of the suggestion (composed: "kind+kind")
    Tick before = 0, after = 0; // the simulated time of the run it was applied to, and of the patched run
    Tick replayed_saving = 0;   // what its replay measured
    std::string dir;            // the patched run's output folder
};

struct RoundsResult {
    Tick start = 0, end = 0;     // the first run's simulated time, the last's
    Tick lower_bound = 0;        // the first run's lower bound (analysis/bounds.h)
    std::string bound_name;      // the resource that sets it ("HBM", ...)
    std::vector<Round> rounds;
    std::string stopped;         // why it stopped
};

// Runs the rounds from the run in `out_dir` (with its OUT/platform.yaml); each round's run goes
// to ROUNDS_DIR/round-N (its log and timeline removed once the next round has read it, to bound
// the disk), the last patched trace to `patched`. Throws std::runtime_error naming the run, the
// file or the command when a step fails (the runs' own messages are in ROUNDS_DIR/round-N.log).
RoundsResult run_rounds(const std::string& out_dir, const std::string& patched, const std::string& rounds_dir,
                        const RoundsOptions& opt);

// The rounds as JSON (ROUNDS_DIR/rounds.json) and as text lines (the terminal).
std::string rounds_json(const RoundsResult& r);
void print_rounds(std::ostream& os, const RoundsResult& r);

}  // namespace xpu::analysis
