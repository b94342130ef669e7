// What the transaction log's writer (platform/txlog_writer.cpp) and reader
// (analysis/run_data.cpp) both remember while they go through the records of a log (format in
// txlog_format.h): the state the version-3 deltas are taken against. One definition serves both,
// so that the writer's predictions are the reader's.
#pragma once

#include <cstdint>

#include "traces/instruction.h"

namespace xpu::txlog {

// Per (chip, core) stream: the index and the time of its last Instr, InstrOp, UnitOp or Dma
// record (index-Δ and time-Δ fields are taken against them).
struct StreamState {
    std::uint64_t index = 0;
    Tick time = 0;
};

// The time of the last memory transaction and flag change in the log (any target, any flag).
struct GlobalState {
    Tick mem_arrival = 0, mem_done = 0;
    Tick flag_time = 0;
    Tick piece_start = 0;
};

// A chunk slot: what the next chunk of a DMA on one target inherits (everything but its times),
// and how its arrival is predicted. Chunks of a DMA arrive at a steady stride (the engine
// issues them at its rate), or a fixed time after the previous transaction in the log ends (a
// write into VMEM after the HBM read that fetched its data): each slot predicts by the rule
// that was nearer for its previous chunk.
struct ChunkSlot {
    std::uint64_t target = 0, initiator = 0;  // name ids
    bool write = false, known = false;
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0;
    std::uint64_t addr = 0, bytes = 0;  // of the last chunk: the next starts at addr + bytes
    Tick arrival = 0, latency = 0;      // of the last chunk (latency: done - arrival)
    std::int64_t stride = 0, link = 0;  // last arrival - the one before; - the log's last done
    bool by_link = false;

    Tick predict(Tick last_done) const {
        return static_cast<Tick>(by_link ? static_cast<std::int64_t>(last_done) + link : static_cast<std::int64_t>(arrival) + stride);
    }
    // A chunk opened the slot (or reopened it): nothing to predict from yet but its times.
    void open(Tick arr, Tick done, Tick last_done) {
        stride = 0;
        link = static_cast<std::int64_t>(arr - last_done);
        by_link = false;
        arrival = arr;
        latency = done - arr;
    }
    // The next chunk: `last_done` as before it (the previous transaction's end).
    void next(Tick arr, Tick done, Tick last_done) {
        const std::int64_t a = static_cast<std::int64_t>(arr);
        const std::int64_t by_stride = static_cast<std::int64_t>(arrival) + stride, by_link_pred = static_cast<std::int64_t>(last_done) + link;
        const std::uint64_t e_stride = a > by_stride ? a - by_stride : by_stride - a, e_link = a > by_link_pred ? a - by_link_pred : by_link_pred - a;
        by_link = e_link < e_stride;
        stride = a - static_cast<std::int64_t>(arrival);
        link = a - static_cast<std::int64_t>(last_done);
        arrival = arr;
        latency = done - arr;
        addr += bytes;
    }
};

}  // namespace xpu::txlog
