// forward_store: a load that reads back from HBM what the same core stored there from VMEM,
// while that VMEM data is still there (an op's result written back, then read again as the next
// op's input: a lowering that sends every tensor between ops through HBM, as the ONNX and
// SCALE-Sim lowerings do). The load becomes a VMEM -> VMEM copy from the store's source: the
// round trip through HBM (its latency, and its bytes on a shared HBM) is gone. The store stays
// (the tensor may be read later, or be the model's output), and so does every wait.
//
// The rule (legality), per stream, in program order:
//  - the store: a DMA from this core's VMEM to its own chip's HBM that does not reduce (no
//    dtype); the load: a DMA from its own chip's HBM into this core's VMEM that does not reduce,
//    whose HBM range the store wrote whole, the latest write of this stream there;
//  - a wait that covers the store comes between the store and the load (so the load read what
//    the store wrote, not a race with it);
//  - nothing of the stream writes the store's VMEM source between the store and the first wait
//    that covers the load (a vst, a DMA into VMEM: the copy must read what the store read until
//    the core knows it has landed), and the source does not overlap the load's destination;
//  - no other stream writes the HBM range or the VMEM source anywhere in the trace (another
//    core of the chip, a remote DMA of another chip): their order with this stream's accesses
//    is the flags', which this rule does not follow.
// The estimate, per stream the larger of two (the suggestion the largest over streams): the waits
// (per stalled wait that covers forwarded loads, how much earlier it would end if they landed as
// they started, no earlier than the other DMAs it covers complete, at most its stall; summed),
// and the HBM (the peak-rate time of the bytes no longer read, where the HBM was busy while they
// were: an HBM-bound run gains that for the other traffic). The verification measures.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/names.h"
#include "analysis/render_util.h"
#include "analysis/report.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// A memory of the run: (space, chip, which VMEM of the chip).
std::uint64_t memory_key(const Access& a) {
    return (std::uint64_t(static_cast<unsigned>(a.space)) << 32) | (std::uint64_t(a.chip) << 16) | a.vmem;
}

// Written ranges per memory, each with its writer stream: what other streams write.
class Writes {
public:
    void add(const Access& a, std::uint32_t stream) { by_mem_[memory_key(a)].push_back({a.lo, a.hi, stream}); }
    void seal() {
        for (auto& [k, v] : by_mem_) {
            std::sort(v.begin(), v.end(), [](const W& x, const W& y) { return x.lo < y.lo; });
            std::uint64_t longest = 0;
            for (const W& w : v) longest = std::max(longest, w.hi - w.lo);
            longest_[k] = longest;
        }
    }
    // Whether a stream other than `stream` writes [lo, hi) of memory `key`.
    bool other_writes(std::uint64_t key, std::uint64_t lo, std::uint64_t hi, std::uint32_t stream) const {
        auto m = by_mem_.find(key);
        if (m == by_mem_.end()) return false;
        const std::vector<W>& v = m->second;
        const std::uint64_t from = lo > longest_.at(key) ? lo - longest_.at(key) : 0;
        auto it = std::lower_bound(v.begin(), v.end(), from, [](const W& w, std::uint64_t x) { return w.lo < x; });
        for (; it != v.end() && it->lo < hi; ++it)
            if (it->stream != stream && it->hi > lo) return true;
        return false;
    }

private:
    struct W {
        std::uint64_t lo, hi;
        std::uint32_t stream;
    };
    std::unordered_map<std::uint64_t, std::vector<W>> by_mem_;
    std::unordered_map<std::uint64_t, std::uint64_t> longest_;
};

struct Forward {
    std::uint32_t stream = 0;
    std::uint64_t load = 0, store = 0;
    std::uint64_t vmem = 0;  // the store's VMEM source of the load's bytes
};

// One stream's forwardable loads (the rule above).
class StreamScan {
public:
    StreamScan(const SuggestContext& sc, std::uint32_t s, const Writes& writes) : sc_(sc), s_(s), st_(sc.run.streams[s]), writes_(writes) {}

