// The estimates of each remedy for a stalled wait, and the choice among them.
//
// Hoisting the DMAs a stalled wait waits for lets them complete earlier by the time between
// their new and old issue points; the wait then ends at the latest of their new completions,
// less what the hoisted DMAs now queued ahead of cost the DMAs others waited for. Sinking a
// wait lets the instructions it passes run during the wait, and issues those it held back
// earlier: their results (a prefetch's data) arrive earlier for whoever waits on them.
#include "analysis/suggest/wait_remedy.h"

#include <algorithm>

#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// How far past an instruction the scan for the first reader of its result goes.
constexpr std::uint64_t kScanReaders = 512;

// What sinking (or dropping) wait `w` gains beyond the core's own work it lets run during the
// wait: the instructions it held back issue earlier, and so complete earlier for whatever
// waits on them further down (the DMAs the core issues after the wait: while it waits, it
// issues no prefetch and the HBM pipeline drains). The wait's stall began at its issue less
// the stall. Bounds, each holding for one instruction j the wait held back (ready before the
// wait ended):
//  - j issues earlier by at most issue_j - max(the stall's beginning, the ready time of every
//    instruction from the wait to j): the core issues in order, and nothing issues before its
//    operands are ready; at most the stall (nothing moves by more). The scan ends at the first
//    instruction the wait did not hold back (ready when the wait ended): it and all after it
//    issue in order behind it, as before;
//  - j completes earlier by at most that, and only into idle time: of its DMA engine (a FIFO)
//    and of its chip's HBM (its first link's, if remote) between its new issue and its old
//    start, the roofline; of its unit for any other operation;
//  - it saves at most the time the core later stalled on j's completion: for a DMA, the core
//    time spent waiting on it (cx.dma_caused); for a unit op, the data-dependency stall of the
//    first later instruction whose operands j's completion made ready (it became ready exactly
//    then and reads j's destination, or writes a register j reads).
// The core runs in order, so the stream gains the largest of these, not their sum.

// The data-dependency stall of the first instruction after j (within the scan) that j's
// completion made ready; 0 if none.
Tick first_reader_stall(const SuggestContext& sc, const WaitStall& w, std::uint64_t j) {
    const Stream& st = sc.run.streams[w.stream];
    const Life& lj = st.life[j];
    const Instruction& in = st.code[j];
    auto reads = [](const Instruction& x, std::uint8_t r) {
        return (x.has(kSrc0) && x.src[0] == r) || (x.has(kSrc1) && x.src[1] == r) || (x.has(kSrc2) && x.src[2] == r);
    };
    for (std::uint64_t k = j + 1; k < st.code.size() && k < j + kScanReaders; ++k) {
        const Life& lk = st.life[k];
        if (!lk.seen || lk.issue > lj.complete + w.stall) break;
        if (lk.ready != lj.complete) continue;
        const Instruction& rk = st.code[k];
        if ((in.has(kDst) && reads(rk, in.dst)) || (rk.has(kDst) && reads(in, rk.dst))) {
            const Tick t0 = std::max(lk.arrival, st.life[k - 1].issue + sc.cx.ix.issue_slot(w.stream));
            return lk.ready > t0 ? lk.ready - t0 : 0;
        }
    }
    return 0;
}

// How much earlier instruction j, held back by wait w and now issued `adv` earlier (at
// `from`), completes for whoever waited on it.
Tick held_gain(const SuggestContext& sc, const WaitStall& w, std::uint64_t j, Tick adv, Tick from) {
    const Stream& st = sc.run.streams[w.stream];
    if (const std::uint32_t di = sc.cx.ix.dma_of(w.stream, j); di != kNone) {
        if (sc.cx.dma_caused[di] == 0) return 0;
        const Dma& d = sc.run.dmas[di];
        const Tick gain = std::min({adv, sc.cx.dma_caused[di], sc.engines.idle(d.engine, from, d.start)});
        return std::min(gain, sc.cx.ix.dma_remote(st.code[j], st.chip) ? sc.links.idle(di, from, d.start)
                                                                        : sc.hbm.idle(st.chip, from, d.start));
    }
    if (const std::uint32_t oi = sc.cx.ix.op_of(w.stream, j); oi != kNone) {
        const UnitOp& op = sc.run.unit_ops[oi];
        return std::min({adv, first_reader_stall(sc, w, j), sc.unit_idle.idle(op.unit, from, op.start)});
    }
    return 0;
}

