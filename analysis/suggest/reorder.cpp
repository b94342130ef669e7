// reorder: a wait that holds back independent work. List-schedule a window of the stream from
// the wait on against a machine model of the run (analysis/schedule.h); where the model finds
// nothing faster, move the wait down to its first use. The estimate: the model's finish of the
// window in program order less in the new order (sinking: wait_remedy.cpp, sink_saving).
// And one more suggestion of the kind, across the stream: windows of the whole stream where the
// core waited on results with independent work behind (loops of dependent chains, which have no
// wait inside them), list-scheduled alike (analysis/suggest/stream_schedule.h). A finder of its
// own, listed right after reorder's (so the suggestions come in the same order), so that a
// worker runs it while another schedules the windows at waits: each takes 1.4-1.8 s of a 32-layer
// decode's analysis.
#include <algorithm>
#include <sstream>

#include "analysis/patch.h"
#include "analysis/schedule.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/stream_schedule.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

// The window list-scheduled for a wait that holds back independent work: from the wait to
// past its first use by as much again (so that the held-back work can spread over the work
// that follows), bounded to keep the quadratic graph cheap.
constexpr std::uint64_t kMaxWindow = 8192;

// List-schedules a window at each wait of group g against the machine model of the run; where
// the model finds the new order faster, it replaces the plain sinking of the waits (moves,
// saving per stream). False if no window gains.
bool list_schedule(WindowScheduler& scheduler, WaitGroup& g) {
    std::sort(g.held.begin(), g.held.end(), [](const WaitGroup::Held& x, const WaitGroup::Held& y) {
        return x.stream != y.stream ? x.stream < y.stream : x.wait < y.wait;
    });
    std::vector<Move> moves;
    std::map<std::uint32_t, Tick> saving_on;
    std::map<std::uint32_t, std::uint64_t> scheduled_to;  // per stream, the end of the last window
    for (std::size_t x = 0; x < g.held.size(); ++x) {
        const WaitGroup::Held& h = g.held[x];
        if (h.wait < scheduled_to[h.stream]) continue;
        std::uint64_t end = h.wait + std::min(kMaxWindow, 2 * (h.first_use - h.wait) + 1);
        // A wait whose held-back work lies mostly past the window gets a window of its own:
        // taken in as an ordinary instruction, the work it holds back stays behind it (a
        // 768x3072x768 GEMM with --bad-order: the first window ended 108 instructions past the
        // second block's wait, whose 3,860 held-back instructions stayed a burst; 75.6% of the
        // loss recovered, 128.9% cut there). One whose held-back work is mostly inside stays in
        // the window: a 2-layer llama2-13b decode with --bad-order has waits 125 instructions
        // apart, and cut at each of them its windows were too short (89.1%; 101.4% as here).
        for (std::size_t y = x + 1; y < g.held.size() && g.held[y].stream == h.stream && g.held[y].wait < end; ++y)
            if (g.held[y].wait > h.wait && g.held[y].first_use > end &&
                g.held[y].first_use - end > end - g.held[y].wait) {
                end = g.held[y].wait;
                break;
            }
        const WindowSchedule ws = scheduler.schedule(h.stream, h.wait, end);
        if (ws.order.empty() || ws.modelled_after >= ws.modelled_before) continue;
        const Tick modelled_span = ws.modelled_before - std::min(ws.modelled_before, ws.start);
        if ((ws.modelled_before - ws.modelled_after) * 1000 < modelled_span * kModelErrorPerMille) continue;
        saving_on[h.stream] += ws.modelled_before - ws.modelled_after;
        const std::uint64_t stop = h.wait + ws.order.size();
        for (std::size_t p = 0; p < ws.order.size(); ++p) moves.push_back({h.stream, ws.order[p], stop, p + 1});
        scheduled_to[h.stream] = stop;
    }
    if (moves.empty()) return false;
    // Without the slack of its doubling (up to as much again; on a 32-layer decode room for 2.36 M
    // moves held 1.9 M: 11 MB, kept while the other finders run).
    moves.shrink_to_fit();
    g.s.moves = std::move(moves);
    g.saving_on = std::move(saving_on);
    return true;
}

class Reorder : public SuggestionFinder {
public:
    const char* kind() const override { return "reorder"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        WindowScheduler scheduler(sc.cx, sc.plan);
        for (auto& [step, g] : group_sinks(sc, kind())) {
            const bool scheduled = list_schedule(scheduler, g);
            // Counted as xpu_analyze --apply counts what it writes (a window's instructions that
            // its new order leaves in place do not change place).
            if (scheduled) g.passed = count_and_keep_changes(sc.run, g.s).moved;
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << g.waits << " waits at " << at << " hold back independent work that does not need the data waited for";
            if (scheduled)
                action << "reorder: list-schedule the instructions from each wait on (" << changes_text({g.passed, 0, 0})
                       << "; dependencies and sync semantics kept), interleaving the held-back work with the work after it";
            else
                action << "reorder: move each wait down to the first instruction that needs its data (" << g.passed
                       << " independent instructions move above them; waits made redundant by a later one are dropped)";
            g.s.cause = cause.str();
            g.s.action = action.str();
            out.push_back(std::move(g.s));
        }
    }
};

class ReorderAcross : public SuggestionFinder {
public:
    const char* kind() const override { return "reorder"; }
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Suggestion across;
        if (schedule_stream(sc, across)) out.push_back(std::move(across));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> reorder_finder() { return std::make_unique<Reorder>(); }
std::unique_ptr<SuggestionFinder> reorder_across_finder() { return std::make_unique<ReorderAcross>(); }

}  // namespace xpu::analysis
