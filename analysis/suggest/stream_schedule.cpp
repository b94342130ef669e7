// reorder across the stream (analysis/suggest/stream_schedule.h).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/attribution.h"
#include "analysis/names.h"
#include "analysis/patch.h"
#include "analysis/schedule.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/stream_schedule.h"
#include "traces/issue_stall.h"

namespace xpu::analysis {

namespace {

// Instructions per window: a softmax row is 7 instructions, so a window holds hundreds of
// iterations, and fewer are cut at its ends. Measured by replay (2026-11-29), windows of 512,
// 1024 and 2048: a llama2-7b prefill layer over 128 tokens 97.8, 101.5, 105.1 us saved; the
// 32-layer llama2-7b decode 207, 242, 242 us; the analysis' CPU time the same within noise.
constexpr std::uint64_t kWindow = 2048;
// A window is scheduled only where operand waits are at least this share of its span (per
// mille): elsewhere the core issued as fast as its units took the work, and reordering it has
// little to gain (and the scheduler's time is spent where it can pay).
constexpr Tick kMinStallPerMille = 100;
// At most this many windows are scheduled (2 M instructions), those with the most operand-wait
// time: a window costs about a millisecond to schedule, and a 10.3 M-instruction GEMM has 5,029
// of them (5.7 s of CPU added to its analysis without the budget; a 100 M-instruction one would
// take a minute). A 32-layer llama2-7b decode has 843.
constexpr std::size_t kMaxWindows = 1024;

struct Candidate {
    std::uint32_t stream = 0;
    std::uint64_t begin = 0, end = 0;
    Tick operands = 0;  // operand-wait time in the run
};

// The windows worth scheduling (operand waits at least kMinStallPerMille of the span), at most
// kMaxWindows of them, those with the most operand-wait time; in stream and program order.
std::vector<Candidate> candidates(const RunIndex& ix) {
    const RunData& run = ix.run();
    std::vector<Candidate> out;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        const std::uint64_t n = st.code.size();
        for (std::uint64_t b = 0; b < n; b += kWindow) {
            const std::uint64_t e = std::min(n, b + kWindow);
            if (e - b < 2 || !st.life[b].seen || !st.life[e - 1].seen) continue;
            // Operand waits: the issue gap's Operands part from the moment the instruction could
            // have issued, as the attribution counts them (its "data dependency").
            Tick operands = 0;
            for (std::uint64_t i = b + 1; i < e; ++i) {
                const Life& l = st.life[i];
                trace::IssueGap gap[3];
                const int ng = trace::split_issue_gap(could_issue(ix, s, i), l.arrival, l.ready, l.issue, gap);
                for (int g = 0; g < ng; ++g)
                    if (gap[g].why == trace::IssueWait::Operands) operands += gap[g].end - gap[g].begin;
            }
            const Tick span = st.life[e - 1].issue - std::min(st.life[e - 1].issue, st.life[b].issue);
            if (span > 0 && operands * 1000 >= span * kMinStallPerMille) out.push_back({s, b, e, operands});
        }
    }
    if (out.size() > kMaxWindows) {
        std::stable_sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) { return x.operands > y.operands; });
        out.resize(kMaxWindows);
        std::sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) {
            return x.stream != y.stream ? x.stream < y.stream : x.begin < y.begin;
        });
    }
    return out;
}

}  // namespace

bool schedule_stream(const SuggestContext& sc, Suggestion& sug) {
    const RunData& run = sc.run;
    WindowScheduler scheduler(sc.cx, sc.plan);
    std::map<std::uint32_t, Tick> saving_on;
    std::set<std::uint32_t> moved_anns;  // the annotations (string ids) of the instructions that change place
    bool unannotated = false;
    std::uint64_t windows = 0;
    for (const Candidate& c : candidates(sc.cx.ix)) {
        const std::uint32_t s = c.stream;
        const std::uint64_t b = c.begin, e = c.end;
        const Stream& st = run.streams[s];
        const WindowSchedule ws = scheduler.schedule(s, b, e);
        if (ws.order.empty() || ws.modelled_after >= ws.modelled_before) continue;
        const Tick modelled_span = ws.modelled_before - std::min(ws.modelled_before, ws.start);
        const Tick modelled = ws.modelled_before - ws.modelled_after;
        if (modelled * 1000 < modelled_span * kModelErrorPerMille) continue;  // within the model's error (schedule.h)
        // The roofline: where the HBM was busy all along the window, issuing its work
        // sooner only queues it sooner (a decode's weight streaming: the model, which
        // takes each DMA's duration from the run, would count that as a gain).
        const Tick gain = std::min(modelled, sc.hbm.idle(st.chip, ws.start, std::max(ws.start, ws.measured)));
        if (gain == 0) continue;
        bool moved = false;
        for (std::size_t p = 0; p < ws.order.size(); ++p) {
            if (ws.order[p] == b + p) continue;
            moved = true;
            const Instruction& in = st.code[ws.order[p]];
            if (in.has(kAnn)) moved_anns.insert(in.ann);
            else unannotated = true;
        }
        if (!moved) continue;
        saving_on[s] += gain;
        ++windows;
        for (std::size_t p = 0; p < ws.order.size(); ++p) sug.moves.push_back({s, ws.order[p], e, p + 1});
    }
    if (sug.moves.empty()) return false;
    sug.moves.shrink_to_fit();
    sug.kind = "reorder";
    for (const auto& [s, t] : saving_on) sug.estimated_saving = std::max(sug.estimated_saving, t);
    std::vector<std::string> ops;
    for (std::uint32_t a : moved_anns)
        if (a < run.strings.size()) ops.push_back(run.strings[a]);
    if (unannotated || ops.empty()) ops.push_back("");
    sug.ops = sorted_names(ops);
    sug.where = where_text(sug.ops);
    std::ostringstream cause, action;
    cause << windows << (windows == 1 ? " stretch" : " stretches") << " of up to " << kWindow << " instructions ("
          << rolled_list(sug.ops, 100) << ") where the core waited on results while independent work waited behind it in program order";
    action << "reorder across the stream: list-schedule each stretch (" << changes_text(count_and_keep_changes(run, sug))
           << "; dependencies and sync semantics kept): independent work interleaves, iterations of a loop overlapping so that the "
              "units' pipelines work side by side";
    sug.cause = cause.str();
    sug.action = action.str();
    return true;
}

}  // namespace xpu::analysis
