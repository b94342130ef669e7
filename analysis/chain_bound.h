// The data-dependency chain bound: the longest chain of true data dependencies of a stream, each
// link taking the least time its instruction can take, whatever else runs.
//
// Links: a register read after the write that produced it (the producer's completion); a read of
// memory (VMEM or HBM, per chip) after the DMA or store that wrote it; a matmul after the last
// weight push on its matrix unit. Least times: a DMA that touches HBM moves its bytes at no more
// than the HBM's peak of its chip (at least bytes / peak, its own transfer alone; split_dma's
// pieces share that HBM, so together no less), but a write-back out of VMEM nothing (pipeline_store
// issues its pieces as their bytes are written, the last one possibly small), another DMA
// nothing; a unit instruction its pipeline occupancy in the run (shape over the unit's rate, not
// queueing); everything else nothing. Waits, anti-dependencies and buffer reuse are left out:
// suggestions may drop a wait, rename a buffer or move instructions, but keep every true data
// dependency (their legality rules, dependencies.h), so no suggestion can make a stream end
// before this chain does. Streams are followed in program order one after another; data another
// stream produces counts only once that stream has been followed (a later one contributes
// nothing), which can only lower the bound.
//
// The same links give each matrix unit's span (bounds.h, add_span_bound): no matmul of a unit
// can start before the earliest chain time of any of them (its operands loaded, its weights
// pushed), and after whichever streams last at least the shortest chain any of them heads
// still runs (its epilogue, say). Followed backwards in the exact reverse of the forward order,
// a writer's tail is the longest of its readers' links plus their tails.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "traces/instruction.h"

namespace xpu::analysis {

// Each matrix unit's last weight tile: its matmuls stream after every other matmul of the unit
// (one in-order path, and a tile's matmuls follow its push, which follows the previous tile's
// matmuls: legality keeps both), so they start no sooner than the first matmul could plus the
// streaming of all the others. What reads their results cannot start before that either: a
// unit's occupancy for that work (a vector unit's, the pops'), or the bytes it moves through an
// HBM at that HBM's peak, follows the earliest start of the tiles it reads, and the streaming of
// the tile's matmuls that wrote the accumulator it reads (each write of an accumulator follows the
// one before on the unit's in-order path).
struct LastTiles {
    static constexpr std::uint64_t kHbm = std::uint64_t{1} << 40;  // `where` of an HBM: kHbm | chip
    // A unit's pipelines run side by side (models/vector_unit.h: elementwise, transcendental,
    // reduce/permute, load/store; a matrix unit's pops have a path of their own): work is
    // summed per pipeline, each in order.
    static unsigned pipeline(Opcode op) {
        switch (op) {
            case Opcode::VTrans: return 1;
            case Opcode::VReduce:
            case Opcode::VPermute: return 2;
            case Opcode::VLoad:
            case Opcode::VStore: return 3;
            default: return 0;
        }
    }
    static const char* pipeline_name(unsigned p) {  // p: pipeline()
        static const char* const names[] = {"elementwise", "transcendental", "reduce/permute", "load/store"};
        return p < 4 ? names[p] : "?";
    }
    struct Work {
        std::uint64_t bits;   // the tiles it reads: bit b = unit_of_bit[b]'s last tile
        std::uint64_t where;  // the unit (into RunData::units) | pipeline() << 32, or kHbm | chip
        Tick time;            // occupancy, or bytes at the HBM's peak
        Tick after;           // none of it starts sooner than this after the earliest start of its tiles
    };
    std::map<std::uint32_t, Tick> streaming;  // matrix unit -> its last tile's matmuls' streaming
    std::vector<std::uint32_t> unit_of_bit;   // at most 64 units tracked (the rest: no bound)
    std::vector<Work> work;
};

struct ChainBound {
    Tick time = 0;
    std::string where;  // the stream whose chain is longest: "chip0.core0"
    // Per matrix unit (into RunData::units) with matmuls: the least chain time at which any of
    // them can start, and the least chain that follows any of them.
    std::map<std::uint32_t, Tick> first_matmul, after_last_matmul;
    LastTiles last_tiles;
};

ChainBound data_chain_bound(const Context& cx);

}  // namespace xpu::analysis
