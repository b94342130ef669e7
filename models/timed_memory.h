// The memory path of a DMA without a TLM transaction per chunk.
//
// A DMA engine moves a descriptor as a stream of chunks, each a read and a write through the
// Interconnect. As TLM-2.0 transactions every chunk pays two socket hops, sc_time conversions at
// each of them and the payload's extension lookups: on a DMA-heavy trace that was most of the
// simulator's time. Instead, once per descriptor, the engine asks the path for its timing the
// way TLM-2.0 asks for a direct memory pointer: get_direct_mem_ptr with a TimedPath extension,
// over the whole range the descriptor touches. Each Interconnect on the way adds its traversal
// latency and itself (for its counters); a memory that serves the whole range puts itself in
// the extension. The engine then calls TimedMemory::access per chunk with plain Ticks.
//
// Same answer, fewer steps: access() is the very code b_transport runs (b_transport is a thin
// wrapper around it), the arrival is the one the hops would have annotated (issue time +
// latencies), and the calls happen in the same order, so every reservation and every result
// is identical to the transaction-per-chunk path (the golden outputs check it byte for byte).
// Targets that do not answer the probe (a remote chip behind an IciPort, a user's own memory
// type) keep the TLM path.
#pragma once

#include <array>

#include <tlm>

#include "traces/instruction.h"

namespace xpu {

struct TxnOrigin;

// One access: what b_transport reads from the payload, in Ticks.
struct MemAccess {
    bool write = false;
    bool reduce = false;  // a reducing write (ReduceWrite): read and write every byte
    std::uint64_t addr = 0, len = 0;
    Tick arrival = 0;      // when the request reaches the memory
    Tick now = 0;          // the kernel's time (nothing can arrive earlier)
    const TxnOrigin* origin = nullptr;  // for the transaction log (may be null)
};

struct MemTiming {
    Tick done = 0;   // the data is back (read) or written
    Tick stall = 0;  // back-pressure: how long the request waited beyond its arrival for queue room
};

class TimedMemory {
public:
    virtual MemTiming access(const MemAccess& a) = 0;

protected:
    ~TimedMemory() = default;
};

// A router on the path: counts what would have gone through it (`transactions` of `bytes` in
// all: the engine adds a descriptor's chunks up and reports them when its thread may stop).
class TimedHop {
public:
    virtual void routed(std::uint64_t bytes, std::uint64_t transactions) = 0;

protected:
    ~TimedHop() = default;
};

struct TimedPath : tlm::tlm_extension<TimedPath> {
    TimedMemory* target = nullptr;   // out: the memory serving the whole range, or null
    Tick latency = 0;                // out: the hops' latency, added to the arrival
    std::array<TimedHop*, 4> hops{};  // out: the routers on the way
    unsigned n_hops = 0;

    void reset() { *this = TimedPath{}; }
    tlm::tlm_extension_base* clone() const override { return new TimedPath(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const TimedPath&>(e); }
};

}  // namespace xpu
