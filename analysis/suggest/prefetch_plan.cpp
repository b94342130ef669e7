#include "analysis/suggest/prefetch_plan.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

constexpr Tick kNever = std::numeric_limits<Tick>::max();
// A new buffer keeps its DMA's destination offset within a 4 KiB granule (DMA chunks and VMEM
// port accesses then split the transfer exactly as before: only the time it runs changes).
constexpr std::uint64_t kGranule = 4096;
// New flags a stream's moved loads take at most: the i-th wait served waits on flag i mod this,
// so a load goes at most this many waits ahead (a wait on a flag shared with the loads of a
// later wait would wait for those too). A quarter of a 1024-flag chip's; the VMEM left free
// bounds the depth before it on the traces seen (prefetch_plan.h).
constexpr std::size_t kMaxFlags = 256;

// The occupancy model's clock: the chip's HBM time from 0 to t that moved loads may take: the
// idle time (the run's own traffic, HbmLoad) plus the time the candidate loads themselves took
// (each spread over its own transfer), which they give up when they move. Its inverse finds
// where a claim begins. Bucketed (at most kClockBuckets).
constexpr std::size_t kClockBuckets = 1 << 21;
class IdleClock {
public:
    IdleClock(const HbmLoad& hbm, int chip, Tick end) : hbm_(hbm), chip_(chip), end_(end) {
        bucket_ = std::max<Tick>(1000, end / kClockBuckets + 1);
        freed_.assign(static_cast<std::size_t>(end / bucket_) + 2, 0.0);
    }
    // A candidate's transfer time, given back over [a, b] (its start to its completion).
    void give_back(Tick a, Tick b, Tick t) {
        if (b <= a) b = a + 1;
        const double rate = double(t) / double(b - a);
        for (Tick x = a - a % bucket_; x < b && x <= end_; x += bucket_) {
            const Tick lo = std::max(a, x), hi = std::min(b, x + bucket_);
            if (hi > lo) freed_[static_cast<std::size_t>(x / bucket_) + 1] += rate * double(hi - lo);
        }
    }
    void finish() {
        for (std::size_t i = 1; i < freed_.size(); ++i) freed_[i] += freed_[i - 1];
    }
    Tick end() const { return end_; }
    Tick at(Tick t) const {
        t = std::min(t, end_);
        const std::size_t i = static_cast<std::size_t>(t / bucket_);
        const double f = freed_[i] + (freed_[i + 1] - freed_[i]) * double(t % bucket_) / double(bucket_);
        return hbm_.idle(chip_, 0, t) + static_cast<Tick>(f);
    }
    // The earliest moment by which `c` of it has passed; kNever if the run has less.
    Tick when(Tick c) const {
        if (at(end_) < c) return kNever;
        Tick lo = 0, hi = end_;
        while (lo < hi) {
            const Tick mid = lo + (hi - lo) / 2;
            if (at(mid) >= c) hi = mid;
            else lo = mid + 1;
        }
        return lo;
    }

private:
    const HbmLoad& hbm_;
    int chip_;
    Tick end_, bucket_;
    std::vector<double> freed_;  // prefix sums by bucket (index i: up to the start of bucket i)
};

bool local_to(const MemRef& r, std::uint16_t chip) { return r.chip == kLocalChip || r.chip == chip; }

// A local HBM -> VMEM load with a flag: what the plan may move and give a new buffer.
bool local_load(const Instruction& in, std::uint16_t chip) {
    return in.op == Opcode::Dma && in.has(kFlag) && in.has(kBytes) && in.bytes > 0 && in.mem_src.space == Space::Hbm &&
           local_to(in.mem_src, chip) && in.mem_dst.space == Space::Vmem && local_to(in.mem_dst, chip);
}

