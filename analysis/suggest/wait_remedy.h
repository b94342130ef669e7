// The remedy for each stalled wait: hoist the DMAs it waits for (plain, or with their buffer
// doubled), or sink the wait past the independent work it holds back (drop it where a later
// wait on its flag makes it redundant). Each wait gets the option that saves most, estimated
// from the run's own timing (analysis/suggest.cpp's head comment); the finders of the wait
// kinds (hoist_dma, double_buffer, pipeline_collective, drop_wait, reorder) group the waits
// whose remedy is theirs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/context.h"

namespace xpu::analysis {

struct SuggestContext;

// A DMA moved up from `from` to just before `to` (its hoist point).
struct Hoist {
    std::uint32_t stream;
    std::uint64_t from, to;
    bool renamed;  // its buffer is to be renamed (double_buffer)
};

struct WaitRemedy {
    const WaitStall* wait = nullptr;
    const char* kind = "";  // hoist_dma, double_buffer, pipeline_collective, drop_wait or reorder
    std::string ann;        // the wait's annotation (op)
    Tick saving = 0;        // > 0
    // Hoists (hoist_dma, double_buffer, pipeline_collective): the DMAs that move.
    std::vector<Hoist> hoists;
    // Sinks (drop_wait, reorder): the instruction the wait must stay before (its first use),
    // and whether it reached a later wait that makes it redundant (then it is deleted).
    std::uint64_t stop = 0;
    bool redundant = false;
    // A hoist_dma whose estimate the buffer copies only tie: their hoists (some renamed), which
    // move the DMAs further. The estimate cannot tell them apart, replay can: double_buffer
    // offers them as a variant (analysis/suggest/double_buffer.cpp).
    std::vector<Hoist> renamed_alternative;
};

// The remedy of every stalled wait that one would shorten, in the order of cx.waits.
std::vector<WaitRemedy> choose_wait_remedies(const SuggestContext& sc);

}  // namespace xpu::analysis
