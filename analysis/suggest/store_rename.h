// double_buffer_store's plan: more than one write-back staging buffer.
//
// A matmul's epilogue stores its results into a staging buffer in VMEM and writes them back to
// HBM with DMAs on a flag of their own; before the next block's stores reuse the buffer, the
// core waits on that flag for every write-back issued so far, so each block's epilogue waits
// for the previous block's write-back (on a decode's attention, the QK^T phase: one small
// write-back per block, queued in the HBM behind the KV-cache loads). This plan gives the
// buffer kStoreCopies copies, so that a block's stores wait only for the write-back of the block
// kStoreCopies back, which has had that many blocks' time to land:
//  - candidates: a flag of a chip with one stream and one VMEM, counted the plain way
//    (FlagCounting: monotone, one stream, each wait `ge` every DMA issued on it so far), that
//    only waits and this stream's local VMEM -> HBM DMAs (write-backs) name, at least one of
//    its waits stalled;
//  - generations: the flag's waits cut the program into generations (what lies between two
//    consecutive waits); those with write-backs are numbered in program order, and generation g
//    takes slot g mod kStoreCopies (a generation without write-backs, the slot of the next one);
//  - its buffers: the write-backs' sources, merged into ranges. A range is renamed when every
//    access to it lies inside it and every read of it (a vld, a DMA's source) reads bytes
//    written before in its own generation (so no data crosses from one copy to another; no
//    other chip writes it). Then each generation's accesses to it move to its slot's copy
//    (slot 0: the range itself; the others in VMEM above the highest address the chip's
//    instructions touch, within its capacity). A range that is not renamed stays where it is:
//    the waits below then keep its order;
//  - its flags: each slot's write-backs raise a flag of their own (slot 0: the flag; the others
//    flags the chip never names), counted the plain way;
//  - which waits change: those whose generation writes a staging buffer (the reuse the wait is
//    for); a wait whose generation writes none waits for another reason (a reader of the
//    results, or a false dependence: drop_wait's) and keeps waiting for every write-back;
//  - its waits (the legality rule): each wait of the flag, at the start of generation g, waits
//    on slot(g)'s flag for every write-back issued on it so far (the copy g's stores are about to
//    overwrite is free: its last reader was on that flag); every other slot's write-backs not
//    yet waited for may stay in flight past it only if nothing before the next wait of the flag
//    conflicts with them (touches their VMEM copy with a write, or their HBM destination at
//    all, dependencies.h: conflict), nothing there is a sset, sadd, barrier or halt or a DMA to
//    or raising a flag of another chip, and there is a next wait; else the wait is followed by a
//    wait on their flag for every write-back issued on it so far. So every write-back is waited
//    for before anything that depends on it, and the last wait waits for all of them, as before.
// On top of a base plan (prefetch_ahead's, plan_store_renames' `base`): the same, on the program
// the base patches (its loads moved up, their buffers and flags its own): generations, data flow
// and conflicts are read in that order, so the rule holds for the two changes together.
// The estimate, per stalled wait: it now waits only for the write-backs it still covers, so it
// issues at the latest of their completions in this run (never before it was ready); the
// saving is the time it no longer stalls, at most the HBM's idle time over that span (during a
// span the HBM is busy the phase it serves cannot run faster). Per stream their sum; the
// suggestion saves the largest stream's (and cap_estimates caps it at the run's headroom).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct SuggestContext;

// Write-back buffers per staging buffer: the buffer and two copies, so that a block's stores
// wait for the write-back of the block three back instead of the one before. Alone, on the
// 2-layer batch-8 llama2-7b decode, two, three and four copies measured the same (31.195 us: the
// write-back of the block before the previous one has always landed); three, as double_buffer
// has, leave slack for when prefetch_ahead's loads fill the HBM's queues ahead of the write-backs.
inline constexpr unsigned kStoreCopies = 3;

struct StoreRenamePlan {
    std::uint16_t flag = 0;                    // the write-back flag (its id)
    Suggestion s;                              // edits (kind, texts: the finder)
    std::map<std::uint32_t, Tick> saving_on;   // per stream
    std::set<std::string> wait_ops, dma_ops;   // annotations of the stalled waits served, of the write-backs
    std::uint64_t waits = 0;                   // stalled waits that now wait for less
    std::uint64_t full_waits = 0;              // waits that still wait for every write-back (a conflict or the last)
    std::uint64_t buffers = 0, buffer_bytes = 0;  // staging buffers renamed, their bytes (one copy each)
    std::uint64_t generations = 0;             // generations with write-backs
    std::uint64_t vmem_bytes = 0;              // the VMEM its copies take on a chip (aligned; the most of its streams')
};

// One plan per write-back flag (by its id; the streams of all chips that use that flag id are
// one plan, each stream planned on its own), only those whose waits now wait for less. With a
// `base` suggestion, each plan is made on the program the base patches (its moves and edits
// are part of the plan: its rules are checked on the base's order), with VMEM above the base's
// flags the base does not name, and the copies in the top `reserve` bytes of each chip's VMEM
// (which the base was planned to leave free); a stream whose write-backs or waits of the flag
// the base touches has no plan.
// `only_flag` (>= 0): that write-back flag's plan alone (the others are not planned: each is a pass
// over the stream).
std::vector<StoreRenamePlan> plan_store_renames(const SuggestContext& sc, const Suggestion* base = nullptr, std::uint64_t reserve = 0,
                                                int only_flag = -1);

}  // namespace xpu::analysis
