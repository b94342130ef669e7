// Multiple buffering by renaming, for the `double_buffer` suggestion. A DMA whose prefetch is
// blocked by its own destination buffer (the readers of the buffer's previous contents sit
// between it and where it could otherwise go) gets more buffers: the program's waits on the
// flags its fills raise are its pipeline steps, and every fill of the buffer for step j (the
// step of the first wait that waits for it), with every access to the buffer up to the next DMA
// into it, moves to copy j mod kBufferCopies of the buffer (copy 0 is the buffer itself, the
// others shadows in VMEM that nothing on the chip uses: above the highest address any
// instruction of the chip touches, within the VMEM's capacity). Then a DMA may move above the
// readers of the previous kBufferCopies - 1 steps' contents, as a prefetch into a free copy.
// Copies follow the step, not the buffer, so that buffers shared by several ops (filled a
// different number of times) still give each step one copy index for all its fills, which is
// what lets split_flags give each copy's steps a flag of their own; and a buffer a program
// already rotates with others keeps one copy index for all its fills (it is not renamed again).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/dependencies.h"

namespace xpu::analysis {

// Buffers per renamed buffer: the buffer and two shadows, so that two steps' loads can be in
// flight while a third step's data is read (what the generator's own prefetch does; two copies
// leave the HBM idle for a DMA's latency every step).
inline constexpr unsigned kBufferCopies = 3;

class BufferRenamer {
public:
    BufferRenamer(const RunData& run, const Planner& plan);
    // Did the hoist of DMA (s, k), which stopped at `p`, stop at a use of its own destination
    // (the instruction before p touches the DMA's destination, not its source)?
    bool blocked_by_buffer(std::uint32_t s, std::uint64_t k, std::uint64_t p) const;
    // Can DMA (s, k)'s destination be renamed: a buffer the stream fills at least twice, on a
    // chip with one core, that rename() manages alone? Cached per buffer.
    bool can_rename(std::uint32_t s, std::uint64_t k) const;
    // Where DMA (s, k) could move up to if its destination were a buffer nothing else uses; k's
    // own point if the chip has no room for one.
    std::uint64_t renamed_point(std::uint32_t s, std::uint64_t k) const;
    // Renames, in stream s, each DMA into the destination buffer of each of `dmas` (and the
    // accesses to that buffer up to the next DMA into it) into the copy of the buffer its step
    // gives it (step_of). False, with the reason, when it cannot: no VMEM headroom, an access
    // that straddles the buffer, another core or chip writing it. A fill is left in place when
    // the next DMA into the buffer does not overwrite all of it.
    bool rename(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited& edited, std::string& why) const;

    // More buffers alone still leave each fill behind the previous step's wait when both raise
    // the same flag. Where a renamed fill's flag is counted the plain way (only this stream's
    // DMAs raise it, each swait on it waits for every DMA issued on it so far, nothing sets or
    // adds to it), the steps of copy c > 0 (their DMAs and their wait) move to a flag of their
    // own that the chip never uses, and every swait on any of these flags waits for the DMAs
    // issued on its flag so far. A wait then no longer waits for the other copies' steps, but
    // each of those steps' own wait comes before it in program order: the same completions are
    // waited for before the same instructions, so the same data is guarded. Returns how many
    // flags were split.
    std::size_t split_flags(std::uint32_t s, const std::vector<std::uint64_t>& renamed, Planner::Edited& edited) const;

    // A chip's VMEM nothing on it uses, [free_lo, free_hi): the largest range no instruction of
    // the chip touches (find_room; usually from the end of the highest byte touched to the
    // VMEM's end; empty: the VMEM unknown, or several VMEMs the chip's streams address; where they
    // all address one of several, in that one), its flag count, and whether one
    // stream alone runs on it (prefetch_ahead's buffers and flag).
    struct Room {
        std::uint64_t free_lo = 0, free_hi = 0, flags = 0;
        bool one_stream = false;
    };
    Room room(std::uint16_t chip) const;
    // Per flag id of the chip (room().flags of them), whether an instruction of the program
    // names it (flags are only on syncs and DMAs; a DMA's flag is its destination chip's): the
    // flags a transformation may take for copies or pieces are the others.
    std::vector<bool> named_flags(std::uint16_t chip) const;

    // The pipeline step DMA (s, k) fills a buffer for: the step of the first swait that waits
    // for it (double_buffer.cpp: find_steps).
    std::uint64_t step_of(std::uint32_t s, std::uint64_t k) const;

