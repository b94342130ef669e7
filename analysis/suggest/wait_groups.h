// The finders of the wait kinds (hoist_dma, double_buffer, pipeline_collective, drop_wait,
// reorder) make one suggestion per step of an op (the last part of the annotation: wait_data,
// wait_c, ...) out of the waits whose remedy is theirs, so that one suggestion fixes a pattern
// wherever the compiler emitted it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/names.h"

namespace xpu::analysis {

struct SuggestContext;

struct WaitGroup {
    Suggestion s;               // kind, where (the step until finish_group), moves
    std::set<std::string> ops;  // the annotations it covers
    std::map<std::uint32_t, Tick> saving_on;  // per stream: streams run in parallel, so the
                                              // suggestion saves the largest of these, not their sum
    std::set<std::pair<std::uint32_t, std::uint64_t>> moved;
    std::set<std::pair<std::uint32_t, std::uint64_t>> renamed;  // hoists: the DMAs whose buffer gets a second one
    std::uint64_t waits = 0, dmas = 0, passed = 0;
    std::set<std::string> dma_anns;  // hoists: the DMAs' annotations
    struct Held {  // sinks: a wait holding back independent work, and the first instruction needing it
        std::uint32_t stream;
        std::uint64_t wait, first_use;
    };
    std::vector<Held> held;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> served;  // hoists: the stalled waits (stream, index)
};


// The waits whose remedy (wait_remedy.h) is `kind`, by step (in step order): for a hoist kind,
// the DMAs moved (each once); for a sink kind, the waits sunk or deleted.
std::map<std::string, WaitGroup> group_hoists(const SuggestContext& sc, const char* kind);
// The same for the hoist_dma waits that have a renamed alternative (WaitRemedy::
// renamed_alternative): those hoists instead, as kind double_buffer.
std::map<std::string, WaitGroup> group_renamed_alternatives(const SuggestContext& sc);
std::map<std::string, WaitGroup> group_sinks(const SuggestContext& sc, const char* kind);

// Keeps a hoist group's DMAs in the order they are needed (need_order.h: none passes a DMA of its
// stream needed sooner) and counts them again: the DMAs moved and the instruction slots passed.
void keep_need_order(const SuggestContext& sc, WaitGroup& g);

// Sets the group's estimated saving (the largest of its streams'), where it applies (its op, or
// its ops rolled up across layers, analysis/names.h: "*/step (n ops)", "layer*/mlp/down_proj/step
// x32", "*/step (n ops in L layers)") and the full lists (Suggestion::ops, dma_ops). Returns
// where, as the finding's text says it ("(no annotation)").
std::string finish_group(WaitGroup& g);

// How long a list of names in a finding may grow (then "+N more"; the full list is in
// Suggestion::ops and dma_ops).
inline constexpr std::size_t kListChars = 100;

// The DMAs' annotations rolled up across layers, for the finding's text: "gemm/load_a,
// gemm/load_b", "layer*/attn/out_proj/load_a x32, layer*/attn/out_proj/load_b x32, +3 more".
std::string dma_list(const WaitGroup& g);

// For a suggestion that is one plan over every step it serves (prefetch_ahead, and
// double_buffer_store on top of it): sets where to the steps, "*/wait_data, */softmax (n ops)",
// when it covers more than one op (rolled up by op, the ops one layer alone had a wait served
// in would name that layer), and returns it; else where as finish_group left it.
std::string steps_where(WaitGroup& g);

}  // namespace xpu::analysis
