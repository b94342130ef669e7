// double_buffer: waits on DMAs that cannot be prefetched because their destination buffer is
// still being read. Rename each step's fill of the buffer, and every access to it up to the
// next fill, into the step's copy of the buffer (kBufferCopies in all, the others in free VMEM;
// analysis/double_buffer.h: BufferRenamer), give each copy's steps a flag of their own where
// the flag is counted the plain way, then hoist the DMAs as far as the renamed program allows. Chosen for a wait only when it beats the
// plain hoist (wait_remedy.cpp).
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "analysis/patch.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/raise_waits.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

// The DMAs of stream s into the local VMEM buffers (destinations) of `dmas`, partly or wholly.
std::vector<std::uint64_t> fills_of(const SuggestContext& sc, std::uint32_t s, const std::vector<std::uint64_t>& dmas) {
    const Stream& st = sc.run.streams[s];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> buffers;
    for (std::uint64_t k : dmas)  // (the region a renaming covers: tiles of other sizes packed into it)
        buffers.push_back(sc.renamer.region_of(s, st.code[k].mem_dst.addr, st.code[k].mem_dst.addr + st.code[k].bytes));
    std::sort(buffers.begin(), buffers.end());  // a buffer once, however many of its fills are listed
    buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
    std::vector<std::uint64_t> out;
    for (const BufferRenamer::Fill& f : sc.renamer.local_fills(s))
        for (const auto& [lo, hi] : buffers)
            if (f.addr < hi && lo < f.addr + f.bytes) {
                out.push_back(f.index);
                break;
            }
    return out;
}

// Renames the buffers of group g's DMAs (edits) and hoists the DMAs as far as the renamed
// program allows (moves, by the rules of dependencies.h on that program). False when a buffer
// cannot be renamed or no DMA moves.
bool rename_and_hoist(const SuggestContext& sc, WaitGroup& g) {
    std::map<std::uint32_t, std::vector<std::uint64_t>> dmas, to_rename;
    for (const Move& m : g.s.moves) dmas[m.stream].push_back(m.from);
    for (const auto& [stream, k] : g.renamed) to_rename[stream].push_back(k);
    // With them, every other DMA of the step whose hoist its own buffer's readers stop, even
    // where the plain hoist covers its lead-time deficit: that deficit is its shortest duration,
    // and a step's fills issued together one step ahead share the HBM with each other and the
    // write-backs. A 2048x5120x640 GEMM without prefetch had only its A tiles renamed; its
    // weight tiles, one step ahead, still held each step's wait 0.56 us (79.6% of the loss
    // recovered; 102.9% renamed too).
    for (const Move& m : g.s.moves)
        if (!g.renamed.count({m.stream, m.from}) && sc.renamer.blocked_by_buffer(m.stream, m.from, sc.plan.hoist_point(m.stream, m.from)) &&
            sc.renamer.can_rename(m.stream, m.from))
            to_rename[m.stream].push_back(m.from);
    std::vector<Move> moves;
    g.passed = 0;
    for (const auto& [stream, list] : dmas) {
        Planner::Edited edited;
        std::string why;
        if (!sc.renamer.rename(stream, to_rename[stream], edited, why)) return false;
        sc.renamer.split_flags(stream, to_rename[stream], edited);
        // Every fill of the renamed buffers is prefetched, not only those a stalled wait waited
        // for: the others stall once these no longer do, and would be the same suggestion again
        // on the patched run (measured: a 2500x3500x700 GEMM without prefetch had 8 more of its
        // A loads proposed after the first suggestion was applied).
        std::vector<std::uint64_t> fills = list;
        for (std::uint64_t j : fills_of(sc, stream, to_rename[stream])) fills.push_back(j);
        std::sort(fills.begin(), fills.end());
        fills.erase(std::unique(fills.begin(), fills.end()), fills.end());
        for (std::uint64_t k : fills) {
            const std::uint64_t p = std::max(sc.plan.hoist_point(stream, k, edited), std::min(k, sc.renamer.step_floor(stream, k)));
            if (p < k) {
                moves.push_back({stream, k, p});
                g.passed += k - p;
            }
        }
        std::vector<std::uint64_t> at = edited.indices();
        std::sort(at.begin(), at.end());  // the edits in program order (deterministic output)
        g.s.edits.reserve(g.s.edits.size() + at.size());
        for (std::uint64_t index : at) g.s.edits.push_back({stream, index, edited.at(index), {}});
    }
    sc.need_order.keep(moves);
    g.passed = 0;
    for (const Move& m : moves) g.passed += m.from - m.before;
    if (moves.empty()) return false;
    g.s.moves = std::move(moves);
    g.dmas = g.s.moves.size();
    return true;
}

