// The dependency rules every trace transformation of the analysis obeys (hoisting a DMA,
// sinking a wait, list-scheduling a window), so that a patched trace computes what the
// original did.
//
// Dependencies. An instruction's memory accesses are its byte ranges (space, chip, range, read
// or write): vld reads VMEM, vst writes it, a DMA reads its source and writes its destination
// (asynchronously: until a swait covers its completion flag). A swait "covers" the flag raises
// that happened, in this run, after the previous swait on its flag in the same stream and up
// to its own issue; it stands for those raisers' accesses completing. Two accesses conflict if
// they overlap and one writes.
//  - Hoisting a DMA (moving it up): it may pass an instruction unless they conflict, or the
//    instruction is a swait on the flag the DMA raises, or covers a raiser that conflicts with
//    the DMA (its data is not there yet / its buffer not yet free), or is a sset/sadd/barrier.
//  - Sinking a swait (moving it down): it may pass anything that does not touch what its
//    raisers wrote or read, is not a DMA raising its flag, nor a sset/sadd/barrier/halt; when it
//    reaches a later swait on its flag that waits for at least as much, it is redundant and
//    is dropped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/context.h"

namespace xpu::analysis {

inline constexpr std::uint64_t kScan = 50000;  // instructions looked at per move

struct Access {
    Space space = Space::Vmem;
    std::uint16_t chip = 0;
    std::uint16_t vmem = 0;  // Space::Vmem: which VMEM of the chip (Stream::vmem of the issuer); else 0
    std::uint64_t lo = 0, hi = 0;
    bool write = false;
};

// The memory accesses of an instruction of stream `st` (at most two: a DMA's source and
// destination). A vmem operand is in the issuing core's VMEM (vmem@C: that core's on chip C).
int accesses(const Instruction& in, const Stream& st, Access out[2]);
bool conflict(const Access* a, int na, const Access* b, int nb);
// Instructions nothing may move across (sset, sadd, barrier, halt).
bool is_barrier_like(Opcode op);

// A DMA's flag increment (its val, 1 by default), and the chip whose flag it raises (its
// destination's; a sync instruction's flag is on its own chip).
inline std::int64_t flag_increment(const Instruction& in) { return in.has(kValue) ? in.value : 1; }
inline std::uint16_t flag_chip(const Instruction& in, std::uint16_t chip) {
    return in.op == Opcode::Dma && in.mem_dst.chip != kLocalChip ? in.mem_dst.chip : chip;
}

// How a flag is counted over the whole program, from every instruction that touches it. What
// the transformations that change how many raises there are (merge_dma, split_dma) or which
// flag a raise uses (double_buffer) need to know to keep every wait's meaning.
struct FlagCounting {
    // Only DMAs adding positive values raise it and only ge/gt swaits wait on it (no sset,
    // sadd): a wait satisfied by a value is satisfied by every larger one.
    bool monotone = true;
    // One stream alone raises it (with DMAs of its own chip) and waits on it.
    bool one_stream = true;
    // Every swait on it is `ge` the sum of the increments of the DMAs issued on it before, in
    // program order: it waits for all of them.
    bool waits_for_all = true;
};

struct Raiser {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    std::uint32_t dma = kNone;  // its DMA record, if a DMA
};

class Planner {
public:
    explicit Planner(const Context& cx);
    // Where stream s has a swait, sset, sadd, barrier, halt or DMA, in program order (the
    // instructions that open, close or extend a run of DMAs).
    const std::vector<std::uint64_t>& sync_and_dma(std::uint32_t s) const { return sync_and_dma_[s]; }
    // How flag `flag` of chip `chip` is counted (a flag nothing touches: all true).
    const FlagCounting& flag_counting(std::uint16_t chip, std::uint16_t flag) const;
    // The raises a swait covers (empty for anything else).
    const std::vector<Raiser>& covered(std::uint32_t s, std::uint64_t i) const;
    // Accesses of a raiser, in its own chip's terms; false if it is not a DMA (then a wait on
    // it orders everything: we do not know what the raiser's stream wrote before raising).
    // Instructions of one stream rewritten by a transformation (index -> new instruction). An
    // edit keeps the instruction's opcode and rewrites only operands, flags and counts, and only
    // of instructions may_be_edited admits: the scans look an index up only where the original
    // may have been edited. Looked up once per instruction a hoist scans: a few edits are
    // compared in a row, many are found through a table by index (a hash lookup per
    // instruction scanned was a tenth of a decode's analysis, with its ~390 k edits).
    class Edited {
    public:
        const Instruction* find(std::uint64_t j) const {
            if (!slot_.empty()) return j < slot_.size() && slot_[j] ? &in_[slot_[j] - 1] : nullptr;
            for (std::size_t x = 0; x < index_.size(); ++x)
                if (index_[x] == j) return &in_[x];
            return nullptr;
        }
        void set(std::uint64_t j, const Instruction& in);
        bool empty() const { return index_.empty(); }
        std::size_t size() const { return index_.size(); }
        const std::vector<std::uint64_t>& indices() const { return index_; }  // in the order first set
        const Instruction& at(std::uint64_t j) const;

