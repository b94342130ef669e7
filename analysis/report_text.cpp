#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <sstream>

#include "analysis/bounds.h"
#include "analysis/report.h"
#include "analysis/verify.h"

namespace xpu::analysis {

std::string format_time(Tick t) {
    char b[48];
    const double ps = static_cast<double>(t);
    if (ps >= 1e9) std::snprintf(b, sizeof b, "%.3f ms", ps / 1e9);
    else if (ps >= 1e6) std::snprintf(b, sizeof b, "%.3f us", ps / 1e6);
    else std::snprintf(b, sizeof b, "%.3f ns", ps / 1e3);
    return b;
}

namespace {

std::string pct(Tick part, Tick whole) {
    char b[16];
    std::snprintf(b, sizeof b, "%5.1f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
    return b;
}

// "busy 61.2%, HBM 30.1%, sync 8.7%": the causes that matter, largest first.
std::string breakdown(const CauseTimes& t, Tick whole, std::size_t n = 4) {
    std::vector<std::size_t> order;
    for (std::size_t c = 0; c < kCauses; ++c)
        if (t[c]) order.push_back(c);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return t[x] > t[y]; });
    std::string s;
    for (std::size_t k = 0; k < order.size() && k < n; ++k)
        s += (k ? ", " : "") + std::string(cause_name(static_cast<Cause>(order[k]))) + " " + pct(t[order[k]], whole);
    return s;
}

}  // namespace

void print_report(std::ostream& os, const RunData& run, const Analysis& a, std::size_t top, bool per_layer) {
    const Tick T = a.end;
    os << "== stall analysis (" << a.records << " log records, " << a.instructions << " instructions, " << format_time(T)
       << " simulated) ==\n";
    Tick core_all = 0;
    for (Tick v : a.core_total) core_all += v;
    os << "cores      " << breakdown(a.core_total, core_all, 6) << "\n";
    os << "\nunits (every unit's time = busy + stalls by cause + idle)\n";
    for (const UnitAccount& u : a.units)
        os << "  " << std::left << std::setw(28) << u.name << std::right << " " << breakdown(u.time, T) << "\n";
    // Added up over layers unless asked per layer (the merged list has no more rows than by_op).
    const bool merged = !per_layer && !a.by_op_merged.empty() && a.by_op_merged.size() < a.by_op.size();
    const std::vector<Rollup>& ops = merged ? a.by_op_merged : a.by_op;
    os << "\ntime by op (core time: issue slots + stalls, largest first"
       << (merged ? "; added up over layers, per layer: xpu_analyze OUT --per-layer" : "") << ")\n";
    for (std::size_t i = 0; i < ops.size() && i < top; ++i) {
        const Rollup& r = ops[i];
        const std::string key = r.layers > 1 ? r.key + " x" + std::to_string(r.layers) : r.key;
        os << "  " << std::left << std::setw(40) << key << std::right << std::setw(13) << format_time(r.total()) << "  "
           << breakdown(r.time, r.total(), 3) << "\n";
    }
    if (a.by_layer.size() > 1) {
        os << "\ntime by layer\n";
        for (std::size_t i = 0; i < a.by_layer.size() && i < top; ++i)
            os << "  " << std::left << std::setw(40) << a.by_layer[i].key << std::right << std::setw(13)
               << format_time(a.by_layer[i].total()) << "  " << breakdown(a.by_layer[i].time, a.by_layer[i].total(), 3) << "\n";
    }
    if (a.by_chip.size() > 1) {
        os << "\ntime by chip\n";
        for (const Rollup& r : a.by_chip)
            os << "  " << std::left << std::setw(10) << r.key << std::right << "  " << breakdown(r.time, r.total(), 4) << "\n";
    }
    os << "\ncritical path (" << a.critical_path_steps << " steps): " << breakdown(a.critical_by_cause, T, 5) << "\n";
    for (std::size_t i = 0; i < a.critical_path.size() && i < 6; ++i) {
        const PathStep& p = a.critical_path[i];
        os << "  " << std::setw(12) << format_time(p.end - p.begin) << "  " << p.node << "  <- " << p.edge << "\n";
    }
    os << "\ntop stalled instructions\n";
    for (std::size_t i = 0; i < a.top_stalls.size() && i < top; ++i) {
        const Stall& s = a.top_stalls[i];
        os << "  " << std::setw(12) << format_time(s.total) << "  " << describe(run, s.stream, s.index) << "\n"
           << "                " << s.why << "\n";
    }
    os << "\nbounds: " << describe_headroom(a.bounds, T) << "\n";
    for (const Bound& b : a.bounds.bounds)
        os << "  " << std::left << std::setw(8) << b.name << std::right << std::setw(13) << format_time(b.time) << "  " << b.where << "\n";
    os << "\nsuggestions (" << (a.verified ? "verified by replay, ranked by measured saving" : "not verified by replay, ranked by estimated saving")
       << "; apply one with: xpu_analyze OUT --apply N -o patched.bin)\n";
    if (!a.verify_note.empty()) os << "  " << a.verify_note << "\n";
    if (a.suggestions.empty()) os << "  none: no stall that a local move of a DMA or a wait would remove\n";
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
        const Suggestion& s = a.suggestions[i];
        os << "  " << i + 1 << ". [" << s.kind << (s.variant ? ", variant" : "") << "] ";
        if (s.verdict == Verdict::Verified)
            os << "verified: saves " << format_time(static_cast<Tick>(s.measured_saving)) << " (" << pct(static_cast<Tick>(s.measured_saving), T)
               << " of the run, measured by replay" << (s.relowering ? " of the other lowering, whose bytes take other links: this run's bounds do not cap it" : "")
               << "; estimated ~" << format_time(s.estimated_saving) << capped_note(s) << ")";
        else if (s.verdict == Verdict::NoGain)
            os << "no gain: " << s.verdict_note << " (estimated ~" << format_time(s.estimated_saving) << capped_note(s) << ")";
        else
            os << "not verified: estimated ~" << format_time(s.estimated_saving) << " (" << pct(s.estimated_saving, T)
               << " of the run, an estimate" << capped_note(s) << ")" << (s.verdict_note.empty() ? "" : "; " + s.verdict_note);
        os << "\n     finding: " << s.cause << "\n     action:  " << s.action << "\n";
    }
    if (!a.sensitivity.empty()) {
        os << "\nhardware sensitivity (each resource x" << a.sensitivity[0].factor << " as capable, the trace replayed on it)\n";
        for (const SensitivityLine& l : a.sensitivity) {
            char b[64];
            if (l.measured) std::snprintf(b, sizeof b, "%7.3fx  %12s", l.speedup, format_time(static_cast<Tick>(l.simulated_time_ns * 1000.0 + 0.5)).c_str());
            else std::snprintf(b, sizeof b, "%7s  %12s", "-", "not run");
            os << "  " << b << "  " << l.resource << "\n             ";
            for (const auto& set : l.sets) os << " --set " << set;
            os << "\n";
        }
    }
    if (!a.together.ranks.empty()) {
        os << "  together: the verified suggestions " << ranks_text(a.together.ranks) << " compose (xpu_analyze OUT --apply "
           << ranks_text(a.together.ranks) << " -o patched.bin): ";
        if (a.together.measured)
            os << (a.together.measured_saving < 0 ? "slower by " : "saves ") << format_time(static_cast<Tick>(std::llabs(a.together.measured_saving)))
               << " (" << pct(static_cast<Tick>(std::llabs(a.together.measured_saving)), T) << " of the run, measured by replay)\n";
        else
            os << "not replayed (budget)\n";
    }
}


}  // namespace xpu::analysis
