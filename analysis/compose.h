// Several suggestions applied together (xpu_analyze --apply 1,3; the verification's "applied
// together" replay). Each suggestion's changes were checked for legality on the original program
// alone, so two compose only where they cannot interact:
//  - In every stream both change, no instruction one touches (moves, moves past, rewrites, emits
//    after) lies where the other touches: their touched stretches do not overlap. A move from
//    `from` to before `before` touches every instruction between the two: those are the ones
//    whose order it changes. Within a stretch only one suggestion changes anything, so each pair
//    of instructions there keeps the order and the operands that suggestion's legality check
//    saw. (Until this rule, each suggestion's whole span, first to last instruction touched,
//    counted, which kept apart suggestions that interleave without touching each other.)
//  - What a suggestion takes that the program did not use, it takes alone. A flag the program
//    never names on a chip counts from zero for the suggestion that takes it: two taking the same
//    one would see each other's raises, however far apart (a flag's count lasts the whole run).
//    Memory that a rewritten instruction accesses and the original did not (a buffer's new copy
//    in free VMEM) was free where that suggestion checked it: neither suggestion may take memory
//    the other takes, nor move or rewrite an instruction that accesses memory the other takes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/run_data.h"

namespace xpu::analysis {

// Which suggestions of one run compose, pairwise. Reads the run's program (the flags it names,
// the memory its instructions access); each suggestion's footprint is worked out once, when first
// asked for.
class Composition {
public:
    // `suggestions` are kept by reference: they must outlive the Composition, unchanged.
    Composition(const RunData& run, const std::vector<Suggestion>& suggestions);
    ~Composition();
    // Suggestions i and j (indices into `suggestions`). Advice without a patch composes with nothing.
    bool composable(std::size_t i, std::size_t j) { return conflict(i, j).empty(); }
    // Why they do not compose, as "j <reason> i": "changes instructions among those that [kind]
    // changes", "takes flag 5 of chip 0 (which the program never names), as [kind] does"...;
    // empty when they do.
    std::string conflict(std::size_t i, std::size_t j);

    struct Footprint;  // compose.cpp

private:
    const Footprint& footprint(std::size_t i);
    bool named(std::uint32_t flag);  // chip << 16 | flag: does the program name it?
    const RunData& run_;
    const std::vector<Suggestion>& suggestions_;
    std::set<std::uint32_t> named_;  // the flags the program names (once named() has read them)
    bool named_read_ = false;
    std::vector<std::unique_ptr<Footprint>> footprints_;
};

// One suggestion holding the moves and edits of all of `parts` (which must compose pairwise):
// kind "combined", estimate the sum capped at `headroom` (no change saves more than the run's
// headroom over its lower bound), where/finding/action listing the parts.
Suggestion compose(const std::vector<const Suggestion*>& parts, Tick headroom);

}  // namespace xpu::analysis