    std::vector<Forward> run() {
        for (std::uint64_t i = 0; i < st_.code.size(); ++i) {
            const Instruction& in = st_.code[i];
            if (in.op == Opcode::SWait) {
                wait(i);
                continue;
            }
            Access acc[2];
            const int na = accesses(in, st_, acc);
            if (na == 0) continue;
            if (in.op == Opcode::Dma) consider_load(i, in, acc, na);
            for (int k = 0; k < na; ++k)
                if (acc[k].write) wrote(acc[k]);
            if (in.op == Opcode::Dma) consider_store(i, in, acc, na);
        }
        return std::move(done_);
    }

private:
    struct Stored {
        std::uint64_t hi = 0, vmem = 0, index = 0;
        bool confirmed = false;  // a wait covering it came since
    };
    struct Pending {
        Forward f;
        std::uint64_t bytes = 0;
    };
    const SuggestContext& sc_;
    std::uint32_t s_;
    const Stream& st_;
    const Writes& writes_;
    std::map<std::uint64_t, Stored> stored_;          // HBM lo -> the latest store there (disjoint ranges)
    std::unordered_map<std::uint64_t, std::uint64_t> stored_at_;  // store index -> its HBM lo
    std::uint64_t longest_store_ = 0;
    std::map<std::uint64_t, Pending> pending_;        // load index -> waiting for a wait that covers it
    std::vector<Forward> done_;

    bool own_vmem(const Access& a) const { return a.space == Space::Vmem && a.chip == st_.chip && a.vmem == st_.vmem; }
    bool own_hbm(const Access& a) const { return a.space == Space::Hbm && a.chip == st_.chip; }

    void wait(std::uint64_t w) {
        for (const Raiser& r : sc_.plan.covered(s_, w)) {
            if (r.stream != s_) continue;
            auto p = pending_.find(r.index);
            if (p != pending_.end()) {
                done_.push_back(p->second.f);
                pending_.erase(p);
            }
            auto at = stored_at_.find(r.index);
            if (at != stored_at_.end()) {
                auto it = stored_.find(at->second);
                if (it != stored_.end() && it->second.index == r.index) it->second.confirmed = true;
            }
        }
    }

    // An own write: HBM drops the stores it overlaps; VMEM drops the stores whose source it
    // overlaps and cancels the pending loads that would copy from it.
    void wrote(const Access& a) {
        if (own_hbm(a)) {
            auto it = stored_.lower_bound(a.lo > longest_store_ ? a.lo - longest_store_ : 0);
            while (it != stored_.end() && it->first < a.hi) {
                if (it->second.hi > a.lo) {
                    stored_at_.erase(it->second.index);
                    it = stored_.erase(it);
                } else {
                    ++it;
                }
            }
        } else if (own_vmem(a)) {
            for (auto it = stored_.begin(); it != stored_.end();) {
                const std::uint64_t vlo = it->second.vmem, vhi = vlo + (it->second.hi - it->first);
                if (vlo < a.hi && a.lo < vhi) {
                    stored_at_.erase(it->second.index);
                    it = stored_.erase(it);
                } else {
                    ++it;
                }
            }
            for (auto it = pending_.begin(); it != pending_.end();) {
                const std::uint64_t vlo = it->second.f.vmem, vhi = vlo + it->second.bytes;
                it = vlo < a.hi && a.lo < vhi ? pending_.erase(it) : std::next(it);
            }
        }
    }

    void consider_load(std::uint64_t i, const Instruction& in, const Access* acc, int na) {
        if (na != 2 || in.has(kDtype) || !st_.life[i].seen) return;
        const Access* src = acc[0].write ? &acc[1] : &acc[0];
        const Access* dst = acc[0].write ? &acc[0] : &acc[1];
        if (!own_hbm(*src) || !own_vmem(*dst)) return;
        auto it = stored_.upper_bound(src->lo);
        if (it == stored_.begin()) return;
        --it;
        const Stored& s = it->second;
        if (!s.confirmed || src->lo < it->first || src->hi > s.hi) return;
        const std::uint64_t vlo = s.vmem + (src->lo - it->first), vhi = vlo + (src->hi - src->lo);
        if (vlo < dst->hi && dst->lo < vhi) return;  // the copy would overlap itself
        if (writes_.other_writes(memory_key(*src), src->lo, src->hi, s_) || writes_.other_writes(memory_key(*dst), vlo, vhi, s_)) return;
        pending_[i] = {{s_, i, s.index, vlo}, src->hi - src->lo};
    }

    void consider_store(std::uint64_t i, const Instruction& in, const Access* acc, int na) {
        if (na != 2 || in.has(kDtype)) return;
        const Access* src = acc[0].write ? &acc[1] : &acc[0];
        const Access* dst = acc[0].write ? &acc[0] : &acc[1];
        if (!own_vmem(*src) || !own_hbm(*dst)) return;
        stored_[dst->lo] = {dst->hi, src->lo, i, false};
        stored_at_[i] = dst->lo;
        longest_store_ = std::max(longest_store_, dst->hi - dst->lo);
    }
};

