// Collectives as TPU-class chips run them: not opcodes, but remote DMAs into a neighbour's
// memory, each raising a flag on the receiving chip, and waits on the local flags. Reductions
// are reducing DMAs (dst += src, a read-modify-write at the destination memory).
//   ring:        N-1 steps around chips 0 -> 1 -> ... -> N-1 -> 0, shards of bytes/N;
//   bidir-ring:  the data split in halves, one ring in each direction;
//   torus2d XxY, torus3d XxYxZ: the ring algorithm along X (rows of the torus), then along Y
//                (on the block the X phase left), then Z; an all-gather in the reverse order;
//   bidir-torus2d, bidir-torus3d: the same on each half of the data, one half going + around
//                every ring, the other - (both directions of every link busy at once);
//   direct:      every chip exchanges with every other chip at once, routed by the interconnect
//                (a reduce-scatter: each chip's contribution to shard i straight to chip i; an
//                all-gather: shard i from chip i straight to every chip): two rounds of the
//                farthest chip's latency, for tensors small enough that a ring's steps are latency.
// Data is split into `chunks` pieces per shard so that steps pipeline (a piece moves on as
// soon as it has arrived); --serial-collective (planted) finishes every step, all pieces,
// before the next one starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/gen/lowering.h"
#include "traces/trace_writer.h"

namespace xpu::gen {

struct RingInfo {
    unsigned chips = 1;
    bool direct = false;  // all-reduces as the direct lowering (--algo direct) instead of a ring
};

// All-reduce of `bytes` at `buf` (HBM, same address on every chip) over a ring of every chip:
// a reduce-scatter by reducing DMAs (dst += src at the receiver), then an all-gather; with
// ring.direct, the direct lowering (every chip with every other at once) instead.
void emit_all_reduce(Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes,
                     const std::string& op);

// All-gather of `bytes` at `buf` (HBM, same address on every chip) over a ring of every chip,
// each chip holding one shard of bytes / chips (a multiple of chips x element size is used).
void emit_all_gather(Lowering& lo, const RingInfo& ring, unsigned chip, std::uint64_t buf, std::uint64_t bytes,
                     const std::string& op);

struct CollectiveParams {
    std::string op = "all-gather";  // all-gather | reduce-scatter | all-reduce
    std::string algo = "ring";      // ring | bidir-ring | torus2d | torus3d | bidir-torus2d | bidir-torus3d | direct
    unsigned chips = 4;
    unsigned dims_x = 0, dims_y = 0, dims_z = 0;  // torus: X, Y (and Z for the 3D ones)
    std::uint64_t bytes = 1 << 20;    // per chip: the full (gathered / reduced) tensor
    unsigned chunks = 1;
    bool serial = false;              // planted: steps do not overlap
    TileConfig tiles;
    std::vector<unsigned> torus_dims() const;  // {X, Y} or {X, Y, Z}
    void set_torus_dims(const std::vector<unsigned>& d);  // {X, Y} or {X, Y, Z}; {}: none
};

struct CollectiveSummary {
    std::uint64_t instructions = 0, remote_bytes = 0;
};

// One stream per chip (chip c, core 0).
CollectiveSummary emit_collective(trace::TraceWriter& w, const CollectiveParams& p);

}  // namespace xpu::gen
