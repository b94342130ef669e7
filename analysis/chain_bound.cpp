#include "analysis/chain_bound.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/bounds.h"
#include "analysis/dependencies.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kPage = 4096;  // memory is tracked per 4 KiB page (a write covers its pages)

// Which memory an access is in: (chip, VMEM of the chip, space), one key for the maps by page
// or granule below.
std::uint64_t memory_of(const Access& a) {
    return (std::uint64_t(a.chip) << 24) | (std::uint64_t(a.vmem) << 8) | static_cast<std::uint64_t>(a.space);
}

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
        auto& m = maps_[memory_of(a)];
        for (std::uint64_t p = a.lo / kPage; p <= (a.hi - 1) / kPage; ++p) m[p] = t;
    }
    bool written(const Access& a, std::uint64_t page) const {  // by any instruction of the run
        const auto* m = map_of(a);
        return m && m->count(page);
    }

private:
    const std::unordered_map<std::uint64_t, Tick>* map_of(const Access& a) const {
        auto it = maps_.find(memory_of(a));
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
    // reverse: the same order backwards (the exact mirror: ties fall the other way too).
    IssueOrder(const RunData& run, bool reverse) : run_(run), reverse_(reverse) {
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
            if (reverse_) std::reverse(sorted_.begin(), sorted_.end());
            return;
        }
        // Forwards the order is (issue, stream, index) ascending; backwards each stream's cursor
        // starts at the last instruction the run reached and the heap pops the largest first.
        next_.assign(run.streams.size(), 0);
        if (reverse_)
            for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
                const Stream& st = run.streams[s];
                std::uint64_t n = 0;
                while (n < st.code.size() && st.life[n].seen) ++n;
                next_[s] = n;  // one past the cursor
            }
        for (std::uint32_t s = 0; s < run.streams.size(); ++s) push(s);
    }
    bool next(At& at) {
        if (sorting_) {
            if (pos_ == sorted_.size()) return false;
            at = sorted_[pos_++];
            return true;
        }
        if (heap_.empty()) return false;
        std::pop_heap(heap_.begin(), heap_.end(), cmp());
        const auto [issue, s] = heap_.back();
        heap_.pop_back();
        at = {issue, s, reverse_ ? --next_[s] : next_[s]++};
        push(s);
        return true;
    }

private:
    using Head = std::pair<Tick, std::uint32_t>;  // a stream's next issue time, the stream
    // Forwards a min-heap on (time, stream), backwards a max-heap.
    struct Cmp {
        bool reverse;
        bool operator()(const Head& x, const Head& y) const { return reverse ? x < y : x > y; }
    };
    Cmp cmp() const { return {reverse_}; }
    void push(std::uint32_t s) {
        const Stream& st = run_.streams[s];
        if (reverse_) {
            if (next_[s] == 0) return;
            heap_.push_back({st.life[next_[s] - 1].issue, s});
        } else {
            const std::uint64_t i = next_[s];
            if (i >= st.code.size() || !st.life[i].seen) return;
            heap_.push_back({st.life[i].issue, s});
        }
        std::push_heap(heap_.begin(), heap_.end(), cmp());
    }
    const RunData& run_;
    bool reverse_ = false;
    std::vector<std::uint64_t> next_;
    std::vector<Head> heap_;
    std::vector<At> sorted_;
    std::size_t pos_ = 0;
    bool sorting_ = false;
};

// What an instruction takes at least on the chain (see chain_bound.h), and the matrix unit of a
// matmul or weight push (kNone otherwise).
struct Link {
    Tick took = 0;
    std::uint32_t unit = kNone;  // the unit it runs on (an instruction with a unit operation)
};

