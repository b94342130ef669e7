// Several suggestions applied together (xpu_analyze --apply 1,3; the verification's "applied
// together" replay). Each suggestion's changes were checked for legality on the original program
// alone, so two compose only where they cannot interact: in every stream both change, the spans
// of instructions they touch (moved from, moved before, edited) do not overlap.
#pragma once

#include <vector>

#include "analysis/analysis.h"

namespace xpu::analysis {

bool composable(const Suggestion& a, const Suggestion& b);

// One suggestion holding the moves and edits of all of `parts` (which must compose pairwise):
// kind "combined", estimate the sum capped at `headroom` (no change saves more than the run's
// headroom over its lower bound), where/finding/action listing the parts.
Suggestion compose(const std::vector<const Suggestion*>& parts, Tick headroom);

}  // namespace xpu::analysis