// Adds the plain hoists of group h (the same step) to g: their DMAs move too, nothing renamed.
void absorb(WaitGroup& g, const WaitGroup& h) {
    for (const Move& m : h.s.moves)
        if (g.moved.insert({m.stream, m.from}).second) g.s.moves.push_back(m);
    for (const auto& [stream, t] : h.saving_on) g.saving_on[stream] += t;
    g.ops.insert(h.ops.begin(), h.ops.end());
    g.dma_anns.insert(h.dma_anns.begin(), h.dma_anns.end());
    g.waits += h.waits;
    g.served.insert(g.served.end(), h.served.begin(), h.served.end());
}

// The suggestion of group g of one step, with the hoist_wait variant on top of it (as variants
// both when `variant`).
void emit(const SuggestContext& sc, WaitGroup& g, const std::map<std::string, WaitGroup>& plain, bool variant,
          std::vector<Suggestion>& out) {
    // The step's other late DMAs, whose waits a plain hoist was estimated to serve as well (edge
    // tiles of another size, a first fill): the same prefetch, on the renamed program, so that
    // one suggestion prefetches the whole step (alone, a multi-buffered step still waits on
    // them; measured on a 3000x2000x1000 GEMM without prefetch: 73% of the loss recovered
    // without them).
    auto p = plain.find(g.s.where);
    if (p != plain.end()) {
        if (variant) {  // its waits are the plain group's own (a tie of theirs): counted once
            g.saving_on.clear();
            g.ops.clear();
            g.waits = 0;
            g.served.clear();
        }
        absorb(g, p->second);
    }
    if (!rename_and_hoist(sc, g)) return;  // cannot rename: no suggestion (the plain hoist was smaller)
    const std::string at = finish_group(g);
    std::ostringstream cause, action;
    cause << g.waits << " sync-flag waits at " << at << " on DMAs that cannot be prefetched: their buffer is still being read ("
          << dma_list(g) << ")";
    action << "multi-buffer: give each buffer " << kBufferCopies - 1 << " more copies in free VMEM and put each step's fill in the "
           << "next copy, then prefetch " << g.dmas << " DMAs into the free copies, " << g.passed
           << " instruction slots earlier in all (" << changes_text(count_and_keep_changes(sc.run, g.s)) << ")";
    g.s.cause = cause.str();
    g.s.action = action.str();
    g.s.variant = variant;
    std::optional<Suggestion> v = with_raised_waits(sc, g);  // copies g.s: before it moves
    out.push_back(std::move(g.s));
    if (v) out.push_back(std::move(*v));
}

class DoubleBuffer : public SuggestionFinder {
public:
    const char* kind() const override { return "double_buffer"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        const std::map<std::string, WaitGroup> plain = group_hoists(sc, "hoist_dma");
        std::map<std::string, WaitGroup> chosen = group_hoists(sc, kind());
        for (auto& [step, g] : chosen) emit(sc, g, plain, false, out);
        // Steps whose waits the plain hoist won only on a tie of the estimates: the copies as a
        // variant beside it (a step with its own double_buffer above already renames the
        // buffers their readers block). Measured: a 777x1000x1300 GEMM without prefetch on
        // tpu-v6e-4.yaml, six K steps; the plain hoist moves each A fill above only the step's
        // last vector loads, and the step still waits 271 ns on it (68.7% of the loss
        // recovered); with the copies, 98.1%.
        for (auto& [step, g] : group_renamed_alternatives(sc))
            if (!chosen.count(step)) emit(sc, g, plain, true, out);
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> double_buffer_finder() { return std::make_unique<DoubleBuffer>(); }

}  // namespace xpu::analysis