// The VMEM ranges the moved DMAs' buffers take, each live over a span of program positions.
class BufferSpace {
public:
    BufferSpace(std::uint64_t base, std::uint64_t capacity) : base_(base), capacity_(capacity) {}
    // The lowest address a (equal to `offset` modulo kGranule) where `bytes` overlap no range
    // live during [from, to]; kNever if the VMEM has no room. Candidates come in program order
    // and none moves up by more than kScan, so a range ending before `horizon` - kScan can no
    // longer meet one (set aside for take_late).
    std::uint64_t take(std::uint64_t bytes, std::uint64_t offset, std::uint64_t from, std::uint64_t to, std::uint64_t horizon) {
        auto past = std::partition(live_.begin(), live_.end(), [&](const Range& r) { return r.to + kScan >= horizon; });
        gone_.insert(gone_.end(), past, live_.end());
        live_.erase(past, live_.end());
        std::vector<const Range*> meet;
        for (const Range& r : live_)
            if (r.from <= to && from <= r.to) meet.push_back(&r);
        return place(bytes, offset, from, to, meet);
    }
    // The same for the candidates placed after the others (out of program order), once
    // begin_late was called: every range taken so far counts (those set aside by their start:
    // one that meets [from, to] starts at most the longest life before `from`).
    void begin_late() {
        std::sort(gone_.begin(), gone_.end(), [](const Range& a, const Range& b) { return a.from < b.from; });
    }
    std::uint64_t take_late(std::uint64_t bytes, std::uint64_t offset, std::uint64_t from, std::uint64_t to) {
        std::vector<const Range*> meet;
        for (const Range& r : live_)
            if (r.from <= to && from <= r.to) meet.push_back(&r);
        const std::uint64_t low = from > longest_ ? from - longest_ : 0;
        auto it = std::lower_bound(gone_.begin(), gone_.end(), low, [](const Range& r, std::uint64_t v) { return r.from < v; });
        for (; it != gone_.end() && it->from <= to; ++it)
            if (from <= it->to) meet.push_back(&*it);
        return place(bytes, offset, from, to, meet);
    }
    std::uint64_t peak() const { return peak_; }

private:
    struct Range {
        std::uint64_t lo, hi, from, to;
    };
    std::uint64_t place(std::uint64_t bytes, std::uint64_t offset, std::uint64_t from, std::uint64_t to, std::vector<const Range*>& meet) {
        std::sort(meet.begin(), meet.end(), [](const Range* a, const Range* b) { return a->lo < b->lo; });
        auto aligned = [&](std::uint64_t at) {  // the first address >= at with our offset in the granule
            const std::uint64_t g = at - at % kGranule + offset;
            return g >= at ? g : g + kGranule;
        };
        std::uint64_t a = aligned(base_);
        for (const Range* r : meet) {
            if (a + bytes <= r->lo) break;
            if (r->hi > a) a = aligned(r->hi);
        }
        if (a + bytes > capacity_) return kNever;
        live_.push_back({a, a + bytes, from, to});
        longest_ = std::max(longest_, to - from);
        peak_ = std::max(peak_, a + bytes - base_);
        return a;
    }
    std::uint64_t base_, capacity_, peak_ = 0, longest_ = 0;
    std::vector<Range> live_, gone_;  // gone_: set aside by take (sorted by start from begin_late on)
};

// A DMA the plan moves.
struct Moved {
    std::uint64_t k = 0, wait = 0, to = 0;  // its index, its first covering wait, where it goes (before)
    std::size_t ord = 0;                    // its wait's ordinal among the waits served
    std::uint16_t flag = 0;                 // the new flag it raises (fewest_flags)
    std::uint32_t dma = kNone;
    std::uint64_t addr = 0;                 // its new buffer
    std::vector<std::uint64_t> readers;     // the instructions reading its data
    Tick done = 0;                          // its completion in the model
};

class StreamPlan {
public:
    StreamPlan(const SuggestContext& sc, std::uint32_t s, const BufferRenamer::Room& room, std::vector<std::uint16_t> flags)
        : sc_(sc), s_(s), st_(sc.run.streams[s]), room_(room), flags_(std::move(flags)),
          clock_(sc.hbm, st_.chip, sc.a.end), space_(room.free_lo, room.free_hi) {}

    void run(PrefetchPlan& out) {
        index_waits();
        place();
        if (moved_.empty()) return;
        fewest_flags();
        write(out);
    }

private:
    const SuggestContext& sc_;
    const std::uint32_t s_;
    const Stream& st_;
    const BufferRenamer::Room room_;
    const std::vector<std::uint16_t> flags_;  // the new flags: the i-th wait served uses flags_[i % n] (fewest_flags)
    IdleClock clock_;
    BufferSpace space_;
    std::unordered_map<std::uint64_t, std::uint64_t> first_wait_;  // DMA index -> the first swait covering it
    std::vector<Moved> moved_;                                      // in the order placed
    std::vector<std::uint64_t> served_;  // the first waits of the candidates, in program order (a wait's ordinal)

