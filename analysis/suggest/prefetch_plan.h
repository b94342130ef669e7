// prefetch_ahead's plan: load data earlier, into VMEM nothing uses, in the time the HBM idles.
//
// hoist_dma moves a late DMA as far up as its buffer allows; the buffer is the previous step's
// (or the previous op's), so a prefetch can go at most a step or two ahead, and where the HBM
// idles for longer (a vector pass between two matmul ops, a matmul phase whose steps each cost
// a DMA latency) nothing fills it. This plan gives each late load a buffer of its own and moves
// it to where the HBM had the idle time to move its bytes before they were needed:
//  - candidates: the local HBM -> VMEM DMAs that a stalled wait of their stream waits for (the
//    first wait covering them), on a chip with one stream and one VMEM, whose flag is counted
//    the plain way (FlagCounting: monotone, one stream, each wait waits for all DMAs so far);
//  - placement (an HBM occupancy model): in program order, the HBM as one server at its peak
//    taking the loads in turn on a clock of its idle time (the run's own traffic, HbmLoad, plus
//    the candidates' own transfers, which they give up when they move); a load that stays is
//    served after the claims before it, one that moves claims the first time after them from
//    the highest place it may go, as much as its bytes take at the peak, and is issued where
//    the core was when that claim began (a load placed before an instruction issues right
//    after the one above it: placed before a wait, while the core waits there, such as a
//    collective's step, not when the wait is satisfied, which is the wait's issue in the log;
//    while the core waits for another chip, every load whose claim begins then goes to that
//    wait, StreamPlan::placed_for). Claims never overlap, so the moved loads fill idle
//    bandwidth instead of contending with the traffic that was there, and they keep the order
//    in which they are needed. A load that can go only a little higher (a wait or a write it
//    must stay below) would leave the HBM's idle time between the last claim and its own to no
//    one: unless its move saves more than that idle time, it is placed after all the others,
//    in the first time they left unclaimed from its highest place on, and the loads after it
//    in program order, which may go higher, take that idle time first (the next op's tiles
//    under this op's compute);
//  - legality (the rules of dependencies.h, for a DMA whose destination is renamed): it does
//    not pass a sset, sadd, barrier or halt, a DMA writing what it reads, or a wait covering
//    a raiser that writes what it reads (its source must be there); its destination is a new
//    buffer, so the readers of the old contents no longer stop it;
//  - its buffer: a range of the VMEM no instruction of the chip touches (BufferRenamer::room:
//    the largest such range, usually above the highest address used), live from its new place to the last reader of its data (the instructions reading inside
//    its destination up to the next DMA or store overwriting all of it; none may straddle it,
//    and that overwrite must come within kScan instructions), first fit among the ranges live
//    at the same time; no room: the DMA stays;
//  - its completion: on a flag the chip never uses (the loads' waits take such flags in turn,
//    as few as the deepest load needs, at most kMaxFlags); the first wait that covered it keeps its
//    flag with its count less the moved DMAs' increments issued before it (every wait on that
//    flag is recounted alike), and is followed by a wait on the new flag for every moved DMA
//    issued before it (the new flag is counted the plain way: the same completions are waited
//    for before the same reads).
// The estimate: per stalled wait, how much earlier its latest DMA completes (claimed end plus
// the DMA's fixed latency, never before its new issue plus its shortest time); per stream their
// sum, at most the moved bytes at the HBM's peak (the time the HBM's idle bandwidth absorbs).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct SuggestContext;

struct PrefetchPlan {
    Suggestion s;                              // moves and edits (kind, texts: the finder)
    std::map<std::uint32_t, Tick> saving_on;   // per stream: the suggestion saves the largest
    std::set<std::string> wait_ops, dma_ops;   // annotations of the waits served and the DMAs moved
    std::uint64_t waits = 0, dmas = 0, bytes = 0;
    std::uint64_t peak_vmem = 0;               // the highest its buffers reach above the chip's used VMEM (bytes, most of any chip)
};

// `reserve`: bytes at the top of each chip's VMEM it leaves alone (double_buffer_store's copies,
// when it plans on top of this plan).
PrefetchPlan plan_prefetch_ahead(const SuggestContext& sc, std::uint64_t reserve = 0);

// The plan with nothing reserved, made on the first call and kept in `sc` (its finders share it).
const PrefetchPlan& prefetch_ahead_plan(const SuggestContext& sc);

// The plan leaving `reserve` bytes: a copy of the one above where its buffers end below every
// chip's capacity less `reserve` (first fit never reached the reserved bytes, so it places every
// buffer alike and gives up on the same loads), else planned again.
PrefetchPlan prefetch_ahead_plan(const SuggestContext& sc, std::uint64_t reserve);

}  // namespace xpu::analysis