// What the instructions wait w held back, up to `stop`, save by issuing earlier (above).
Tick held_back(const SuggestContext& sc, const WaitStall& w, std::uint64_t stop) {
    const Stream& st = sc.run.streams[w.stream];
    const Life& lw = st.life[w.index];
    const Tick began = lw.issue - std::min(lw.issue, w.stall);
    const std::uint64_t end = std::min<std::uint64_t>(stop, st.code.size());
    Tick best = 0, floor = began;
    for (std::uint64_t j = w.index + 1; j < end; ++j) {
        const Life& lj = st.life[j];
        if (!lj.seen) break;
        floor = std::max(floor, lj.ready);
        if (floor >= lj.issue) break;  // j no longer waited behind the wait
        const Tick adv = std::min(w.stall, lj.issue - floor);
        best = std::max(best, held_gain(sc, w, j, adv, lj.issue - adv));
    }
    return std::min(best, w.stall);
}

// Sinking wait w down to `stop`: the work it passes runs during the wait, and what it held
// back issues earlier.
Tick sink_saving(const SuggestContext& sc, const WaitStall& w, std::uint64_t stop) {
    if (stop <= w.index + 1) return 0;
    const Stream& st = sc.run.streams[w.stream];
    const Life& lw = st.life[w.index];
    const std::uint64_t last = std::min<std::uint64_t>(stop, st.code.size()) - 1;
    const Tick span = st.life[last].seen ? st.life[last].issue - std::min(st.life[last].issue, lw.issue) : 0;
    return std::max(std::min(w.stall, span), held_back(sc, w, stop));
}

// Does wait w wait for write-backs only (DMAs into HBM)?
bool waits_for_stores(const SuggestContext& sc, const WaitStall& w) {
    for (const Raiser& r : sc.plan.covered(w.stream, w.index))
        if (r.dma == kNone || sc.run.streams[r.stream].code[r.index].mem_dst.space != Space::Hbm) return false;
    return true;
}

struct HoistOption {
    Tick saving = 0;
    std::vector<Hoist> hoists;
    std::vector<std::uint32_t> dmas;
    bool remote = false;
    bool renamed = false;  // a DMA moves past its own buffer's readers (double_buffer)
};

// Where DMA raiser r can move up to: its hoist point; with `rename`, where its hoist stops at
// its own buffer's previous readers short of its lead-time deficit, as far as a free copy of its buffer
// would let it (double_buffer.h; `renamed` then says so). The suggestion then keeps the DMAs in
// the order they are needed (need_order.h).
std::uint64_t hoist_target(const SuggestContext& sc, const Raiser& r, Tick deficit, bool rename, bool& renamed) {
    const Stream& rs = sc.run.streams[r.stream];
    std::uint64_t p = sc.plan.hoist_point(r.stream, r.index);
    renamed = false;
    if (rename && deficit > rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.placed_issue(p)) &&
        sc.renamer.blocked_by_buffer(r.stream, r.index, p) && sc.renamer.can_rename(r.stream, r.index)) {
        const std::uint64_t q = sc.renamer.renamed_point(r.stream, r.index);
        if (q < p) {
            p = q;
            renamed = true;
        }
    }
    return p;
}

// How much earlier DMA raiser r completes when issued at the place of instruction p (right after
// the core issued p - 1: Stream::placed_issue): the time between its new and old issue, into its
// engine's idle time before its old start, at most its lead-time deficit, and for a remote DMA
// into its first link's idle time.
Tick hoist_gain(const SuggestContext& sc, const Raiser& r, std::uint64_t p, Tick deficit, bool remote) {
    const Stream& rs = sc.run.streams[r.stream];
    const Dma& d = sc.run.dmas[r.dma];
    Tick gain = p < r.index ? rs.life[r.index].issue - std::min(rs.life[r.index].issue, rs.placed_issue(p)) : 0;
    if (gain) gain = std::min(gain, sc.engines.idle(d.engine, rs.placed_issue(p), d.start));
    if (gain) gain = std::min(gain, deficit);
    // A remote DMA's pieces cross links: it can start moving earlier only through link time
    // left idle before its old start.
    if (gain && remote) gain = std::min(gain, sc.links.idle(r.dma, rs.placed_issue(p), d.start));
    return gain;
}