    void index_waits() {
        for (std::uint64_t j : sc_.plan.sync_and_dma(s_))
            if (st_.code[j].op == Opcode::SWait)
                for (const Raiser& r : sc_.plan.covered(s_, j))
                    if (r.stream == s_) first_wait_.emplace(r.index, j);
    }

    bool plain_flag(const Instruction& in) const {
        const FlagCounting& c = sc_.plan.flag_counting(st_.chip, in.flag);
        return c.monotone && c.one_stream && c.waits_for_all;
    }

    // The first position >= `p` up to which DMA k may move with its destination renamed: it
    // passes no sset/sadd/barrier/halt, no DMA conflicting with its source, no wait covering a
    // raiser that writes its source (only syncs and DMAs touch HBM or order it).
    std::uint64_t legal_floor(std::uint64_t k, std::uint64_t p) const {
        Access acc[2];
        if (accesses(st_.code[k], st_, acc) < 1) return k;
        const Access& src = acc[0];
        const auto& sd = sc_.plan.sync_and_dma(s_);
        auto it = std::lower_bound(sd.begin(), sd.end(), k);
        while (it != sd.begin()) {
            const std::uint64_t j = *--it;
            if (j < p) break;
            const Instruction& y = st_.code[j];
            if (is_barrier_like(y.op)) return j + 1;
            if (y.op == Opcode::SWait) {
                if (sc_.plan.wait_blocks(s_, j, &src, 1)) return j + 1;
            } else if (y.op == Opcode::Dma) {
                Access ya[2];
                const int ny = accesses(y, st_, ya);
                if (ny && conflict(ya, ny, &src, 1)) return j + 1;
            }
        }
        return p;
    }

    // A write-back some core waited for (a store into HBM): engines and HBM channels serve in
    // arrival order, so a load moved ahead of one delays it (and the core waiting for it) if
    // the load is still in flight when the store is issued.
    bool waited_store(std::uint64_t j) const {
        const Instruction& y = st_.code[j];
        if (y.mem_dst.space != Space::Hbm) return false;
        const std::uint32_t di = sc_.cx.ix.dma_of(s_, j);
        return di != kNone && sc_.cx.dma_caused[di] > 0;
    }

    // Just below the last waited-for write-back in [p, k) issued before `done` (p if none).
    std::uint64_t store_floor(std::uint64_t k, std::uint64_t p, Tick done) const {
        const auto& sd = sc_.plan.sync_and_dma(s_);
        auto it = std::lower_bound(sd.begin(), sd.end(), k);
        while (it != sd.begin()) {
            const std::uint64_t j = *--it;
            if (j < p) break;
            if (st_.code[j].op == Opcode::Dma && waited_store(j) && st_.life[j].issue < done) return j + 1;
        }
        return p;
    }

