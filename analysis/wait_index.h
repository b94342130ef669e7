// Which swaits of a window order an instruction, found through an index rather than by asking
// every earlier wait (Planner::wait_blocks) for every instruction of the window: that scan cost
// instructions x waits x raisers per window and was half the analysis of a decode (issue 14).
//
// A swait orders an instruction with memory accesses if one of the raisers it covers is not a
// DMA (we do not know what that raiser's stream touched: "opaque"), or a DMA raiser's access
// conflicts with one of the instruction's (overlap, one of them a write): dependencies.h. The
// index holds every access of every DMA raiser of the window's waits, grouped by memory (space,
// chip, VMEM) and by read/write, sorted by start, with the largest end over each node of a
// segment tree: the raiser accesses that overlap [lo, hi) are found in O(log n + hits).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/dependencies.h"

namespace xpu::analysis {

class WaitBlockIndex {
public:
    // The swaits of stream s at positions `waits` (relative to `begin`, ascending) of a window.
    WaitBlockIndex(const Planner& plan, std::uint32_t s, std::uint64_t begin, const std::vector<std::uint32_t>& waits);

    // Appends to `out` the positions of the waits before `before` that order an instruction with
    // accesses acc[0, na) (exactly those for which plan.wait_blocks(s, begin + w, acc, na) holds),
    // each possibly more than once and in no particular order.
    void blocking(const Access* acc, int na, std::uint32_t before, std::vector<std::uint32_t>& out) const;

private:
    struct Entry {
        std::uint64_t lo, hi;
        std::uint32_t wait;
    };
    // The raiser accesses of one memory, all reads or all writes: sorted by lo; max_hi_ is a
    // segment tree over them (node 1 the root, leaves from `leaves`).
    struct Group {
        std::vector<Entry> entries;
        std::vector<std::uint64_t> max_hi;
        std::size_t leaves = 0;
        void build();
        void overlapping(std::uint64_t lo, std::uint64_t hi, std::uint32_t before, std::vector<std::uint32_t>& out) const;
    };
    static std::uint64_t key(const Access& a, bool write);

    std::unordered_map<std::uint64_t, Group> groups_;
    std::vector<std::uint32_t> opaque_;  // waits with a raiser that is not a DMA, ascending
};

}  // namespace xpu::analysis