// What moving DMA raiser r up to p costs the DMAs it now overtakes. `others`: the DMAs some
// core waited for that no hoist moves (null: not known yet).
Tick overtaking_cost(const SuggestContext& sc, const Raiser& r, std::uint64_t p, bool remote, const ChipQueue* others) {
    const Stream& rs = sc.run.streams[r.stream];
    const Dma& d = sc.run.dmas[r.dma];
    // Engines are FIFOs: a DMA moved ahead delays, by its own transfer, each DMA issued in
    // between on its engine whose completion someone waited for.
    Tick cost = sc.dma_timing.wire(d, remote) * sc.engine_queue.stalling_between(d.engine, rs.placed_issue(p), d.issue);
    // The HBM's channels are FIFOs too: a local DMA moved ahead of the HBM traffic of the other
    // engines of its chip delays each such DMA someone waited for (and that no hoist moves with
    // it) by its own bytes at the HBM's peak rate (what it puts in the channels' queues ahead of
    // them; they drain no faster), less the HBM time left idle between its new and old issue
    // (which it may fill without delaying anyone).
    if (others && !remote) {
        const Tick ahead = sc.hbm.transfer(rs.chip, d.bytes);
        const Tick idle = sc.hbm.idle(rs.chip, rs.placed_issue(p), d.issue);
        if (ahead > idle) cost += (ahead - idle) * others->stalling_between(rs.chip, d.engine, rs.placed_issue(p), d.issue);
    }
    return cost;
}

// Hoist the DMAs wait w waits for. With `rename` (double_buffer): the same where a DMA's hoist
// stops at its own buffer's previous readers, with the DMA moved as far as a free copy of its buffer
// would let it.
HoistOption hoist_option(const SuggestContext& sc, const WaitStall& w, const ChipQueue* others, bool rename) {
    HoistOption o;
    const Stream& st = sc.run.streams[w.stream];
    const Life& lw = st.life[w.index];
    Tick latest_new = lw.ready;
    Tick cost = 0;  // what the hoisted DMAs take from DMAs their engines would now serve later
    bool any_dma = false;
    Tick new_issue = lw.ready;  // the earliest a hoisted local DMA would now issue
    const auto& covered = sc.plan.covered(w.stream, w.index);
    // The local DMAs the wait waits for share their chip's HBM: issued together, the last of them
    // is done no sooner than all their bytes at the HBM's peak after the first issue. Per DMA: the
    // bytes of the covered local DMAs of its chip issued no earlier than it (itself included).
    auto local_bytes_from = [&](const Raiser& r) {
        const Dma& d = sc.run.dmas[r.dma];
        const int chip = sc.run.streams[r.stream].chip;
        std::uint64_t bytes = 0;
        for (const Raiser& o : covered) {
            if (o.dma == kNone) continue;
            const Dma& od = sc.run.dmas[o.dma];
            const Stream& os = sc.run.streams[o.stream];
            if (os.chip == chip && !sc.cx.ix.dma_remote(os.code[o.index], os.chip) && od.issue >= d.issue) bytes += od.bytes;
        }
        return sc.hbm.transfer(chip, bytes);
    };
    for (const Raiser& r : covered) {
        if (r.dma == kNone) {
            latest_new = std::max(latest_new, lw.issue);  // a raiser we cannot move: no gain
            continue;
        }
        any_dma = true;
        const Dma& d = sc.run.dmas[r.dma];
        const Stream& rs = sc.run.streams[r.stream];
        const bool remote = sc.cx.ix.dma_remote(rs.code[r.index], rs.chip);
        if (remote) o.remote = true;
        // Issued late, or slowed by contention? A DMA issued at least its shortest duration
        // before the wait began was not late: its wait is bandwidth, and moving it earlier only
        // takes bandwidth from DMAs needed sooner. What a hoist can win is its lead-time deficit.
        // Its shortest duration: alone, or behind the bytes of the wait's other DMAs issued with
        // or after it, whichever is longer (four 256 KiB loads issued together just before
        // their wait each wait for all four: measured on a GEMM tiled for 256x256 matrix units,
        // where a deficit counted alone moved a fifth of the late loads).
        const Tick shortest = std::max(sc.dma_timing.shortest(d, remote), remote ? Tick{0} : local_bytes_from(r));
        const Tick lead = lw.ready > d.issue ? lw.ready - d.issue : 0;
        const Tick deficit = shortest > lead ? shortest - lead : 0;
        bool renamed = false;
        const std::uint64_t p = hoist_target(sc, r, deficit, rename, renamed);
        // What it overtakes: the suggestion keeps need order (need_order.h), so it never passes
        // a DMA of its stream needed sooner; on its engine it is queued ahead of those issued
        // between the nearest of them (in its place) and it, not of all since p.
        const std::uint64_t passes_from = sc.need_order.floor(r.stream, r.index, p);
        if (renamed) o.renamed = true;
        const Tick gain = hoist_gain(sc, r, p, deficit, remote);
        latest_new = std::max(latest_new, d.complete - std::min(d.complete, gain));
        if (gain == 0) continue;
        cost += overtaking_cost(sc, r, passes_from, remote, others);
        o.hoists.push_back({r.stream, r.index, p, renamed});
        o.dmas.push_back(r.dma);
        if (!remote) new_issue = std::min(new_issue, rs.placed_issue(p));
    }
    Tick saving = any_dma && !o.hoists.empty() ? lw.issue - std::min(lw.issue, std::max(latest_new, lw.ready)) : 0;
    // Roofline: a local DMA issued earlier arrives earlier only through HBM bandwidth left idle
    // between its new issue point and the moment the wait began.
    if (new_issue < lw.ready) saving = std::min(saving, sc.hbm.idle(st.chip, new_issue, lw.ready));
    o.saving = saving - std::min(saving, cost);
    return o;
}