    // The readers of DMA k's data: the instructions reading inside its destination up to the
    // first DMA or store writing over all of it (then nothing later reads what k wrote). A write
    // over part of it (an edge tile) ends k's data there: a read inside that part reads the new
    // data, one reading the rest would read k's (refused). False if a read straddles the
    // destination, or no full overwrite comes within kScan instructions before the stream's end.
    bool readers_of(std::uint64_t k, std::vector<std::uint64_t>& readers) const {
        const Instruction& d = st_.code[k];
        const std::uint64_t lo = d.mem_dst.addr, hi = lo + d.bytes;
        std::uint64_t new_lo = 0, new_hi = 0;  // the part a later write took over (empty: none)
        auto vmem = [&](const MemRef& r) { return r.space == Space::Vmem && local_to(r, st_.chip); };
        const std::uint64_t end = std::min<std::uint64_t>(st_.code.size(), k + 1 + kScan);
        for (std::uint64_t j = k + 1; j < end; ++j) {
            const Instruction& y = st_.code[j];
            const std::uint64_t n = y.has(kBytes) ? y.bytes : 0;
            if ((y.op == Opcode::VLoad || y.op == Opcode::Dma) && y.has(kMemSrc) && vmem(y.mem_src) && y.mem_src.addr < hi &&
                y.mem_src.addr + n > lo) {
                if (y.mem_src.addr < lo || y.mem_src.addr + n > hi) return false;
                if (new_hi > new_lo) {
                    if (y.mem_src.addr < new_lo || y.mem_src.addr + n > new_hi) return false;
                } else {
                    readers.push_back(j);
                }
            }
            if ((y.op == Opcode::VStore || y.op == Opcode::Dma) && y.has(kMemDst) && vmem(y.mem_dst) && y.mem_dst.addr < hi &&
                y.mem_dst.addr + n > lo) {
                if (y.mem_dst.addr <= lo && y.mem_dst.addr + n >= hi) return true;
                if (new_hi > new_lo) return false;  // a second partial write: not followed further
                new_lo = std::max(lo, y.mem_dst.addr);
                new_hi = std::min(hi, y.mem_dst.addr + n);
            }
        }
        return end == st_.code.size();
    }

