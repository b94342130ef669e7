// "Pick another collective algorithm": the `collective_algorithm` suggestion. Inter-chip traffic
// that keeps some link directions busy while others stay idle (a unidirectional ring on a ring
// of chips uses the +x links only; a ring on a torus, one dimension of it) is moving its bytes
// through part of the machine's link bandwidth. An algorithm that spreads the same bytes over
// every direction (a bidirectional ring; on a torus, rings along every dimension, both ways)
// moves them, at best, in the busiest link's time scaled by (directions used / directions
// there are): that is the estimate, taken only when the links set the pace (the busiest link
// was busy for at least half of the span of the inter-chip traffic), and only when that traffic
// is a collective's: sent by at least two chips (a chip's point-to-point sends alone, such as one
// remote DMA, have no collective algorithm to change). The action states that estimate: the
// suggestion's estimated saving is capped at this run's headroom like every other, but the
// other lowering moves the bytes over other links, so its own figure can be well above it (a
// ring all-reduce of 4 MiB on 4 chips: ~66.88 us for bidir-ring, measured 66.6 us, against 1.1 us of
// headroom over this lowering's link bound).
//
// The algorithm is the lowering's (the compiler's or the collective library's) choice, which no
// patch of the trace expresses. Where the trace is a collective xpu_tracegen wrote with a one-way
// algorithm (ring on a ring, torus2d or torus3d on a torus of as many dimensions, or a ring over
// every chip of a torus), recognised by writing it again (analysis/relower.h), the suggestion
// carries the other lowering, the generator's trace with the both-ways algorithm (on the trace's
// torus, or the platform's for a ring): the verification replays
// it and `xpu_analyze --apply` writes it, as for a patch. Elsewhere (a collective inside a model,
// another generator's trace) it stays advice, not replayed, and the proof is a run of the
// collective lowered the other way, compared with xpu_analyze --compare
// (tests/e2e/collective_choice.sh checks both).
#pragma once

#include "analysis/analysis.h"

namespace xpu::analysis {

// The suggestion, or one with an empty kind if the run has nothing to gain this way.
Suggestion collective_algorithm(const RunData& run);

}  // namespace xpu::analysis
