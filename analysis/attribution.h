// Stall attribution on the cores: for instruction i of a stream, the time between the end of
// its predecessor's issue slot (t0: the moment it could have issued, in order) and its issue,
// split into pieces by cause:
//   [t0, arrival]            instruction supply (fetch, issue-queue room)
//   [arrival, ready]         data dependency (register scoreboard: the producer is named)
//   [ready, issue]           a swait: the raise that satisfied it decides -
//                              raiser not yet issued          sync-flag wait (another stream)
//                              raiser DMA queued in its engine unit busy (DMA engine)
//                              raiser DMA transferring         HBM / inter-chip link / VMEM
//                            a barrier: sync-flag wait; anything else: unit busy (queue full)
// Then [issue, issue + slot] is the core busy issuing it. These pieces tile the core's time.
#pragma once

#include <cstdint>

#include "analysis/analysis.h"
#include "analysis/index.h"

namespace xpu::analysis {

struct Piece {
    Tick begin = 0, end = 0;
    Cause cause = Cause::Idle;
};

struct StallSplit {
    Piece pieces[6];
    int n = 0;
    std::uint32_t raise = kNone;       // the flag change that ended a swait
    std::uint32_t raiser_dma = kNone;  // its DMA record, if a DMA raised it
    Tick total() const;
};

// t0: the end of the predecessor's issue slot (0 for the first instruction).
StallSplit split_stall(const RunIndex& ix, std::uint32_t stream, std::uint64_t index, Tick t0);
// The moment instruction `index` could have issued: its predecessor's issue + issue slot,
// never past its own issue.
Tick could_issue(const RunIndex& ix, std::uint32_t stream, std::uint64_t index);
// The cause a wait on this DMA's transfer is charged to.
Cause transfer_cause(const RunIndex& ix, const Dma& d);
// The register producer of `index` whose completion set its ready time (kNone64 if none).
inline constexpr std::uint64_t kNoInstr = ~std::uint64_t{0};
std::uint64_t producer_of(const RunData& run, std::uint32_t stream, std::uint64_t index);

}  // namespace xpu::analysis
