// Op names for display: rolled up across layers and sorted numerically.
//
// A transformer trace annotates each op with its layer ("layer12/attn/qkv_proj/load_b"), so a
// finding that lists the ops it covers would list one name per layer. Every place that lists
// names rolls them up here instead: "layer0/attn/qkv_proj/load_b" ... "layer31/attn/qkv_proj/load_b"
// become "layer*/attn/qkv_proj/load_b x32". The full names stay in analysis.json (`ops`) and in
// report.html's collapsible details.
//
// Every function is deterministic: the result depends on the set of names only, not on their
// order or repetitions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::analysis {

// Numeric-aware order: runs of digits compare by value ("layer2" < "layer10"), the rest byte by
// byte; names equal but for leading zeros order by the plain comparison (a total order).
bool natural_less(std::string_view a, std::string_view b);

// Every path component "layer<digits>" becomes "layer*": "layer12/attn/out_proj" -> "layer*/attn/out_proj".
std::string layer_pattern(std::string_view name);

// The layer number of the name's first "layer<digits>" component, or -1 if it has none.
long layer_number(std::string_view name);

// Names that differ only in their layer: the pattern, and how many distinct names it covers.
struct NameGroup {
    std::string pattern;               // "layer*/attn/out_proj/load_a" (the name itself for a single name)
    std::vector<std::string> members;  // the distinct names it covers, in natural order
    std::string text() const;          // "layer*/attn/out_proj/load_a x32", or the one member's name
};

// The distinct names grouped by pattern, in natural order of the pattern. A pattern that covers a
// single name shows that name ("layer3/attn/out_proj/load_a", not "layer*/... x1").
std::vector<NameGroup> roll_up(std::vector<std::string> names);

// The rolled-up names separated by ", ", as many as fit in about `max_chars` characters (at
// least one), then "+N more" for the rest: "layer*/attn/out_proj/load_a x32, layer*/mlp/down_proj/load_b x32, +3 more".
std::string rolled_list(const std::vector<std::string>& names, std::size_t max_chars = 120);

// The distinct names in natural order (the full list analysis.json gives).
std::vector<std::string> sorted_names(std::vector<std::string> names);

// The parts of an op's annotation ("layer3/attn/all_reduce/all_gather/send"): its step, the last
// part ("send"), and the op it is a step of, the rest ("layer3/attn/all_reduce/all_gather"); an
// annotation without '/' is both.
std::string step_of(const std::string& ann);
std::string op_of(const std::string& ann);

// How many distinct layer numbers the names carry (0 if none).
std::size_t layer_count(const std::vector<std::string>& names);

// Where a suggestion applies, from the ops (annotations) it covers, grouped by their step (the
// last component): per step, the op if there is one, its rolled-up name if its ops differ only
// in their layer ("layer*/mlp/down_proj/wait_data x32"), else "*/step"; several steps are
// separated by ", ", and when a step stands for several ops, " (N ops)" follows, or
// " (N ops in L layers)" when they span several layers. An empty op is "(no annotation)".
std::string where_text(const std::vector<std::string>& ops);

}  // namespace xpu::analysis