// The DMAs some core waited for that no hoist moves (a first pass finds the DMAs the hoists
// would move; they keep their order among themselves), queued per chip.
ChipQueue unmoved_waited_dmas(const SuggestContext& sc) {
    std::vector<bool> moved(sc.run.dmas.size(), false);
    for (const WaitStall& w : sc.cx.waits)
        for (std::uint32_t d : hoist_option(sc, w, nullptr, false).dmas) moved[d] = true;
    std::vector<Tick> unmoved_caused(sc.cx.dma_caused);
    for (std::size_t d = 0; d < sc.run.dmas.size(); ++d)
        if (moved[d]) unmoved_caused[d] = 0;
    return ChipQueue(sc.run, unmoved_caused);
}

// The remedy that saves most for wait w (saving 0: none). Ties go to the hoist, and to the
// plain hoist over the double-buffered one.
WaitRemedy remedy_of(const SuggestContext& sc, const WaitStall& w, const ChipQueue& others) {
    const Stream& st = sc.run.streams[w.stream];
    WaitRemedy r;
    r.wait = &w;
    r.ann = sc.run.annotation(st.code[w.index]);
    HoistOption h = hoist_option(sc, w, &others, false);
    std::vector<Hoist> tied;  // the buffer copies' hoists where their estimate only ties
    {
        // Buffer copies only when it gains more than the plain prefetch does.
        HoistOption db = hoist_option(sc, w, &others, true);
        if (db.renamed && db.saving > h.saving) h = std::move(db);
        else if (db.renamed && db.saving == h.saving && !db.remote) tied = std::move(db.hoists);
    }
    const auto [stop, redundant] = sc.plan.sink_point(w.stream, w.index);
    const Tick sink = sink_saving(sc, w, stop);
    if (h.saving == 0 && sink == 0) return r;
    if (h.saving >= sink) {
        r.kind = h.remote ? "pipeline_collective" : h.renamed ? "double_buffer" : "hoist_dma";
        r.saving = h.saving;
        r.hoists = std::move(h.hoists);
        if (!h.remote && !h.renamed) r.renamed_alternative = std::move(tied);
    } else {
        r.kind = redundant && waits_for_stores(sc, w) ? "drop_wait" : "reorder";
        r.saving = sink;
        r.stop = stop;
        r.redundant = redundant;
    }
    return r;
}

}  // namespace

std::vector<WaitRemedy> choose_wait_remedies(const SuggestContext& sc) {
    const ChipQueue others = unmoved_waited_dmas(sc);
    std::vector<WaitRemedy> out;
    for (const WaitStall& w : sc.cx.waits) {
        WaitRemedy r = remedy_of(sc, w, others);
        if (r.saving > 0) out.push_back(std::move(r));
    }
    return out;
}

}  // namespace xpu::analysis
