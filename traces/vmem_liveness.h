// VMEM liveness: which VMEM byte ranges a stream's instructions keep allocated, and from which
// instruction to which. There is no allocation instruction in the ISA; a range is allocated by
// liveness (docs/waveforms.md, "VMEM bytes allocated"):
//
//   a VMEM byte range is allocated from the moment a write to it begins (a DMA whose
//   destination is VMEM: its start; a vst: its issue) until the last instruction that reads it
//   before it is overwritten completes (a DMA whose source is VMEM, a vld) -- or until the
//   write completes if nothing reads it.
//
// This is the static part: instructions in program order in, intervals [writer, last reader]
// over address ranges out. Times are the caller's (a run's InstrEvent/DmaEvent, an analysis).
// No SystemC.
//
//   std::vector<Instruction> s = ...;                         // one stream, program order
//   for (const VmemLive& l : vmem_liveness(s))                // indices into s
//       ... bytes [l.addr, l.addr + l.bytes) live from s[l.writer] to s[l.last_reader] ...
//
// What counts:
//  - writes: vst (`dst`), dma with a VMEM `dst` on this chip; reads: vld (`src`), dma with a
//    VMEM `src`. A dma that does both (VMEM to VMEM) reads first, then writes.
//  - a reducing dma into VMEM (`dtype` set: dst += src) reads and rewrites its destination in
//    place: bytes already allocated stay allocated under their writer, the dma counts as one
//    of their readers; bytes nobody wrote become a new range written by it.
//  - a later write over a live range ends it for the bytes overwritten (the rest lives on:
//    partial overwrites split ranges). Reads of bytes this stream never wrote (another chip's
//    DMA put them there, or they predate the trace) allocate nothing.
//  - operands on another chip (`@chip`, a remote DMA's destination) are not this VMEM's.
// Addresses are offsets in the VMEM space, as in the trace.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "traces/instruction.h"

namespace xpu::trace {

// One allocated range: bytes [addr, addr + bytes), written by instruction `writer` and live
// until instruction `last_reader` completes (and the write itself has). `read` false: nothing
// read it before it was overwritten or the stream ended (then last_reader == writer: live until
// the write completes).
// Indices are the caller's (vmem_liveness: positions in its vector; VmemLiveness::add: as given).
struct VmemLive {
    std::uint64_t addr = 0, bytes = 0;
    std::uint64_t writer = 0, last_reader = 0;
    bool read = false;
    bool operator==(const VmemLive& o) const {
        return addr == o.addr && bytes == o.bytes && writer == o.writer && last_reader == o.last_reader && read == o.read;
    }
};

// The VMEM operands of an instruction, as liveness sees them.
struct VmemAccess {
    bool reads = false, writes = false, reduces = false;  // reduces: in-place read-modify-write of dst
    std::uint64_t read_addr = 0, read_bytes = 0, write_addr = 0, write_bytes = 0;
};
// `chip`: the stream's chip (kLocalChip if unknown: then only operands marked local count).
VmemAccess vmem_access(const Instruction& in, std::uint16_t chip = kLocalChip);
inline bool touches_vmem(const Instruction& in, std::uint16_t chip = kLocalChip) {
    VmemAccess a = vmem_access(in, chip);
    return a.reads || a.writes;
}

// Incremental form, for streams too long to hold in memory (the waveform writer feeds it the
// instructions of a run as the core reports them). Memory: the live ranges (an interval map)
// plus the intervals closed and not yet taken.
class VmemLiveness {
public:
    explicit VmemLiveness(std::uint16_t chip = kLocalChip) : chip_(chip) {}
    // The next instruction of the stream; `index` must not decrease. Instructions that touch
    // no VMEM may be skipped or passed: they change nothing.
    void add(std::uint64_t index, const Instruction& in);
    // Ends the stream: every range still live is closed. Returns the intervals not yet taken
    // (all of them if take_closed was never called), sorted by (writer, addr), adjacent ranges
    // with the same writer, last reader and `read` merged. The object is empty afterwards
    // (ready for another stream).
    std::vector<VmemLive> finish();
    // Moves the intervals closed so far (ranges overwritten) to the end of `into`, in the order
    // they closed, not merged; finish() does not return them again. For callers that consume
    // intervals as the stream goes (memory stays the live ranges only).
    void take_closed(std::vector<VmemLive>& into);
    // The smallest instruction index a live range still names (writer or last reader), or
    // UINT64_MAX when nothing is live: data a caller keeps per instruction below it is only
    // needed for intervals already closed.
    std::uint64_t oldest_index() const;
    // Bytes currently live (written and not overwritten), for statistics.
    std::uint64_t live_bytes() const { return live_; }

private:
    struct Seg {
        std::uint64_t end, writer, last_reader;
        bool read;
    };
    using Map = std::map<std::uint64_t, Seg>;  // start -> segment; segments never overlap
    Map::iterator split(std::uint64_t at);     // a segment boundary at `at`; the segment starting there (or end)
    Map::iterator split_from(Map::iterator from, std::uint64_t at);  // the same; no segment before `from` starts at or after `at`
    Map::iterator split_at(Map::iterator it, std::uint64_t at);      // the same; it = lower_bound(at)
    void read(std::uint64_t a, std::uint64_t b, std::uint64_t index);
    void write(std::uint64_t a, std::uint64_t b, std::uint64_t index);
    void reduce(std::uint64_t a, std::uint64_t b, std::uint64_t index);
    void close(Map::iterator it);
    void coalesce(std::uint64_t at);  // merge the segments meeting at `at` if they are alike
    void coalesce(Map::iterator it);  // merge `it` into the segment before it if they meet and are alike
    std::uint16_t chip_;
    Map map_;
    std::vector<VmemLive> out_;
    std::vector<Map::iterator> starts_;  // read/reduce's scratch (kept: one allocation, not one per call)
    std::uint64_t live_ = 0;
};

// The whole stream at once: indices are positions in `stream`.
std::vector<VmemLive> vmem_liveness(const std::vector<Instruction>& stream, std::uint16_t chip = kLocalChip);

}  // namespace xpu::trace