class Links {
public:
    explicit Links(const Context& cx) : cx_(cx) {
        for (const Unit& u : cx.run.units)
            if (u.role == Role::Hbm) ps_per_byte_.emplace(u.chip, hbm_ps_per_byte(cx.run, u.chip));
    }
    Link of(std::uint32_t s, std::uint64_t i, const Instruction& in, const Access* acc, int na) const {
        Link l;
        const std::uint32_t op = cx_.ix.op_of(s, i);
        if (in.op == Opcode::Dma && in.mem_src.space == Space::Vmem) {
            // A write-back out of VMEM: nothing. pipeline_store cuts one into pieces, each issued
            // once its own bytes are written, and the last piece may be as small as the cut's
            // alignment: what follows the last writer is that piece, not the whole DMA.
        } else if (in.op == Opcode::Dma) {
            for (int k = 0; k < na; ++k) {
                if (acc[k].space == Space::Hbm) l.took = std::max(l.took, hbm_time(acc[k].chip, acc[k].hi - acc[k].lo));
            }
        } else if (op != kNone) {
            const UnitOp& u = cx_.run.unit_ops[op];
            l.took = u.end - std::min(u.end, u.start);
            l.unit = u.unit;
        }
        return l;
    }

    // Least time `bytes` take through the HBM of `chip` (0: no HBM of it in the log).
    Tick hbm_time(int chip, std::uint64_t bytes) const {
        auto it = ps_per_byte_.find(chip);
        return it == ps_per_byte_.end() ? 0 : static_cast<Tick>(static_cast<double>(bytes) * it->second);
    }

private:
    const Context& cx_;
    std::unordered_map<int, double> ps_per_byte_;  // per chip (bounds.h: hbm_ps_per_byte)
};

// The chain after each instruction, in one pass backwards over the forward pass's order: what
// each value (register, page, a unit's weights) still has to feed once written, the longest of
// its readers' own links and tails. A writer takes what its readers since the next write need.
class Tails {
public:
    // written: the pages the forward pass saw written; a read of any other page feeds no writer
    // (weights read from HBM: millions of pages on a decode), so its need is not kept.
    Tails(std::size_t streams, const PageTimes& written) : written_(written), reg_(streams), accumulated_(streams) {
        for (auto& r : reg_) r.fill(0);
    }
    // The tail of a writer (before its own reads are noted): what its readers need, then forgotten.
    Tick writer(std::uint32_t s, const Instruction& in, const Access* acc, int na, const Link& l) {
        Tick t = 0;
        if (in.has(kDst) && in.op == Opcode::MatMul) {
            // Matmuls accumulate into their destination without naming it as a source
            // (docs/architecture.md): what reads the accumulator next reads every matmul into
            // it since it was last read, so each of them keeps the readers' need.
            t = std::max(t, reg_[s][in.dst]);
            accumulated_[s][in.dst] = true;
        } else if (in.has(kDst)) {
            t = std::max(t, std::exchange(reg_[s][in.dst], 0));
        }
        for (int k = 0; k < na; ++k)
            if (acc[k].write) t = std::max(t, pages_take(acc[k]));
        if (in.op == Opcode::MPush && l.unit != kNone) {
            auto w = weights_.find(l.unit);
            if (w != weights_.end()) t = std::max(t, std::exchange(w->second, 0));
        }
        return t;
    }
    // A reader needs its own link and its tail after every value it reads.
    void reader(std::uint32_t s, const Instruction& in, const Access* acc, int na, const Link& l, Tick tail) {
        const Tick need = l.took + tail;
        if (in.has(kSrc0)) read(s, in.src[0], need);
        if (in.has(kSrc1)) read(s, in.src[1], need);
        if (in.has(kSrc2)) read(s, in.src[2], need);
        for (int k = 0; k < na; ++k)
            if (!acc[k].write) pages_need(acc[k], need);
        if (in.op == Opcode::MatMul && l.unit != kNone) weights_[l.unit] = std::max(weights_[l.unit], need);
    }

private:
    // A read of a register: the readers of one value (all since its writes) need the longest of
    // them; after matmuls accumulated into it, the readers before them read an earlier sum.
    void read(std::uint32_t s, std::uint8_t r, Tick need) {
        if (accumulated_[s][r]) {
            reg_[s][r] = need;
            accumulated_[s][r] = false;
        } else {
            reg_[s][r] = std::max(reg_[s][r], need);
        }
    }
    Tick pages_take(const Access& a) {
        auto m = pages_.find(memory_of(a));
        if (m == pages_.end()) return 0;
        Tick t = 0;
        for (std::uint64_t p = a.lo / kPage; p <= (a.hi - 1) / kPage; ++p) {
            auto it = m->second.find(p);
            if (it == m->second.end()) continue;
            t = std::max(t, it->second);
            m->second.erase(it);
        }
        return t;
    }
    void pages_need(const Access& a, Tick need) {
        std::unordered_map<std::uint64_t, Tick>* m = nullptr;
        for (std::uint64_t p = a.lo / kPage; p <= (a.hi - 1) / kPage; ++p) {
            if (!written_.written(a, p)) continue;
            if (!m) m = &pages_[memory_of(a)];
            Tick& t = (*m)[p];
            t = std::max(t, need);
        }
    }
    const PageTimes& written_;
    std::vector<std::array<Tick, kNumRegs>> reg_;
    std::vector<std::bitset<kNumRegs>> accumulated_;  // matmuls wrote it since (backwards) it was read
    std::unordered_map<std::uint64_t, std::unordered_map<std::uint64_t, Tick>> pages_;
    std::unordered_map<std::uint32_t, Tick> weights_;
};