    private:
        static constexpr std::size_t kDense = 32;  // from this many edits on, the table
        std::vector<std::uint64_t> index_;
        std::vector<Instruction> in_;
        std::vector<std::uint32_t> slot_;  // per index, 1 + its position in in_ (0: not edited); empty below kDense
    };
    static bool may_be_edited(Opcode op) { return op == Opcode::VLoad || op == Opcode::VStore || op == Opcode::Dma || op == Opcode::SWait; }
    bool raiser_accesses(const Raiser& r, Access out[2], int& n, const Edited* edited = nullptr, std::uint32_t edited_stream = 0) const;
    // Does swait `w` (stream s) order something with these accesses? (With `edited`: in stream
    // s's program with those instructions rewritten.)
    bool wait_blocks(std::uint32_t s, std::uint64_t w, const Access* acc, int na, const Edited* edited = nullptr) const;
    // The earliest position the DMA at `k` can move up to (k itself: it cannot move).
    std::uint64_t hoist_point(std::uint32_t s, std::uint64_t k);
    // The same in stream s's program with `edited` instructions rewritten (not cached).
    std::uint64_t hoist_point(std::uint32_t s, std::uint64_t k, const Edited& edited) const;
    // Sinking swait `k`: the instruction it must stay before, and whether it reached a later
    // wait that makes it redundant.
    std::pair<std::uint64_t, bool> sink_point(std::uint32_t s, std::uint64_t k) const;

private:
    void index_waits(std::uint32_t s);
    std::uint64_t scan_up(std::uint32_t s, std::uint64_t k, const Edited* edited) const;

    const Context& cx_;
    const RunData& run_;
    std::vector<std::vector<Raiser>> covered_;
    std::vector<std::vector<std::uint64_t>> sync_and_dma_;
    std::unordered_map<std::uint32_t, FlagCounting> counting_;  // (chip << 16 | flag), from sync_and_dma_
    FlagCounting untouched_;
    std::vector<std::unordered_map<std::uint64_t, std::size_t>> covered_at_;
    std::unordered_map<std::uint64_t, std::uint64_t> hoist_cache_;
    std::vector<Raiser> none_;
};

// When the raises wait w covers have all landed: as the run had them (`latest`), and with each
// DMA raiser landing at landed(raiser, its DMA record) instead (`latest_new`; the run's
// completion where nothing changes). A raiser that is not a DMA counts as the wait's own issue
// (what a change of DMAs cannot move). What split_dma and pipeline_store gain at a wait.
struct WaitLanding {
    Tick latest = 0, latest_new = 0;
};
template <class Landed>
WaitLanding wait_landing(const Planner& plan, const RunData& run, const WaitStall& w, Landed&& landed) {
    WaitLanding l;
    for (const Raiser& r : plan.covered(w.stream, w.index)) {
        if (r.dma == kNone) {
            l.latest = l.latest_new = std::max(l.latest, run.streams[w.stream].life[w.index].issue);
            continue;
        }
        const Dma& d = run.dmas[r.dma];
        l.latest = std::max(l.latest, d.complete);
        l.latest_new = std::max(l.latest_new, static_cast<Tick>(landed(r, d)));
    }
    return l;
}

}  // namespace xpu::analysis
