// defer_dma: loads the core waits for share the HBM with DMAs issued before the wait but needed
// only after it (a pipeline's prologue issuing the first step's tiles together with the next
// steps' prefetches: all of them arrive late, the first ones included). Move those DMAs to just
// after the wait: the loads waited for get the bandwidth, and what is deferred is still issued
// before the wait that needs it.
//
// When (the finding): a stream's first swait that stalled (its prologue), every raise it covers
// a DMA's, the burst having begun on an HBM mostly idle before it (as long before as the burst
// lasted); before it in its stream, DMAs it does not wait for whose transfers overlapped the
// waited DMAs' on the same chip's HBM, on an engine no waited DMA was queued on before them, and
// whose own wait did not stall in the run. Such a DMA moves only if nothing between it and the
// wait stops it: not an instruction whose accesses conflict with it, nor a swait on its flag or
// one covering a raiser that conflicts with it, nor a sset/sadd/barrier (dependencies.h); it
// touches its own chip only; a later swait on its flag waits for it (an unwaited DMA is left
// alone); at most kMaxDistance instructions away. Sinking a DMA only delays its accesses past
// instructions it does not conflict with, and every wait still covers the same raisers (the DMA
// stays before the first wait on its flag).
// The estimate: the deferred DMAs' bytes that moved while the waited ones did, at the HBM's
// peak, at most the wait's stall and what the waited DMAs' own bytes and the HBM's idle time
// then leave of their span; less, per deferred DMA, how much later than the shifted run its own
// wait would then pass (the deferred DMAs issue when the wait passes, and what they had moved
// meanwhile must fit into the HBM's idle time from there), and how long a DMA issued after the
// wait on the same engine would start behind it. Per stream; the suggestion the largest over
// streams. A model, not a replay: the verification measures.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analysis/names.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// How far a DMA may be sunk (instructions between it and the wait): every one is checked.
constexpr std::uint64_t kMaxDistance = 4096;
// DMAs looked at before a wait (its stream's syncs and DMAs, walking back).
constexpr std::size_t kMaxLookBack = 64;

class Planning {
public:
    explicit Planning(const SuggestContext& sc) : sc_(sc), run_(sc.run) {}

    // Each stream's first stalled wait: the prologue. Elsewhere a burst on an idle HBM is the
    // middle of a pipeline whose other traffic the estimate cannot see: on 32-layer llama2
    // decodes at batch 16 and 32 (the suggestions benchmark), deferrals at later waits were
    // estimated at 236 and 346 us and replayed 1.28 and 1.65 ms slower.
    // (Context::waits holds the waits that stalled, in program order per stream.)
    void run() {
        for (const WaitStall& w : sc_.cx.waits) stalled_.insert({w.stream, w.index});
        std::set<std::uint32_t> seen;
        for (const WaitStall& w : sc_.cx.waits)
            if (seen.insert(w.stream).second) wait(w);
    }