// What depends on each matrix unit's last weight tile (LastTiles in chain_bound.h), forwards:
// a value carries one bit per tracked matrix unit, set when it was computed from a matmul on
// that unit's last tile. A matmul's accumulator takes only that matmul's bits (not the sum it
// adds to: fewer bits, less work counted, the bound only lower).
// A value also carries `after`: no sooner than that after the earliest start of the tiles its
// bits name can it exist. An accumulator the last tile's matmuls write one after another (each
// write after the last: write after write, on one in-order unit) is complete only once all of
// them have streamed from the tile's start on and the last has drained through the array: their
// summed streaming and the unit's pipeline. Anything computed from
// values takes the least of theirs (it follows each of them; the least is valid for any group
// of tiles its bits meet, bounds.cpp). Without this, what reads a result followed the tile's
// start at once, as if its matmul took no time.
class LastTileTaint {
    // A value's bits and its `after`; what reads several takes all their bits and the least `after`.
    struct Taint {
        std::uint64_t bits = 0;
        Tick after = 0;
        void add(const Taint& x) {
            if (!x.bits) return;
            after = bits ? std::min(after, x.after) : x.after;
            bits |= x.bits;
        }
    };
    // An accumulator written by matmuls of a unit's last tile: the unit and their summed streaming.
    struct Chain {
        std::uint32_t unit;
        Tick streamed;
    };

public:
    LastTileTaint(const RunData& run, const Links& links)
        : run_(run), links_(links), reg_(run.streams.size()), after_(run.streams.size()), chain_(run.streams.size()) {
        for (auto& r : reg_) r.fill(0);
        for (auto& r : after_) r.fill(0);
        for (auto& r : chain_) r.fill({kNone, 0});
        // Each matrix unit's pipeline: what a matmul takes from the end of its streaming to its
        // result (rows + cols - 2 cycles on a weight-stationary array: models/matrix_unit.h). Its
        // shape sets it, not the order; the least the run shows of any, so never more than the
        // last writer's.
        for (std::size_t k = 0; k < run.unit_ops.size(); ++k) {
            const UnitOp& op = run.unit_ops[k];
            if (op.op != Opcode::MatMul || op.stream == kNone) continue;
            const Tick complete = run.op_complete(k);
            const Tick drain = complete > op.end ? complete - op.end : 0;
            auto [it, fresh] = drain_.emplace(op.unit, drain);
            if (!fresh) it->second = std::min(it->second, drain);
        }
        // Each matrix unit's last weight push, in the order its stream issued them.
        for (const UnitOp& op : run.unit_ops)
            if (op.op == Opcode::MPush && op.stream != kNone) {
                auto [it, fresh] = last_push_.emplace(op.unit, std::make_pair(op.stream, std::uint64_t(op.index)));
                if (!fresh && op.index > it->second.second) it->second = {op.stream, op.index};
            }
        for (const auto& [unit, at] : last_push_) {
            if (bit_of_.size() == 64) break;  // more units than bits: the rest go without (a lower bound)
            bit_of_.emplace(unit, static_cast<int>(bit_of_.size()));
            unit_of_bit_.push_back(unit);
        }
    }
    void step(std::uint32_t s, std::uint64_t i, const Instruction& in, const Access* acc, int na, const Link& l) {
        Taint t;
        const auto& r = reg_[s];
        auto from_reg = [&](std::uint8_t x) {
            if (r[x]) t.add({r[x], after_[s][x]});
        };
        if (in.has(kSrc0)) from_reg(in.src[0]);
        if (in.has(kSrc1)) from_reg(in.src[1]);
        if (in.has(kSrc2)) from_reg(in.src[2]);
        for (int k = 0; k < na; ++k)
            if (!acc[k].write) t.add(mem_read(acc[k]));
        Chain chain{kNone, 0};
        if (in.op == Opcode::MatMul && l.unit != kNone) {
            auto w = weights_.find(l.unit);
            if (w != weights_.end() && w->second) {
                auto b = bit_of_.find(l.unit);
                if (b != bit_of_.end() && (w->second >> b->second & 1)) {  // on the last tile
                    streaming_[l.unit] += l.took;
                    // The accumulator's earlier writes on this tile stream before this one.
                    const Chain prev = in.has(kDst) ? chain_[s][in.dst] : Chain{kNone, 0};
                    chain = {l.unit, (prev.unit == l.unit ? prev.streamed : 0) + l.took};
                    auto d = drain_.find(l.unit);
                    t.add({w->second, chain.streamed + (d == drain_.end() ? 0 : d->second)});
                }
            }
        } else if (in.op == Opcode::MPush && l.unit != kNone) {
            auto lp = last_push_.find(l.unit);
            auto b = bit_of_.find(l.unit);
            weights_[l.unit] = lp != last_push_.end() && b != bit_of_.end() && lp->second == std::make_pair(s, i)
                                   ? std::uint64_t{1} << b->second
                                   : 0;
        } else if (t.bits) {
            count(t, in, acc, na, l);
        }
        if (in.has(kDst)) {
            reg_[s][in.dst] = t.bits;
            after_[s][in.dst] = t.after;  // 0 where it carries no bits (Taint::add)
            chain_[s][in.dst] = chain;
        }
        for (int k = 0; k < na; ++k)
            if (acc[k].write) mem_write(acc[k], t);
    }
    // Per tracked matrix unit: the streaming of its last tile's matmuls; per set of units, the
    // work that reads the results of exactly those units' last tiles.
    LastTiles result() const {
        LastTiles out;
        out.streaming = streaming_;
        out.unit_of_bit = unit_of_bit_;
        for (const auto& [key, w] : work_) out.work.push_back({key.first, key.second, w.time, w.after});
        return out;
    }

private:
    // A dependent instruction's work: its unit's occupancy (a vector unit, a matrix unit's pops:
    // each in order on its own path), a DMA's HBM bytes at the peak of the HBM they touch.
    // Summed per set of bits and per unit (or HBM): which sets a bound may group is settled once
    // every unit's earliest last tile is known (bounds.cpp). Past kMaxSets sets, new ones are left
    // out (less work counted: the bound only lower).
    // A DMA counts only the bytes it reads that carry bits (a write-back cut into pieces can move
    // the others earlier), at the peak of each HBM it reads them from or writes them to.
    // The work summed per set (bits, unit or HBM) starts no sooner than the least `after` of its parts.
    void count(const Taint& t, const Instruction& in, const Access* acc, int na, const Link& l) {
        auto add = [&](const Taint& x, std::uint64_t where, Tick time) {
            auto it = work_.find({x.bits, where});
            if (it != work_.end()) {
                it->second.time += time;
                it->second.after = std::min(it->second.after, x.after);
            } else if (work_.size() < kMaxSets) {
                work_.emplace(std::make_pair(x.bits, where), Sum{time, x.after});
            }
        };
        if (in.op == Opcode::Dma) {
            for (int k = 0; k < na; ++k) {
                if (acc[k].write) continue;
                tainted_bytes(acc[k], [&](const Taint& x, std::uint64_t bytes) {
                    for (int j = 0; j < na; ++j)
                        if (acc[j].space == Space::Hbm) add(x, LastTiles::kHbm | acc[j].chip, links_.hbm_time(acc[j].chip, bytes));
                });
            }
        } else if (l.unit != kNone && l.took > 0) {
            add(t, l.unit | std::uint64_t{LastTiles::pipeline(in.op)} << 32, l.took);
        }
    }
    static constexpr std::size_t kMaxSets = 1 << 16;
    // Memory carries bits per granule, and a granule's bits say that every byte of it depends
    // on those tiles: a write covering it whole sets them, one covering part of it keeps only the
    // bits both the old and the new bytes carry (never a bit some byte lacks). 128-byte granules
    // in VMEM, where results are written a row piece at a time; 4 KiB in HBM.
    static std::uint64_t granule(const Access& a) { return a.space == Space::Vmem ? 128 : kPage; }
    Taint mem_read(const Access& a) const {
        auto m = mem_.find(memory_of(a));
        if (m == mem_.end()) return {};
        Taint t;
        const std::uint64_t g = granule(a);
        for (std::uint64_t p = a.lo / g; p <= (a.hi - 1) / g; ++p) {
            auto it = m->second.find(p);
            if (it != m->second.end()) t.add(it->second);
        }
        return t;
    }
    // A granule written in part keeps the bits both its old and new bytes carry and the lesser
    // `after` of the two.
    void mem_write(const Access& a, const Taint& t) {
        auto m = mem_.find(memory_of(a));
        if (!t.bits && m == mem_.end()) return;
        auto& gs = t.bits ? mem_[memory_of(a)] : m->second;
        const std::uint64_t g = granule(a);
        for (std::uint64_t p = a.lo / g; p <= (a.hi - 1) / g; ++p) {
            const bool whole = a.lo <= p * g && a.hi >= (p + 1) * g;
            auto it = gs.find(p);
            Taint now = t;
            if (!whole) {
                now.bits = it == gs.end() ? 0 : it->second.bits & t.bits;
                if (now.bits) now.after = std::min(t.after, it->second.after);
            }
            if (now.bits) gs[p] = now;
            else if (it != gs.end()) gs.erase(it);
        }
    }
    // The bytes of a read whose granules carry bits, summed per set of bits.
    template <class F>
    void tainted_bytes(const Access& a, F&& f) const {
        auto m = mem_.find(memory_of(a));
        if (m == mem_.end()) return;
        const std::uint64_t g = granule(a);
        for (std::uint64_t p = a.lo / g; p <= (a.hi - 1) / g; ++p) {
            auto it = m->second.find(p);
            if (it == m->second.end()) continue;
            f(static_cast<const Taint&>(it->second), std::min(a.hi, (p + 1) * g) - std::max(a.lo, p * g));
        }
    }
    const RunData& run_;
    const Links& links_;
    std::vector<std::array<std::uint64_t, kNumRegs>> reg_;  // per stream and register: its value's bits
    std::vector<std::array<Tick, kNumRegs>> after_;         // ... and its `after`
    std::vector<std::array<Chain, kNumRegs>> chain_;        // ... and, written by a last tile's matmul, that unit's chain
    std::unordered_map<std::uint64_t, std::unordered_map<std::uint64_t, Taint>> mem_;  // space -> granule -> taint
    std::unordered_map<std::uint32_t, std::uint64_t> weights_;  // matrix unit -> its current tile's bits
    std::map<std::uint32_t, std::pair<std::uint32_t, std::uint64_t>> last_push_;  // unit -> (stream, index)
    std::map<std::uint32_t, int> bit_of_;
    std::unordered_map<std::uint32_t, Tick> drain_;  // matrix unit -> its matmuls' least time from streamed to done
    std::vector<std::uint32_t> unit_of_bit_;
    std::map<std::uint32_t, Tick> streaming_;                  // unit -> its last tile's matmuls
    struct Sum {
        Tick time, after;
    };
    std::map<std::pair<std::uint64_t, std::uint64_t>, Sum> work_;  // (bits, unit or HBM of a chip) -> work
};

}  // namespace