    // The first place in [0, k] where a DMA placed issues at or after t (the core issues in
    // program order).
    std::uint64_t issued_from(Tick t, std::uint64_t k) const {
        std::uint64_t lo = 0, hi = k;
        while (lo < hi) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            if (st_.life[mid].seen && st_.placed_issue(mid) >= t) hi = mid;
            else lo = mid + 1;
        }
        return lo;
    }

    // Where a DMA goes to issue at t, the core being in [0, k) at t: the first place that issues
    // at or after t, but for a core waiting at t for another chip's DMAs (a collective's step):
    // there, before that wait, after what the core issued last (the step's send). Every load
    // whose claim begins while the core waits for another chip then goes to that wait: the step
    // takes as many as the HBM moves while the core waits (the first place after t is the next
    // step: one load a step, the HBM at ~15% of its peak under a tensor-parallel decode's
    // all-reduce, measured on a 2-layer TP-4 decode on a 4-chip ring). At a wait for this chip's
    // own DMAs, after it: issued at the core's arrival instead, the loads queue in the engines
    // ahead of the DMAs issued once the wait passes (measured on batch-8 and batch-32 decodes:
    // prefetch_ahead replayed a third to a half less).
    std::uint64_t placed_for(Tick t, std::uint64_t k) const {
        const std::uint64_t after = issued_from(t, k);
        const std::uint64_t at = issued_from(t + 1, k);  // (t is a time the core reached: never kNever)
        const std::uint64_t waiting = at > 0 ? at - 1 : 0;  // the last place issuing at or before t
        if (waiting < after && st_.code[waiting].op == Opcode::SWait && waits_for_other_chips(waiting)) return waiting;
        return after;
    }

    // A wait whose raises all come from other chips' streams (their sends).
    bool waits_for_other_chips(std::uint64_t w) const {
        const std::vector<Raiser>& raisers = sc_.plan.covered(s_, w);
        if (raisers.empty()) return false;
        for (const Raiser& r : raisers)
            if (sc_.run.streams[r.stream].chip == st_.chip) return false;
        return true;
    }

    // The occupancy model (prefetch_plan.h): in program order, each candidate claims the first
    // idle HBM time after the claims before it, from the highest place it may go.
    void place() {
        // Forward, in program order: the HBM as one server at its peak taking the candidates in
        // order on the clock (the claims, below).
        struct Candidate {
            std::uint64_t k, wait;
            std::uint32_t dma;
        };
        std::vector<Candidate> cand;
        for (const WaitStall& w : sc_.cx.waits) {
            if (w.stream != s_ || w.stall == 0) continue;
            for (const Raiser& r : sc_.plan.covered(s_, w.index)) {
                if (r.stream != s_ || r.dma == kNone) continue;
                auto fw = first_wait_.find(r.index);
                if (fw == first_wait_.end() || fw->second != w.index) continue;
                const Instruction& in = st_.code[r.index];
                if (!local_load(in, st_.chip) || sc_.cx.ix.dma_remote(in, st_.chip) || !plain_flag(in)) continue;
                cand.push_back({r.index, w.index, r.dma});
            }
        }
        for (const Candidate& c : cand) served_.push_back(c.wait);
        std::sort(served_.begin(), served_.end());
        served_.erase(std::unique(served_.begin(), served_.end()), served_.end());
        std::sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) { return a.k < b.k; });
        cand.erase(std::unique(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) { return a.k == b.k; }), cand.end());
        for (const Candidate& c : cand) {
            const Dma& d = sc_.run.dmas[c.dma];
            clock_.give_back(d.start, d.complete, sc_.hbm.transfer(st_.chip, d.bytes));
        }
        clock_.finish();
        // The claims: the cursor, where those made in program order end (a load that stays is
        // served there, FIFO), and the stretches of the clock a claim beyond the cursor left
        // unclaimed behind it, for the loads placed after all the others (`late`, below).
        Tick cursor = 0;
        std::map<Tick, Tick> left;  // start -> end on the clock, disjoint
        // The first place on the clock at or after x where `len` fits: in program order, from
        // the cursor on; late, in what was left.
        auto fit = [&](Tick x, Tick len, bool late) -> Tick {
            if (!late) return std::max(x, cursor);
            auto it = left.upper_bound(x);
            if (it != left.begin() && std::prev(it)->second >= x + len) return x;  // the stretch x is in
            for (; it != left.end(); ++it)
                if (it->second - it->first >= len) return it->first;
            return kNever;
        };
        enum class Placed { moved, stays, later };
        // One candidate: moved (its claim taken), stays where it was, or (in program order only)
        // placed later.
        auto try_move = [&](const Candidate& c, bool late) {
            const Dma& d = sc_.run.dmas[c.dma];
            const Tick shortest = sc_.dma_timing.shortest(d, false);
            const Tick fixed = shortest - std::min(shortest, sc_.dma_timing.wire(d, false));
            const Tick bytes_time = sc_.hbm.transfer(st_.chip, d.bytes);
            if (!bytes_time) return Placed::stays;
            // Its readers first: a load whose data a read straddles (a piece of a larger tile)
            // cannot have a buffer of its own, and placing it costs a scan.
            std::vector<std::uint64_t> readers;
            if (!readers_of(c.k, readers)) return Placed::stays;
            // Its flag: the one of its wait's ordinal; it stays below the wait flags_.size()
            // waits back on the same flag (which would otherwise wait for it too).
            const std::size_t ord = static_cast<std::size_t>(std::lower_bound(served_.begin(), served_.end(), c.wait) - served_.begin());
            const std::uint64_t depth_floor = ord >= flags_.size() ? served_[ord - flags_.size()] + 1 : 0;
            const std::uint64_t scan_floor = c.k > kScan ? c.k - kScan : 0;
            // The scan for what stops it goes no higher than where the HBM's cursor would place it
            // (a blocker above that one changes nothing): the distance it moves, not kScan (the
            // syncs and DMAs of a trace whose DMAs come in 64 pieces made the full scan 120 s of a
            // decode layer's analysis).
            // Late: the first stretch left (those before the scan's floor are gone, below).
            const Tick low = late ? (left.empty() ? kNever : left.begin()->first) : cursor;
            const Tick t_cursor = low == kNever ? kNever : clock_.when(low);
            if (t_cursor == kNever || t_cursor >= d.issue) return Placed::stays;
            const std::uint64_t floor = legal_floor(c.k, std::max({depth_floor, scan_floor, placed_for(t_cursor, c.k)}));
            if (floor >= c.k || !st_.life[floor].seen) return Placed::stays;
            const Tick start_c = fit(clock_.at(st_.placed_issue(floor)), bytes_time, late);
            if (start_c == kNever) return Placed::stays;
            const Tick t_issue = clock_.when(start_c);
            if (t_issue == kNever || t_issue >= d.issue) return Placed::stays;
            const std::uint64_t at_claim = std::max(floor, placed_for(t_issue, c.k));
            std::uint64_t to = at_claim;
            // Where it lands in the model; it must not pass a waited-for write-back issued before
            // that (then it goes below it, and lands later).
            Tick claim = 0, done = kNever;
            for (;;) {
                if (to >= c.k || !st_.life[to].seen) return Placed::stays;
                const Tick t_new = st_.placed_issue(to);
                claim = fit(std::max(start_c, clock_.at(t_new)), bytes_time, late);
                if (claim == kNever) return Placed::stays;
                done = clock_.when(claim + bytes_time);
                if (done == kNever) return Placed::stays;
                done = std::max(done + fixed, t_new + shortest);
                const std::uint64_t below = store_floor(c.k, to, done);
                if (below == to) break;
                to = below;
            }
            if (done >= d.complete) return Placed::stays;
            // A claim beyond the cursor leaves the HBM's idle time between unclaimed for the
            // loads after it (which may go higher): a move that saves less than that waits until
            // they are placed, and takes what they left.
            if (!late && claim > cursor && sc_.hbm.idle(st_.chip, t_cursor, clock_.when(claim)) > d.complete - done) return Placed::later;
            Moved m;
            m.k = c.k;
            m.wait = c.wait;
            m.dma = c.dma;
            m.ord = ord;
            m.readers = std::move(readers);
            const std::uint64_t last = m.readers.empty() ? c.k : m.readers.back();
            const Instruction& in = st_.code[c.k];
            // Its buffer: where it goes, or lower down (a shorter life) if the VMEM is full there.
            m.addr = kNever;
            for (std::uint64_t at = to; at < c.k && m.addr == kNever; at = at + (c.k - at + 1) / 2) {
                const std::uint64_t offset = in.mem_dst.addr % kGranule;
                m.addr = late ? space_.take_late(in.bytes, offset, at, last) : space_.take(in.bytes, offset, at, last, c.k);
                if (m.addr != kNever) to = at;
            }
            if (m.addr == kNever || to >= c.k) return Placed::stays;
            if (to != at_claim) {  // lowered: it lands later
                const Tick t_new = st_.placed_issue(to);
                const Tick lower = fit(std::max(start_c, clock_.at(t_new)), bytes_time, late);
                const Tick landed = lower == kNever ? kNever : clock_.when(lower + bytes_time);
                if (lower != kNever) claim = lower;
                done = landed == kNever ? d.complete : std::max(landed + fixed, t_new + shortest);
            }
            m.to = to;
            m.done = std::min(done, d.complete);
            moved_.push_back(std::move(m));
            if (late) {  // what is left of its stretch, before and after it
                auto it = std::prev(left.upper_bound(claim));
                const Tick a = it->first, b = it->second;
                left.erase(it);
                if (a < claim) left.emplace(a, claim);
                if (claim + bytes_time < b) left.emplace(claim + bytes_time, b);
            } else {
                if (claim > cursor) left.emplace(cursor, claim);
                cursor = std::max(cursor, claim + bytes_time);
            }
            return Placed::moved;
        };
        std::vector<Candidate> later;
        for (const Candidate& c : cand) {
            const Placed p = try_move(c, false);
            if (p == Placed::later) later.push_back(c);
            if (p != Placed::moved)  // served where it was issued
                cursor += sc_.hbm.transfer(st_.chip, sc_.run.dmas[c.dma].bytes);
        }
        // The loads that waited for the others: in program order, each in the first stretch left
        // unclaimed from the highest place it may go (the time after the last claim included).
        if (later.empty()) return;
        left.emplace(cursor, clock_.at(clock_.end()) + 1);
        space_.begin_late();
        for (const Candidate& c : later) {
            // No load from here on goes above c.k - kScan: the stretches ending before it go.
            const std::uint64_t scan_floor = c.k > kScan ? c.k - kScan : 0;
            if (st_.life[scan_floor].seen) {
                const Tick gone = clock_.at(st_.life[scan_floor].issue);
                while (!left.empty() && left.begin()->second <= gone) left.erase(left.begin());
            }
            try_move(c, true);
        }
    }

    // The placement allowed every load flags_.size() waits of depth; the loads went fewer. With
    // M flags in turn (the i-th wait served on flags_[i % M]) a load is safe if fewer than M
    // served waits lie between its new place and its own wait (then the wait M back on its flag
    // comes before it: no wait counts a later wait's load), so M is the most any load crossed
    // plus one. A flag taken is one the chip no longer has (the next round's plan, or
    // double_buffer_store planning on top of this one, takes from what is left).
    void fewest_flags() {
        std::size_t most = 0;
        for (const Moved& m : moved_) {
            const std::size_t above = static_cast<std::size_t>(std::lower_bound(served_.begin(), served_.end(), m.to) - served_.begin());
            most = std::max(most, m.ord - above);
        }
        const std::size_t n = std::min(flags_.size(), most + 1);
        for (Moved& m : moved_) m.flag = flags_[m.ord % n];
    }

    void write(PrefetchPlan& out) {
        Suggestion& s = out.s;
        // A moved DMA may overtake one needed sooner (that one stayed, or was placed after the
        // others): it claimed idle time before that one's claim, not its bandwidth.
        std::map<std::uint16_t, std::vector<std::pair<std::uint64_t, std::int64_t>>> at;  // new flag -> (position, increment)
        std::unordered_map<std::uint16_t, std::vector<std::pair<std::uint64_t, std::int64_t>>> left;  // old flag -> (k, increment)
        std::unordered_map<std::uint64_t, Edit> edits;  // by index
        auto edit = [&](std::uint64_t j) -> Edit& {
            auto it = edits.find(j);
            if (it == edits.end()) it = edits.emplace(j, Edit{s_, j, st_.code[j], {}}).first;
            return it->second;
        };
        for (const Moved& m : moved_) {
            const Instruction& in = st_.code[m.k];
            at[m.flag].push_back({m.to, flag_increment(in)});
            left[in.flag].push_back({m.k, flag_increment(in)});
            Edit& e = edit(m.k);
            e.in.mem_dst.addr = m.addr;
            e.in.flag = m.flag;
            for (std::uint64_t r : m.readers) {
                Edit& re = edit(r);
                re.in.mem_src.addr = m.addr + (st_.code[r].mem_src.addr - in.mem_dst.addr);
            }
            out.bytes += in.bytes;
            out.dma_ops.insert(sc_.run.annotation(in));
        }
        for (auto& [f, v] : at) std::sort(v.begin(), v.end());
        for (auto& [f, v] : left) std::sort(v.begin(), v.end());
        // Every wait on an old flag no longer counts the moved DMAs' increments issued before it.
        for (std::uint64_t j : sc_.plan.sync_and_dma(s_)) {
            const Instruction& y = st_.code[j];
            if (y.op != Opcode::SWait) continue;
            auto it = left.find(y.flag);
            if (it == left.end()) continue;
            std::int64_t less = 0;
            for (const auto& [k, inc] : it->second) {
                if (k >= j) break;
                less += inc;
            }
            if (less) edit(j).in.value = y.value - less;
        }
        // The first wait covering each moved DMA then waits on its new flag for every moved DMA
        // issued on it before it: its own (the ones of the waits flags_.size() back and more
        // are above the previous wait on the flag, and already waited for).
        std::map<std::uint64_t, std::uint16_t> firsts;
        for (const Moved& m : moved_) firsts[m.wait] = m.flag;
        for (const auto& [w, f] : firsts) {
            std::int64_t count = 0;
            for (const auto& [p, inc] : at[f]) {
                if (p > w) break;
                count += inc;
            }
            Instruction nw = st_.code[w];
            nw.flag = f;
            nw.cond = Cond::Ge;
            nw.value = count;
            edit(w).then.push_back(nw);
        }
        for (const Moved& m : moved_) s.moves.push_back({s_, m.k, m.to});
        std::vector<std::uint64_t> order;
        for (const auto& [j, e] : edits) order.push_back(j);
        std::sort(order.begin(), order.end());
        for (std::uint64_t j : order) s.edits.push_back(std::move(edits.at(j)));
        out.dmas += moved_.size();
        out.peak_vmem = std::max(out.peak_vmem, space_.peak());
        estimate(out);
    }

    // What the moved loads can save: the HBM time they take from idle bandwidth before they
    // were moving before (each at most its bytes at the HBM's peak, all of them at most the idle
    // time of the spans they moved over: the roofline), at most what the waits they served
    // stalled.
    void estimate(PrefetchPlan& out) const {
        Tick filled = 0;
        std::vector<std::pair<Tick, Tick>> spans;
        std::unordered_map<std::uint64_t, bool> served;
        for (const Moved& m : moved_) {
            const Dma& d = sc_.run.dmas[m.dma];
            const Tick from = st_.life[m.to].issue;
            if (from >= d.start) continue;
            filled += std::min(sc_.hbm.transfer(st_.chip, d.bytes), sc_.hbm.idle(st_.chip, from, d.start));
            spans.push_back({from, d.start});
            served[m.wait] = true;
        }
        std::sort(spans.begin(), spans.end());
        Tick idle = 0, lo = 0, hi = 0;
        bool open = false;
        for (const auto& [a, b] : spans) {
            if (open && a <= hi) {
                hi = std::max(hi, b);
                continue;
            }
            if (open) idle += sc_.hbm.idle(st_.chip, lo, hi);
            lo = a;
            hi = b;
            open = true;
        }
        if (open) idle += sc_.hbm.idle(st_.chip, lo, hi);
        Tick stalls = 0;
        for (const WaitStall& w : sc_.cx.waits)
            if (w.stream == s_ && served.count(w.index)) {
                stalls += w.stall;
                ++out.waits;
                out.wait_ops.insert(sc_.run.annotation(st_.code[w.index]));
            }
        out.saving_on[s_] = std::min({filled, idle, stalls});
    }
};

}  // namespace

