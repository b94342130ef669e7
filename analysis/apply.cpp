#include "analysis/apply.h"

#include "analysis/compose.h"
#include "analysis/verify.h"

namespace xpu::analysis {

Applied apply_ranks(const RunData& run, const Analysis& a, const std::vector<std::uint32_t>& ranks, const std::string& list,
                    const std::string& out) {
    using K = ApplyError::Kind;
    if (ranks.empty()) throw ApplyError(K::Usage, "--apply '" + list + "': expected a suggestion number, or several separated by commas (1,3)");
    std::vector<const Suggestion*> parts;
    Composition composition(run, a.suggestions);
    for (std::uint32_t r : ranks) {
        if (r < 1 || r > a.suggestions.size())
            throw ApplyError(K::Usage, "--apply " + list + ": this run has " + std::to_string(a.suggestions.size()) +
                                           " suggestions (numbered from 1; see the report)");
        const Suggestion& s = a.suggestions[r - 1];
        if (!s.changes_trace())
            throw ApplyError(K::Usage, "--apply " + list + ": suggestion " + std::to_string(r) + " [" + s.kind +
                                           "] changes how the program is lowered, which no patch of this trace expresses: " + s.action);
        for (const Suggestion* p : parts) {
            if (p == &s) throw ApplyError(K::Usage, "--apply " + list + ": suggestion " + std::to_string(r) + " is named twice");
            const std::string why = composition.conflict(static_cast<std::size_t>(p - a.suggestions.data()), r - 1);
            if (!why.empty())
                throw ApplyError(K::Usage, "--apply " + list + ": suggestion " + std::to_string(r) + " [" + s.kind + "] " + why +
                                               ": they cannot be applied together");
        }
        parts.push_back(&s);
    }
    Applied ap;
    ap.s = parts.size() == 1 ? *parts[0] : compose(parts, a.bounds.headroom);
    ap.together = parts.size() > 1;
    // What was replayed for exactly this choice, if anything: a measured trace must come back identical.
    ap.measured = ap.together ? a.together.measured && a.together.ranks == ranks : ap.s.measured;
    ap.measured_saving = ap.together ? a.together.measured_saving : ap.s.measured_saving;
    const std::uint32_t crc = ap.together ? a.together.patch_crc : ap.s.patch_crc;
    try {
        ap.changes = write_patched_trace(run, ap.s, out);
    } catch (const std::runtime_error& e) {
        throw ApplyError(K::Output, e.what());
    }
    if (ap.measured && file_crc(out) != crc)
        throw ApplyError(K::Mismatch, out + ": the patched trace differs from the one replayed for --apply " + list + " (CRC-32 " +
                                          std::to_string(file_crc(out)) + ", replayed " + std::to_string(crc) + "): analyse the run again");
    return ap;
}

}  // namespace xpu::analysis
