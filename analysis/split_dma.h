// split_dma: a large DMA that one engine moves more slowly than the chip's HBM could, while
// other engines of the chip stand by, split into pieces over several engines.
//
// When (the finding): a wait stalled on a DMA of its own stream whose transfer ran at 70% or
// more of its engine's bandwidth (the engine set the pace), where the engine's bandwidth is
// below 80% of the chip's HBM peak (on configs/xpu.yaml an engine reaches the HBM's peak
// alone, so this appears only on platforms with slower engines: a what-if).
// The change: k = min(engines of the chip, HBM peak / engine bandwidth) contiguous pieces, in
// place of the DMA, on its engine and the others; each piece raises the DMA's flag.
// The rule (legality): a piece's completion must not count as the whole DMA's. Every raise of
// the flag is multiplied by k instead: each DMA not split adds k times its increment, each
// piece the split DMA's increment (k pieces: k times it), and each wait on the flag waits for
// k times its value (`gt v` becomes `ge k(v + 1)`). Only for flags counted that way on a chip
// whose one stream alone touches them (DMAs adding positive values, `ge`/`gt` waits; no sset or
// sadd, no other chip's DMA raising it): then every wait passes exactly when it did before, in
// terms of whole DMAs, and the pieces read and write what the DMA did.
// The estimate: per DMA, its transfer time less its bytes at the pieces' combined bandwidth
// (at most the HBM's peak), at most the HBM time left idle during its transfer (the roofline);
// per wait, how much earlier the latest DMA it waits for lands, at most its stall.
#pragma once

#include <functional>

#include "analysis/dependencies.h"

namespace xpu::analysis {

// The split_dma suggestion (no edits if nothing qualifies). hbm_idle(chip, a, b): the time in
// [a, b] the chip's HBM could have moved more data.
Suggestion split_suggestion(const Context& cx, const Planner& plan, const std::function<Tick(int, Tick, Tick)>& hbm_idle);

}  // namespace xpu::analysis