ChainBound data_chain_bound(const Context& cx) {
    const RunData& run = cx.run;
    const Links links(cx);
    ChainBound best;
    PageTimes pages;  // the forward pass's, read again by the backward one (which pages were written)
    // Every instruction the run reached, in the order the run issued them (all streams): a read
    // then sees the write the run gave it (a buffer reused later is written after its readers
    // issued, since waits ordered them), whichever stream or chip wrote it. Ties go to the lower
    // stream, then to program order.
    {
        IssueOrder order(run, false);
        std::vector<std::array<Tick, kNumRegs>> reg(run.streams.size());
        std::vector<Tick> end(run.streams.size(), 0);
        std::unordered_map<std::uint32_t, Tick> weights;  // matrix unit -> its last push's chain time
        LastTileTaint last_tile(run, links);
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
            const Link l = links.of(at.s, at.i, in, acc, na);
            if (in.op == Opcode::MatMul && l.unit != kNone) {
                auto w = weights.find(l.unit);
                if (w != weights.end()) start = std::max(start, w->second);
                auto h = best.first_matmul.emplace(l.unit, start).first;
                h->second = std::min(h->second, start);
            }
            if (in.op == Opcode::MPush && l.unit != kNone) weights[l.unit] = start + l.took;
            const Tick done = start + l.took;
            if (in.has(kDst)) r[in.dst] = done;
            for (int k = 0; k < na; ++k)
                if (acc[k].write) pages.write(acc[k], done);
            end[at.s] = std::max(end[at.s], done);
            last_tile.step(at.s, at.i, in, acc, na, l);
        }
        best.last_tiles = last_tile.result();
        for (std::uint32_t s = 0; s < run.streams.size(); ++s)
            if (end[s] > best.time) {
                best.time = end[s];
                best.where = run.streams[s].label();
            }
    }
    // The same links backwards: the chain each matmul still heads once it has streamed.
    {
        IssueOrder order(run, true);
        Tails tails(run.streams.size(), pages);
        for (IssueOrder::At at; order.next(at);) {
            const Stream& st = run.streams[at.s];
            const Instruction& in = st.code[at.i];
            Access acc[2];
            const int na = accesses(in, st, acc);
            const Link l = links.of(at.s, at.i, in, acc, na);
            const Tick tail = tails.writer(at.s, in, acc, na, l);
            if (in.op == Opcode::MatMul && l.unit != kNone) {
                auto t = best.after_last_matmul.emplace(l.unit, tail).first;
                t->second = std::min(t->second, tail);
            }
            tails.reader(at.s, in, acc, na, l, tail);
        }
    }
    return best;
}

}  // namespace xpu::analysis