    // How far up DMA (s, k) may be prefetched: a fill for step kBufferCopies - 1 or later stays
    // below the first wait of its flags' class (0: no such floor). Nothing overlaps that first
    // wait: a later step's fill issued before it only shares the HBM with the fills it waits
    // for. Renaming every fill a buffer's readers block put a 1000^3 GEMM's step-2 weight tile
    // there (its copy frees at once: the weights are read at the start of their step) and its
    // first wait grew from 577 to 795 ns (92.8% of the loss recovered; 98.4% with the floor).
    // A floor two steps back at every step cost the decodes ~0.1% of their loss.
    std::uint64_t step_floor(std::uint32_t s, std::uint64_t k) const;

    // The region of stream s's VMEM that [lo, hi) belongs to for renaming: grown by every fill
    // of the stream that overlaps it without lying inside it, until none does ([lo, hi) itself
    // when every fill that touches it fills it exactly or inside it).
    std::pair<std::uint64_t, std::uint64_t> region_of(std::uint32_t s, std::uint64_t lo, std::uint64_t hi) const;

    // Stream s's DMAs into its chip's VMEM, in program order (found once: each buffer renamed
    // looks for its fills among them, and a scan of the stream's syncs and DMAs per buffer read
    // every one of those instructions again).
    struct Fill {
        std::uint64_t index, addr, bytes;
    };
    const std::vector<Fill>& local_fills(std::uint32_t s) const;

private:
    struct ChipRoom {
        std::uint64_t capacity = 0;              // 0: unknown, or several VMEMs its streams address (no renaming)
        std::uint64_t free_lo = 0, free_hi = 0;  // the largest range no instruction touches (find_room)
        std::uint64_t flags = 0;     // flag ids 0 .. flags - 1 (its SyncFlags)
        unsigned streams = 0, vmems = 0;
    };
    const RunData& run_;
    const Planner& plan_;
    mutable std::map<std::uint16_t, ChipRoom> chips_;
    mutable bool room_known_ = false;
    void find_room() const;
    mutable std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, bool> renamable_;  // (stream, addr, bytes)
    mutable std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> renamed_point_;
    mutable std::map<std::uint32_t, std::vector<Fill>> fills_;  // local_fills, per stream
    mutable std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> regions_;  // region_of's unions, per stream
    // Per stream, its instructions with operands in the chip's VMEM (the fields rename() moves),
    // in program order: a buffer's renaming looks only at these, in this compact copy (a scan of
    // every instruction per buffer, each ~100 bytes, was most of double_buffer's time on a decode).
    struct VmemUse {
        std::uint64_t index;
        std::uint64_t addr[2];  // the fields' addresses, source first
        std::uint64_t bytes;
        unsigned fields;
    };
    mutable std::map<std::uint32_t, std::vector<VmemUse>> uses_;
    const std::vector<VmemUse>& vmem_uses(std::uint32_t s) const;
    // Arrays by position in the stream's sync_and_dma (where every fill and swait is): hash maps
    // by instruction index cost a decode's analysis ~5% to fill and look up (rename looks up
    // every fill of each buffer).
    struct Steps {
        static constexpr std::uint64_t kNone = ~std::uint64_t{0};
        static constexpr std::uint32_t kNoClass = ~std::uint32_t{0};
        std::vector<std::uint64_t> fill, wait;  // a fill DMA's step; a swait's step (kNone: neither)
        std::vector<std::uint32_t> fill_class;  // a fill DMA's flags' class (kNoClass: not a fill)
        std::map<std::pair<std::uint16_t, std::uint64_t>, std::uint64_t> first_wait;  // (class, step) -> its first swait
    };
    // Instruction j's position in stream s's sync_and_dma (its size if j is not there).
    std::size_t position(std::uint32_t s, std::uint64_t j) const;
    mutable std::map<std::uint32_t, Steps> steps_;  // per stream (find_steps)
    void find_steps(std::uint32_t s) const;
    // The copies of [lo, hi) in stream s's VMEM: shadow[0] = lo, the others from `next` on (which
    // it advances, aligned). False, with the reason, when they do not fit the VMEM or another
    // stream's DMA writes the range.
    bool place_copies(std::uint32_t s, std::uint64_t lo, std::uint64_t hi, std::uint64_t& next, std::uint64_t* shadow, std::string& why) const;
    // rename_into()'s case of a region that fills of several extents share (double_buffer.cpp).
    bool rename_region(std::uint32_t s, std::uint64_t lo, std::uint64_t hi, const std::uint64_t* shadow, Planner::Edited* edited,
                       std::string& why) const;
    // rename() into `edited`; null: only whether it can (can_rename), nothing recorded.
    bool rename_into(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited* edited, std::string& why) const;
};

}  // namespace xpu::analysis