PrefetchPlan plan_prefetch_ahead(const SuggestContext& sc, std::uint64_t reserve) {
    PrefetchPlan out;
    // Per chip: the flags its program names (the new flag is one it does not).
    std::map<std::uint16_t, std::vector<bool>> named;
    for (std::uint32_t s = 0; s < sc.run.streams.size(); ++s) {
        const BufferRenamer::Room room = sc.renamer.room(sc.run.streams[s].chip);
        if (room.flags) named.emplace(sc.run.streams[s].chip, std::vector<bool>(room.flags, false));
    }
    for (const Stream& st : sc.run.streams)
        for (const Instruction& in : st.code)
            if (in.has(kFlag)) {
                auto it = named.find(flag_chip(in, st.chip));
                if (it != named.end() && in.flag < it->second.size()) it->second[in.flag] = true;
            }
    for (std::uint32_t s = 0; s < sc.run.streams.size(); ++s) {
        const Stream& st = sc.run.streams[s];
        BufferRenamer::Room room = sc.renamer.room(st.chip);
        room.free_hi = room.free_hi > reserve ? room.free_hi - reserve : 0;  // the top `reserve` bytes are not its
        if (!room.one_stream || room.free_hi <= room.free_lo || !named.count(st.chip)) continue;
        const auto& used = named.at(st.chip);
        std::vector<std::uint16_t> flags;
        for (std::size_t f = 0; f < used.size() && flags.size() < kMaxFlags; ++f)
            if (!used[f]) flags.push_back(static_cast<std::uint16_t>(f));
        if (flags.empty()) continue;
        StreamPlan(sc, s, room, std::move(flags)).run(out);
    }
    return out;
}

const PrefetchPlan& prefetch_ahead_plan(const SuggestContext& sc) {
    SuggestContext::PrefetchAheadOnce& c = *sc.prefetch_ahead_cache;
    std::call_once(c.made, [&] { c.plan = std::make_shared<const PrefetchPlan>(plan_prefetch_ahead(sc)); });
    return *c.plan;
}

PrefetchPlan prefetch_ahead_plan(const SuggestContext& sc, std::uint64_t reserve) {
    const PrefetchPlan& whole = prefetch_ahead_plan(sc);
    if (!reserve) return whole;
    // Every stream plan_prefetch_ahead plans on: its buffers start at the room's start and end at
    // most peak_vmem above it (the most of any chip, so this errs towards planning again).
    for (const Stream& st : sc.run.streams) {
        const BufferRenamer::Room room = sc.renamer.room(st.chip);
        if (!room.one_stream || room.free_hi <= room.free_lo) continue;  // not planned on, reserve or not
        if (room.free_hi - room.free_lo <= reserve || room.free_hi - room.free_lo - reserve < whole.peak_vmem)
            return plan_prefetch_ahead(sc, reserve);
    }
    return whole;
}

}  // namespace xpu::analysis
