// The transaction log (OUT/txlog.bin): what the simulator writes during a run and the only
// input of the analysis (which therefore never needs SystemC). Schema in docs/outputs.md.
//
// File:  header | block* | (end record inside the last block)
//   header  "XPUTXLOG" (8 bytes), u32 version, u32 meta_bytes, meta_bytes of text: one
//           "key value" per line (platform facts the analysis needs: clock, peaks, units).
//   block   u32 payload_bytes, u32 records, u32 crc32(payload), payload (records, back to back).
// Records: one type byte, then LEB128 varints (signed values and time deltas zigzag-encoded,
// so that a model bug that runs time backwards is visible rather than a wrap-around). Names
// (unit paths) are interned: a Name record defines an id before its first use.
// The writer flushes a block every ~1 MiB, so a run holds one block in memory, whatever its
// length; a log without an End record is the log of a run that did not finish writing.
#pragma once

#include <cstdint>

namespace xpu::txlog {

inline constexpr char kMagic[8] = {'X', 'P', 'U', 'T', 'X', 'L', 'O', 'G'};
inline constexpr std::uint32_t kVersion = 2;  // 2: unit lines carry the role
inline constexpr std::size_t kBlockHeaderBytes = 12;
inline constexpr std::size_t kBlockTarget = 1u << 20;       // flush threshold
inline constexpr std::size_t kMaxBlockPayload = 64u << 20;  // a reader refuses larger blocks
inline constexpr std::size_t kMaxMetaBytes = 16u << 20;

enum class Rec : std::uint8_t {
    // id, length, bytes
    Name = 1,
    // chip, core, index, arrival, ready-arrival, issue-ready, complete-issue
    Instr = 2,
    // unit(name id), chip, core, index, opcode, accept, start-accept, end-start, complete-end
    UnitOp = 3,
    // engine(name id), chip, core, index, issue, start-issue, complete-start, bytes
    Dma = 4,
    // owner(name id), flag, old(zz), new(zz), time, known, [chip, core, index]
    Flag = 5,
    // target(name id), initiator(name id, 0 = none), write, addr, bytes, arrival, done-arrival,
    // known, [chip, core, index]
    Mem = 6,
    // controller(name id), channel, bytes, start, done-start: one interleave piece on one HBM
    // channel, [start, done] its transfer (what HBM bandwidth over time is drawn from)
    HbmPiece = 8,
    // end time (ps), status (0 completed, 1 deadlock, 2 time limit, 3 interrupted)
    End = 7,
};

}  // namespace xpu::txlog
