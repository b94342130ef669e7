// How the scalar core hands an instruction to a unit over TLM-2.0.
//
// The core calls b_transport on the unit's `cmd` socket with a generic payload that carries
// this extension (command = IGNORE, no data). LT style with annotated time, as for the memories:
// the instruction is offered at sc_time_stamp() + delay (the annotation says how far the core's
// local time leads the kernel under temporal decoupling). The unit computes, from its own busy
// state, when it accepted the instruction, when it started, when its operands were read and when
// its result is ready (absolute times, in the extension), and returns the annotation moved on to
// the acceptance: on return, sc_time_stamp() + delay = accept. Vector and matrix units answer at
// once without waiting; a DMA engine whose descriptor queue is full blocks the caller until a
// slot frees (then sc_time_stamp() has moved and delay is counted from there).
#pragma once

#include <vector>

#include <tlm>

#include "traces/instruction.h"
#include "models/recorder.h"

namespace xpu {

struct UnitCommand : tlm::tlm_extension<UnitCommand> {
    const Instruction* in = nullptr;
    std::uint16_t chip = 0, core = 0;  // the issuing stream (for recording)
    std::uint64_t index = 0;  // instruction index in its stream (for recording)
    Tick accept = 0;      // out: when the unit's queue took it (>= the offer; later = back-pressure)
    Tick start = 0;       // out: when it began executing
    Tick operands_read = 0;  // out: when its source registers are no longer needed (WAR)
    Tick complete = 0;    // out: when its result is available
    const char* error = nullptr;  // out: why the unit refused it (with an error response)

    tlm::tlm_extension_base* clone() const override { return new UnitCommand(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override {
        *this = static_cast<const UnitCommand&>(e);
    }
};

// Back-pressure along a memory path: how long a request had to wait, beyond its arrival, for
// room in a full queue (an HBM channel, a link buffer). Every stage keeps the largest wait it
// sees; an initiator that respects back-pressure issues nothing more for that long. (A stall,
// not an absolute time: stages further down the path see the request later, which is latency,
// not back-pressure.)
struct MemAccept : tlm::tlm_extension<MemAccept> {
    Tick stall = 0;
    tlm::tlm_extension_base* clone() const override { return new MemAccept(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override {
        *this = static_cast<const MemAccept&>(e);
    }
};

// How long after a write's head its tail reaches the chip it is delivered into: set by the last
// inter-chip link (or switch port) it crossed, to the time its bytes took on the wire there;
// read and cleared by the IciPort that delivers it. Links are cut-through, so a transaction's
// head travels on while its bytes still arrive; the memory it lands in can write its last bytes
// only once they are there, so the port delivers the write at its tail. Without it, the far
// HBM's latency hid the last chunk's time on the wire, and a one-chunk remote write of 1 KiB took
// as long as one of 4 KiB (a collective's step did not grow with its shard up to 4 KiB).
// Payloads without it (tests, reads) are delivered at their head, as before.
struct LinkTail : tlm::tlm_extension<LinkTail> {
    Tick lag = 0;
    tlm::tlm_extension_base* clone() const override { return new LinkTail(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const LinkTail&>(e); }
};

// Who a memory transaction is for: the initiator module and the instruction it serves. Set by
// the initiators (DMA engine, vector unit) on their payloads, read by the targets for the
// transaction log. Payloads without it (tests, fetches) are recorded without an origin.
struct TxnOrigin : tlm::tlm_extension<TxnOrigin> {
    const char* initiator = "";
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0;
    tlm::tlm_extension_base* clone() const override { return new TxnOrigin(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override {
        *this = static_cast<const TxnOrigin&>(e);
    }
};

// The transaction-log record of a memory transaction a target served, with its origin.
inline MemEvent mem_event(const TxnOrigin* o, const char* target, bool write, std::uint64_t addr, std::uint64_t bytes,
                          Tick arrival, Tick done) {
    MemEvent e;
    e.target = target;
    e.write = write;
    e.addr = addr;
    e.bytes = bytes;
    e.arrival = arrival;
    e.done = done;
    if (o) {
        e.initiator = o->initiator;
        e.for_instr = {true, o->chip, o->core, o->index};
    }
    return e;
}
inline MemEvent mem_event(const tlm::tlm_generic_payload& gp, const char* target, bool write, std::uint64_t addr,
                          std::uint64_t bytes, Tick arrival, Tick done) {
    return mem_event(gp.get_extension<TxnOrigin>(), target, write, addr, bytes, arrival, done);
}

// A write that reduces into memory (dst += data): the target reads and writes the bytes
// (read-modify-write near memory), as a DMA with a dtype does.
struct ReduceWrite : tlm::tlm_extension<ReduceWrite> {
    tlm::tlm_extension_base* clone() const override { return new ReduceWrite(*this); }
    void copy_from(const tlm::tlm_extension_base&) override {}
};

// Sync-flag operations travel to SyncFlags as a payload whose data points at this struct.
struct FlagCommand {
    enum class Op : std::uint8_t { Set, Add, Wait, Barrier } op = Op::Set;
    std::uint16_t flag = 0;
    std::int64_t value = 0;
    Cond cond = Cond::Eq;
    const char* requester = "";        // module name, for deadlock diagnosis
    const Instruction* in = nullptr;   // the instruction waiting (or raising), for diagnosis
    std::uint16_t chip = 0, core = 0;  // the stream of `in`, for the transaction log
    std::uint64_t index = 0;
    // A posted set/add takes effect no earlier than this (ps): a remote DMA's completion flag,
    // sent behind its data on the same route, becomes visible once the data has landed.
    Tick not_before = 0;
};

// Fixed-size queue of start times: instruction i can enter a unit's queue of depth Q only
// once instruction i-Q has left it (started). Used by every unit with an issue queue.
class QueueSlots {
public:
    explicit QueueSlots(unsigned depth) : ring_(depth ? depth : 1, 0) {}
    // Earliest time an instruction offered at `t` is accepted.
    Tick accept(Tick t) const { return t > ring_[pos_] ? t : ring_[pos_]; }
    void started(Tick start) {
        ring_[pos_] = start;
        if (++pos_ == ring_.size()) pos_ = 0;  // not %: a division per instruction, twice (core, unit)
    }

private:
    std::vector<Tick> ring_;
    std::size_t pos_ = 0;
};

}  // namespace xpu
