// The transaction log (OUT/txlog.bin): what the simulator writes during a run and the only
// input of the analysis (which therefore never needs SystemC). Schema in docs/outputs.md.
//
// File:  header | block* | (end record inside the last block)
//   header  "XPUTXLOG" (8 bytes), u32 version, u32 meta_bytes, meta_bytes of text: one
//           "key value" per line (platform facts the analysis needs: clock, peaks, units, the
//           HBM interleave rule; traces/txlog_header.h).
//   block   u32 payload_bytes, u32 records, u32 crc32(payload), payload (records, back to back).
// Records: one type byte, then LEB128 varints (signed values and time deltas zigzag-encoded,
// so that a model bug that runs time backwards is visible rather than a wrap-around).
//
// Version 3 is compact (docs/outputs.md says how much): names are the header's unit lines
// (id k = the k-th unit, 1-based; a Name record only for a name the header lacks); numbers are
// deltas against what the reader already knows (the stream's last index and time, the previous
// chunk of the same DMA on the same target); a DMA's chunks after its first name a slot, not
// their target, initiator, address and instruction; an HBM request's interleave pieces are
// derived from the header's rule, only their times are recorded where they differ; an
// instruction and its unit operation are one record. Every value of version 2 reads back
// exactly, in the same order.
// The writer flushes a block every ~1 MiB, so a run holds one block in memory, whatever its
// length; a log without an End record is the log of a run that did not finish writing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpu::txlog {

inline constexpr char kMagic[8] = {'X', 'P', 'U', 'T', 'X', 'L', 'O', 'G'};
// 2: unit lines carry the role; 3: compact records (deltas, chunk slots, derived HBM pieces)
inline constexpr std::uint32_t kVersion = 3;
inline constexpr std::size_t kBlockHeaderBytes = 12;
inline constexpr std::size_t kBlockTarget = 1u << 20;       // flush threshold
inline constexpr std::size_t kMaxBlockPayload = 64u << 20;  // a reader refuses larger blocks
inline constexpr std::size_t kMaxMetaBytes = 16u << 20;
// Chunk slots (MemNext): a DMA's chunks on one target after the first refer to its slot.
inline constexpr unsigned kSlots = 128;
// A derived HBM request has at most this many pieces (a larger one is written explicitly).
inline constexpr std::uint64_t kMaxDerivedPieces = 1u << 16;

enum class Rec : std::uint8_t {
    // id, length, bytes: a name the header's unit lines do not have (ids continue theirs)
    Name = 1,
    // chip, core, index-Δ, arrival-Δ, ready-arrival, issue-ready, complete-issue
    Instr = 2,
    // unit, chip, core, index-Δ, opcode, accept-Δ, start-accept, end-start, complete-end
    UnitOp = 3,
    // engine, chip, core, index-Δ, issue-Δ, start-issue, complete-start, bytes
    Dma = 4,
    // owner, flag, old(zz), new-old(zz), time-Δ, known, [chip, core, index-Δ]
    Flag = 5,
    // slot, target, initiator, bits (write, known), addr-Δ, bytes, arrival-Δ, done-arrival,
    // [chip, core, index-Δ], [pieces]: a transaction that opens (or reopens) a chunk slot
    Mem = 6,
    // end time (ps), status (0 completed, 1 deadlock, 2 time limit, 3 interrupted)
    End = 7,
    // controller, channel, bytes, start-Δ, done-start: a piece the header's rule does not give
    HbmPiece = 8,
    // Instr's fields, then unit, opcode, start-issue, end-start, complete-end: an instruction
    // and its unit operation (accepted at its issue, result at its completion)
    InstrOp = 9,
    // 0x80 | slot: arrival (predicted), done-arrival (Δ), [pieces]: the next chunk of the
    // slot's DMA on the slot's target, right after the previous one in memory, the same size
    MemNext = 0x80,
};

// How an HBM transaction's pieces are given ([pieces] above, a varint; only on a controller the
// header has an `hbm` line for): the request's pieces follow the header's interleave rule, each
// moving its bytes once or twice (a reducing write reads and writes), and they end with the
// transaction (or each at its own time: Δs follow); or they were written as HbmPiece records
// just before (the rule did not give them).
enum class Pieces : std::uint8_t {
    Once = 0,
    OnceTimed = 1,
    Twice = 2,
    TwiceTimed = 3,
    Explicit = 4,
};

}  // namespace xpu::txlog