class ForwardStore : public SuggestionFinder {
public:
    const char* kind() const override { return "forward_store"; }
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        const RunData& run = sc.run;
        Writes writes;
        for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
            const Stream& st = run.streams[s];
            for (const Instruction& in : st.code) {
                Access acc[2];
                const int na = accesses(in, st, acc);
                for (int k = 0; k < na; ++k)
                    if (acc[k].write) writes.add(acc[k], s);
            }
        }
        writes.seal();
        std::vector<Forward> fw;
        for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
            std::vector<Forward> f = StreamScan(sc, s, writes).run();
            fw.insert(fw.end(), f.begin(), f.end());
        }
        if (fw.empty()) return;
        // The estimate (a wait ends no earlier than what else it covers): per stalled wait that
        // covers forwarded loads, how much earlier it could end if they landed when they started
        // (a VMEM copy instead of an HBM read), no earlier than its other raisers' completions and
        // its own readiness, at most its stall.
        std::unordered_map<std::uint64_t, Tick> forwarded_start;  // (stream, load index) -> the load's start
        std::map<std::uint32_t, Tick> hbm_time;                   // per stream: the HBM time its forwarded reads took
        std::uint64_t bytes = 0;
        std::set<std::string> ops, dma_ops;
        Suggestion sug;
        auto key = [](std::uint32_t s, std::uint64_t i) { return (std::uint64_t(s) << 40) | i; };
        for (const Forward& f : fw) {
            const std::uint32_t d = sc.cx.ix.dma_of(f.stream, f.load);
            if (d == kNone) continue;
            const Dma& x = run.dmas[d];
            forwarded_start[key(f.stream, f.load)] = x.start;
            // The HBM time its bytes took, where the HBM was busy while the load read (bytes no
            // longer read free it for the others only there).
            const int chip = run.streams[f.stream].chip;
            const Tick span = x.complete - std::min(x.complete, x.start);
            if (span > 0) {
                const Tick idle = std::min(span, sc.hbm.idle(chip, x.start, x.complete));
                hbm_time[f.stream] += static_cast<Tick>(static_cast<double>(sc.hbm.transfer(chip, run.streams[f.stream].code[f.load].bytes)) *
                                                        static_cast<double>(span - idle) / static_cast<double>(span));
            }
            Instruction in = run.streams[f.stream].code[f.load];
            bytes += in.bytes;
            in.mem_src = MemRef{Space::Vmem, kLocalChip, f.vmem};
            sug.edits.push_back({f.stream, f.load, in, {}});
            dma_ops.insert(run.annotation(run.streams[f.stream].code[f.load]));
            ops.insert(run.annotation(run.streams[f.stream].code[f.store]));
        }
        if (sug.edits.empty()) return;
        std::map<std::uint32_t, Tick> gain;
        std::uint64_t waits = 0;
        for (const WaitStall& w : sc.cx.waits) {
            const Life& lw = run.streams[w.stream].life[w.index];
            Tick end = lw.ready;
            bool on = false;
            for (const Raiser& r : sc.plan.covered(w.stream, w.index)) {
                auto it = forwarded_start.find(key(r.stream, r.index));
                if (it != forwarded_start.end()) {
                    on = true;
                    end = std::max(end, it->second);
                } else {
                    end = std::max(end, r.dma == kNone ? lw.issue : run.dmas[r.dma].complete);
                }
            }
            if (!on || end >= lw.issue) continue;
            gain[w.stream] += std::min(lw.issue - end, w.stall);
            ++waits;
        }
        for (const auto& [s, g] : gain) sug.estimated_saving = std::max(sug.estimated_saving, g);
        for (const auto& [s, t] : hbm_time) sug.estimated_saving = std::max(sug.estimated_saving, t);
        sug.kind = "forward_store";
        set_places(sug, ops, dma_ops);
        std::ostringstream cause, action;
        cause << sug.edits.size() << (sug.edits.size() == 1 ? " load reads" : " loads read") << " back from HBM what the core stored there from VMEM ("
              << render::bytes(bytes) << "), while that VMEM data was still in place";
        if (waits) cause << "; " << waits << " stalled " << (waits == 1 ? "wait covers" : "waits cover") << " them";
        action << "forward: copy each from the store's VMEM source instead (a VMEM -> VMEM DMA: " << sug.edits.size()
               << " DMAs rewritten); the stores and every wait stay";
        sug.cause = cause.str();
        sug.action = action.str();
        out.push_back(std::move(sug));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> forward_store_finder() { return std::make_unique<ForwardStore>(); }

}  // namespace xpu::analysis