    Suggestion suggestion() const {
        Suggestion sug;
        if (moves_.empty()) return sug;
        sug.kind = "defer_dma";
        sug.moves = moves_;
        for (const auto& [s, t] : saving_on_) sug.estimated_saving = std::max(sug.estimated_saving, t);
        set_places(sug, wait_anns_, dma_anns_);
        auto counted = [](std::size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
        sug.cause = counted(waits_, "wait") + " at " + sug.where +
                    " stalled on loads that shared the HBM with DMAs issued before the wait but needed only after it (" +
                    rolled_list(sug.dma_ops, 100) + ")";
        sug.action = "defer " + counted(moves_.size(), "DMA") + " (" + std::to_string(bytes_) +
                     " bytes) to just after the wait, so that the loads waited for get the HBM's bandwidth; each is still "
                     "issued before the wait that needs it";
        return sug;
    }

private:
    const SuggestContext& sc_;
    const RunData& run_;
    std::set<std::pair<std::uint32_t, std::uint64_t>> stalled_;  // (stream, index) of every wait that stalled
    std::vector<Move> moves_;
    std::map<std::uint32_t, Tick> saving_on_;
    std::set<std::string> wait_anns_, dma_anns_;
    std::uint64_t waits_ = 0, bytes_ = 0;

    static bool touches_hbm(const Instruction& in) { return in.mem_src.space == Space::Hbm || in.mem_dst.space == Space::Hbm; }

    // Can DMA k of stream s move to just after instruction w (k < w)?
    bool can_sink(std::uint32_t s, std::uint64_t k, std::uint64_t w) const {
        const Stream& st = run_.streams[s];
        const Instruction& d = st.code[k];
        Access acc[2];
        const int na = accesses(d, st, acc);
        for (std::uint64_t x = k + 1; x <= w; ++x) {
            const Instruction& in = st.code[x];
            if (is_barrier_like(in.op)) return false;
            if (in.op == Opcode::SWait) {
                if (d.has(kFlag) && in.flag == d.flag) return false;
                if (sc_.plan.wait_blocks(s, x, acc, na)) return false;
                continue;
            }
            Access other[2];
            const int no = accesses(in, st, other);
            if (conflict(acc, na, other, no)) return false;
        }
        return true;
    }

    // The earliest t by which the chip's HBM had `need` of idle time after `from` (past the run's
    // end: the end plus what is still missing).
    Tick room_after(std::uint16_t chip, Tick from, Tick need) const {
        const Tick end = run_.end > from ? run_.end : from;
        const Tick there = sc_.hbm.idle(chip, from, end);
        if (there < need) return end + (need - there);
        Tick lo = from, hi = end;  // idle(from, hi) >= need
        while (hi - lo > 1000) {   // to the nanosecond
            const Tick mid = lo + (hi - lo) / 2;
            (sc_.hbm.idle(chip, from, mid) >= need ? hi : lo) = mid;
        }
        return hi;
    }

    // How much later than the shifted run (`saved` earlier) the DMAs stream s issues on
    // `engine` after wait w would start behind a deferred DMA that lands at `landed`.
    Tick engine_delay(std::uint32_t s, std::uint64_t w, std::uint32_t engine, Tick saved, Tick landed) const {
        const Stream& st = run_.streams[s];
        const std::vector<std::uint64_t>& sd = sc_.plan.sync_and_dma(s);
        Tick delay = 0;
        for (auto it = std::upper_bound(sd.begin(), sd.end(), w); it != sd.end(); ++it) {
            if (!st.life[*it].seen) break;
            const Tick at = st.life[*it].issue > saved ? st.life[*it].issue - saved : 0;
            if (at >= landed) break;
            if (st.code[*it].op != Opcode::Dma) continue;
            const std::uint32_t x = sc_.cx.ix.dma_of(s, *it);
            if (x != kNone && run_.dmas[x].engine == engine) delay = std::max(delay, landed - at);
        }
        return delay;
    }

    // The first swait after w on DMA k's flag (its waiter), or 0 if none.
    std::uint64_t waiter(std::uint32_t s, std::uint64_t k, std::uint64_t w) const {
        const Stream& st = run_.streams[s];
        const std::vector<std::uint64_t>& sd = sc_.plan.sync_and_dma(s);
        for (auto it = std::upper_bound(sd.begin(), sd.end(), w); it != sd.end(); ++it) {
            const Instruction& in = st.code[*it];
            if (is_barrier_like(in.op)) return 0;  // halt, sset...: nothing to time against
            if (in.op == Opcode::SWait && in.flag == st.code[k].flag) return *it;
        }
        return 0;
    }

    void wait(const WaitStall& w) {
        const Stream& st = run_.streams[w.stream];
        if (!st.life[w.index].seen) return;
        const std::vector<Raiser>& covered = sc_.plan.covered(w.stream, w.index);
        if (covered.empty()) return;
        Tick t0 = ~Tick{0}, t1 = 0;
        std::uint64_t own_bytes = 0;
        std::set<std::pair<std::uint32_t, std::uint64_t>> waited;
        std::map<std::uint32_t, Tick> first_on_engine;  // per engine, the earliest issue of a waited DMA
        for (const Raiser& r : covered) {
            if (r.dma == kNone) return;  // a raise by a core: nothing a change of DMAs can time
            const Dma& d = run_.dmas[r.dma];
            t0 = std::min(t0, d.start);
            t1 = std::max(t1, d.complete);
            own_bytes += d.bytes;
            waited.insert({r.stream, r.index});
            auto [e, fresh] = first_on_engine.emplace(d.engine, d.issue);
            if (!fresh) e->second = std::min(e->second, d.issue);
        }
        if (t1 <= t0) return;
        const std::uint16_t chip = st.chip;
        // A burst of DMAs that began on an idle HBM (a pipeline's prologue: the first step's loads
        // and the next steps' prefetches issued together): deferring the prefetches gives the
        // first loads the bandwidth while nothing else wants it. Where the HBM was busy before
        // (a streaming phase), deferring moves traffic into time other DMAs need, and measures
        // slower (a 2-layer llama2-7b batch-32 decode: ~100 us slower in all, ~0.1 us "saved" at
        // each of hundreds of waits).
        const Tick before_span = std::min(t0, t1 - t0);
        if (2 * sc_.hbm.idle(chip, t0 - before_span, t0) < before_span) return;
        // The candidates, walking back from the wait.
        struct Candidate {
            std::uint64_t k;
            double overlap_bytes;
            std::uint64_t waiter;
            std::uint32_t engine;
        };
        std::vector<Candidate> found;
        const std::vector<std::uint64_t>& sd = sc_.plan.sync_and_dma(w.stream);
        auto it = std::lower_bound(sd.begin(), sd.end(), w.index);
        std::size_t looked = 0;
        while (it != sd.begin() && looked < kMaxLookBack) {
            const std::uint64_t k = *--it;
            const Instruction& in = st.code[k];
            if (is_barrier_like(in.op)) break;
            if (in.op != Opcode::Dma) continue;
            ++looked;
            if (w.index - k > kMaxDistance) break;
            if (waited.count({w.stream, k})) continue;
            if (!sc_.cx.ix.dma_local(in, chip) || !touches_hbm(in) || !in.has(kFlag)) continue;
            const std::uint32_t di = sc_.cx.ix.dma_of(w.stream, k);
            if (di == kNone) continue;
            const Dma& p = run_.dmas[di];
            // Queued behind a waited DMA on its engine (a FIFO), it issues its chunks after that
            // one's, and the memory serves requests in the order they reach it: it took nothing
            // from the waited DMAs that deferring it would give back.
            if (auto e = first_on_engine.find(p.engine); e != first_on_engine.end() && e->second <= p.issue) continue;
            const Tick lo = std::max(p.start, t0), hi = std::min(p.complete, t1);
            if (hi <= lo || p.complete <= p.start) continue;
            const std::uint64_t q = waiter(w.stream, k, w.index);
            if (q == 0 || !st.life[q].seen) continue;
            // Its own wait did not stall: it was early enough to be deferred (one already late, as
            // the next step's loads of a program that issues each step's loads just before its
            // wait, only gets later).
            if (stalled_.count({w.stream, q})) continue;
            if (!can_sink(w.stream, k, w.index)) continue;
            const double share = static_cast<double>(hi - lo) / static_cast<double>(p.complete - p.start);
            found.push_back({k, share * static_cast<double>(p.bytes), q, p.engine});
        }
        if (found.empty()) return;
        double bytes = 0;
        for (const Candidate& c : found) bytes += c.overlap_bytes;
        // What the waited DMAs lost to others: their span less their own bytes at the HBM's peak
        // and less the time the HBM had to spare then (a DMA that did not take the bandwidth
        // from them, one queued behind them on their engine, gives nothing back when deferred).
        const Tick own = sc_.hbm.transfer(chip, own_bytes) + sc_.hbm.idle(chip, t0, t1);
        const Tick span_left = t1 - t0 > own ? t1 - t0 - own : 0;
        Tick saved = std::min({w.stall, sc_.hbm.transfer(chip, static_cast<std::uint64_t>(bytes)), span_left});
        if (saved == 0) return;
        // What deferring costs later: the deferred DMAs issue when the wait passes (`saved`
        // earlier than in the run), in program order, and what they had moved while the waited
        // DMAs did must now fit into the HBM's idle time from there (the rest of the run's
        // traffic keeps its place): each lands once it and those before it have found that
        // room. Its waiter, `saved` earlier too, passes no sooner than that.
        std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.k < b.k; });
        const Tick pass = st.life[w.index].issue - saved;
        Tick penalty = 0;
        double before = 0;
        for (const Candidate& c : found) {
            before += c.overlap_bytes;
            const Tick landed = room_after(chip, pass, sc_.hbm.transfer(chip, static_cast<std::uint64_t>(before)));
            const Tick shifted = st.life[c.waiter].issue > saved ? st.life[c.waiter].issue - saved : 0;
            if (landed > shifted) penalty += landed - shifted;
            // Its engine is a FIFO: a DMA the stream issues on it after the wait, before the
            // deferred one lands, now starts behind it.
            penalty += engine_delay(w.stream, w.index, c.engine, saved, landed);
        }
        if (penalty >= saved) return;
        saving_on_[w.stream] += saved - penalty;
        ++waits_;
        wait_anns_.insert(run_.annotation(st.code[w.index]));
        // In program order in front of the instruction after the wait.
        for (const Candidate& c : found) {
            moves_.push_back(Move{w.stream, c.k, w.index + 1});
            dma_anns_.insert(run_.annotation(st.code[c.k]));
            bytes_ += st.code[c.k].bytes;
        }
    }
};

class DeferDma : public SuggestionFinder {
public:
    const char* kind() const override { return "defer_dma"; }
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Planning p(sc);
        p.run();
        Suggestion sug = p.suggestion();
        // A prologue happens once: in a long run what deferring wins there is a rounding error
        // beside what the other kinds offer (a 1-layer llama2-7b batch-8 decode: ~0.2 us of
        // 451 us), and a suggestion listed takes a place in the list and, by kind, in the
        // replays. Proposed from 0.5% of the run on (the 1000^3 GEMM: 2.4%).
        if (!sug.moves.empty() && sug.estimated_saving * 200 >= sc.run.end) out.push_back(std::move(sug));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> defer_dma_finder() { return std::make_unique<DeferDma>(); }

}  // namespace xpu::analysis
