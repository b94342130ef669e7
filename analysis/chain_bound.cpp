#include "analysis/chain_bound.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/bounds.h"
#include "analysis/dependencies.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kPage = 4096;  // memory is tracked per 4 KiB page (a write covers its pages)

// When the data of each page was last written, per (space, chip, VMEM of the chip): the chain
// time of its writer.
class PageTimes {
public:
    Tick ready(const Access& a) const {
        Tick t = 0;
        const auto* m = map_of(a);
        if (!m) return 0;
        for (std::uint64_t p = a.lo / kPage; p <= (a.hi - 1) / kPage; ++p) {
            auto it = m->find(p);
            if (it != m->end()) t = std::max(t, it->second);
        }
        return t;
    }
    void write(const Access& a, Tick t) {  // the newest write of a page is what later reads see
        auto& m = maps_[key(a)];
        for (std::uint64_t p = a.lo / kPage; p <= (a.hi - 1) / kPage; ++p) m[p] = t;
    }

private:
    static std::uint64_t key(const Access& a) {
        return (std::uint64_t(a.chip) << 24) | (std::uint64_t(a.vmem) << 8) | static_cast<std::uint64_t>(a.space);
    }
    const std::unordered_map<std::uint64_t, Tick>* map_of(const Access& a) const {
        auto it = maps_.find(key(a));
        return it == maps_.end() ? nullptr : &it->second;
    }
    std::unordered_map<std::uint64_t, std::unordered_map<std::uint64_t, Tick>> maps_;
};

// The instructions the run reached, all streams merged in issue order. A core issues in program
// order, so each stream's issue times never decrease and a merge of the streams (a heap of one
// cursor a stream) gives the order without holding it: a list of every instruction took 24-48
// bytes an instruction at the analysis's peak. A stream whose times do decrease (a log written
// otherwise) is sorted as a whole instead, as it was before.
class IssueOrder {
public:
    struct At {
        Tick issue;
        std::uint32_t s;
        std::uint64_t i;
    };
    explicit IssueOrder(const RunData& run) : run_(run) {
        bool monotone = true;
        for (const Stream& st : run.streams)
            for (std::uint64_t i = 1; i < st.code.size() && st.life[i].seen && monotone; ++i)
                monotone = st.life[i].issue >= st.life[i - 1].issue;
        if (!monotone) {
            for (std::uint32_t s = 0; s < run.streams.size(); ++s)
                for (std::uint64_t i = 0; i < run.streams[s].code.size() && run.streams[s].life[i].seen; ++i)
                    sorted_.push_back({run.streams[s].life[i].issue, s, i});
            std::stable_sort(sorted_.begin(), sorted_.end(), [](const At& x, const At& y) { return x.issue < y.issue; });
            sorting_ = true;
            return;
        }
        next_.assign(run.streams.size(), 0);
        for (std::uint32_t s = 0; s < run.streams.size(); ++s) push(s);
    }
    bool next(At& at) {
        if (sorting_) {
            if (pos_ == sorted_.size()) return false;
            at = sorted_[pos_++];
            return true;
        }
        if (heap_.empty()) return false;
        std::pop_heap(heap_.begin(), heap_.end(), later);
        const auto [issue, s] = heap_.back();
        heap_.pop_back();
        at = {issue, s, next_[s]++};
        push(s);
        return true;
    }

private:
    using Head = std::pair<Tick, std::uint32_t>;  // a stream's next issue time, the stream
    static bool later(const Head& x, const Head& y) { return x > y; }  // a min-heap on (time, stream)
    void push(std::uint32_t s) {
        const Stream& st = run_.streams[s];
        const std::uint64_t i = next_[s];
        if (i >= st.code.size() || !st.life[i].seen) return;
        heap_.push_back({st.life[i].issue, s});
        std::push_heap(heap_.begin(), heap_.end(), later);
    }
    const RunData& run_;
    std::vector<std::uint64_t> next_;
    std::vector<Head> heap_;
    std::vector<At> sorted_;
    std::size_t pos_ = 0;
    bool sorting_ = false;
};

}  // namespace

ChainBound data_chain_bound(const Context& cx) {
    const RunData& run = cx.run;
    std::unordered_map<int, double> ps_per_byte;  // per chip (bounds.h: hbm_ps_per_byte)
    for (const Unit& u : run.units)
        if (u.role == Role::Hbm) ps_per_byte.emplace(u.chip, hbm_ps_per_byte(run, u.chip));
    // Every instruction the run reached, in the order the run issued them (all streams): a read
    // then sees the write the run gave it (a buffer reused later is written after its readers
    // issued, since waits ordered them), whichever stream or chip wrote it. Ties go to the lower
    // stream, then to program order.
    IssueOrder order(run);
    PageTimes pages;
    std::vector<std::array<Tick, kNumRegs>> reg(run.streams.size());
    std::vector<Tick> end(run.streams.size(), 0);
    std::unordered_map<std::uint32_t, Tick> weights;  // matrix unit -> its last push's chain time
    for (IssueOrder::At at; order.next(at);) {
        const Stream& st = run.streams[at.s];
        const Instruction& in = st.code[at.i];
        auto& r = reg[at.s];
        Tick start = 0;
        if (in.has(kSrc0)) start = std::max(start, r[in.src[0]]);
        if (in.has(kSrc1)) start = std::max(start, r[in.src[1]]);
        if (in.has(kSrc2)) start = std::max(start, r[in.src[2]]);
        Access acc[2];
        const int na = accesses(in, st, acc);
        for (int k = 0; k < na; ++k)
            if (!acc[k].write) start = std::max(start, pages.ready(acc[k]));
        Tick took = 0;
        const std::uint32_t op = cx.ix.op_of(at.s, at.i);
        if (in.op == Opcode::Dma && in.mem_src.space == Space::Vmem) {
            // A write-back out of VMEM: nothing. pipeline_store cuts one into pieces, each issued
            // once its own bytes are written, and the last piece may be as small as the cut's
            // alignment: what follows the last writer is that piece, not the whole DMA.
        } else if (in.op == Opcode::Dma) {
            for (int k = 0; k < na; ++k) {
                auto it = ps_per_byte.find(acc[k].chip);
                if (acc[k].space == Space::Hbm && it != ps_per_byte.end())
                    took = std::max(took, static_cast<Tick>(static_cast<double>(acc[k].hi - acc[k].lo) * it->second));
            }
        } else if (op != kNone) {
            const UnitOp& u = run.unit_ops[op];
            took = u.end - std::min(u.end, u.start);
            if (in.op == Opcode::MatMul) {
                auto w = weights.find(u.unit);
                if (w != weights.end()) start = std::max(start, w->second);
            }
            if (in.op == Opcode::MPush) weights[u.unit] = start + took;
        }
        const Tick done = start + took;
        if (in.has(kDst)) r[in.dst] = done;
        for (int k = 0; k < na; ++k)
            if (acc[k].write) pages.write(acc[k], done);
        end[at.s] = std::max(end[at.s], done);
    }
    ChainBound best;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s)
        if (end[s] > best.time) best = {end[s], run.streams[s].label()};
    return best;
}

}  // namespace xpu::analysis
