// Applying a run's suggestions by their rank: what `xpu_analyze OUT --apply N[,M...]` writes and
// what each round of `xpu_analyze OUT --rounds K` (analysis/rounds.h) applies.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/patch.h"

namespace xpu::analysis {

struct ApplyError : std::runtime_error {
    enum class Kind { Usage, Output, Mismatch };  // a rank the run does not offer; a write error; not the replayed trace
    ApplyError(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
    Kind kind;
};

struct Applied {
    Suggestion s;                      // the suggestion applied (several: composed, analysis/compose.h)
    bool together = false;             // several ranks
    bool measured = false;             // exactly this choice was replayed by the run's verification
    std::int64_t measured_saving = 0;  // ps, when measured
    PatchCount changes;
};

// Writes the run's trace with the suggestions at `ranks` (1-based, in `a.suggestions`' ranking:
// the replays' one when the run was verified) applied to `out`. A choice the verification
// replayed must give back the very trace it replayed (same CRC-32), else ApplyError(Mismatch).
// `list` is the ranks as the user gave them, for the messages.
Applied apply_ranks(const RunData& run, const Analysis& a, const std::vector<std::uint32_t>& ranks, const std::string& list,
                    const std::string& out);

}  // namespace xpu::analysis
