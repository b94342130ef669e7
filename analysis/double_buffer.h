// Double buffering by renaming, for the `double_buffer` suggestion. A DMA whose prefetch is
// blocked by its own destination buffer (the readers of the buffer's previous contents sit
// between it and where it could otherwise go) gets a second buffer: every other DMA into that
// buffer, and every access to the buffer until the next DMA into it, moves to a shadow buffer
// in VMEM that nothing on the chip uses (above the highest address any instruction of the chip
// touches, within the VMEM's capacity). Then the DMA may move above the previous contents'
// readers, as a prefetch into the other buffer.
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
    // Renames, in stream s, every other DMA into the destination buffer of each of `dmas` (and
    // the accesses to that buffer up to the next DMA into it) into a shadow buffer. False, with
    // the reason, when it cannot: no VMEM headroom, an access that straddles the buffer,
    // another core or chip writing it. A fill is left in place when the next DMA into the
    // buffer does not overwrite all of it.
    bool rename(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited& edited, std::string& why) const;

    // A second buffer alone still leaves each fill behind the previous fill's wait when both
    // raise the same flag. Where a renamed fill's flag is counted the plain way (only this
    // stream's DMAs raise it, each swait on it waits for every DMA issued on it so far, nothing
    // sets or adds to it), the waits that cover renamed fills, with every DMA they cover, move
    // to a flag of their own that the chip never uses, and every swait on either flag waits for
    // the DMAs issued on its flag so far: the same completions, so the same data, guarded.
    // Returns how many flags were split.
    std::size_t split_flags(std::uint32_t s, const std::vector<std::uint64_t>& renamed, Planner::Edited& edited) const;

private:
    struct ChipRoom {
        std::uint64_t top = 0;       // end of the highest VMEM byte the chip's instructions touch
        std::uint64_t capacity = 0;  // 0: unknown or several VMEMs (no renaming)
        std::uint64_t flags = 0;     // flag ids 0 .. flags - 1 (its SyncFlags)
        unsigned streams = 0, vmems = 0;
    };
    const RunData& run_;
    const Planner& plan_;
    mutable std::map<std::uint16_t, ChipRoom> chips_;
    mutable bool tops_known_ = false;
    void find_tops() const;
    mutable std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, bool> renamable_;  // (stream, addr, bytes)
    mutable std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> renamed_point_;
    struct Fill {
        std::uint64_t addr, bytes;
    };
    mutable std::map<std::uint32_t, std::vector<Fill>> fills_;  // per stream: its DMAs into local VMEM
};

}  // namespace xpu::analysis
