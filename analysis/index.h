// Lookups over a RunData that every part of the analysis needs: which unit op and which DMA
// record belong to an instruction, the flag changes of each flag in time order, the flags unit
// of each chip, and why a sync wait ended (the raise that satisfied it).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/run_data.h"

namespace xpu::analysis {

class RunIndex {
public:
    explicit RunIndex(const RunData& run);

    const RunData& run() const { return run_; }
    std::uint32_t op_of(std::uint32_t stream, std::uint64_t index) const { return op_of_[stream][index]; }
    std::uint32_t dma_of(std::uint32_t stream, std::uint64_t index) const { return dma_of_[stream][index]; }
    std::uint32_t flags_unit(int chip) const;  // the SyncFlags of a chip, kNone if none
    Tick issue_slot(std::uint32_t stream) const { return slot_[stream]; }

    // The flag change that let the sync instruction `index` of `stream` (a swait) issue: the
    // last change of its flag at or before its issue whose new value satisfies the condition.
    // kNone if there is none (the condition held from the start).
    std::uint32_t satisfying_raise(std::uint32_t stream, std::uint64_t index) const;
    // Flag changes of (chip's flags unit, flag), in time order (indices into run.flags).
    const std::vector<std::uint32_t>& changes(int chip, std::uint16_t flag) const;

    // Where a DMA's data goes: the cause a wait on it is charged to (Hbm, Link, Vmem).
    bool dma_remote(const Instruction& in, std::uint16_t chip) const {
        return in.mem_dst.chip != kLocalChip && in.mem_dst.chip != chip;
    }
    // A DMA between the chip's own memories: its source and destination both on `chip`.
    bool dma_local(const Instruction& in, std::uint16_t chip) const {
        auto own = [&](const MemRef& m) { return m.chip == kLocalChip || m.chip == chip; };
        return own(in.mem_src) && own(in.mem_dst);
    }

private:
    const RunData& run_;
    std::vector<std::vector<std::uint32_t>> op_of_, dma_of_;
    std::vector<Tick> slot_;
    std::unordered_map<int, std::uint32_t> flags_of_chip_;
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> changes_;  // (owner << 16 | flag)
    std::vector<std::uint32_t> none_;
};

}  // namespace xpu::analysis
