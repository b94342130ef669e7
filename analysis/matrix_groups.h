// Matrix units that can take each other's work: the `spread_matmuls` suggestion moves
// accumulators from a busy matrix unit to an idle one of the same group, and the bounds that
// take each unit's streaming as fixed (compute, span: analysis/bounds.h) must allow for it there.
//
// A group: the matrix units one stream (core) drives, on one chip, whose effective parameters
// are the same (OUT/platform.yaml, RunData::unit_config: the same rows, cols, dataflow, double
// buffering, rates and latencies), so that a matmul streams as long on any of them. A unit the
// run never used belongs to the stream of the core whose matrix socket it is bound to
// (RunData::matrix_socket). A unit whose parameters are unknown (a log without its
// platform.yaml, a run built by hand), or driven by more than one stream, is in no group:
// nothing moves to or from it, and its bounds stay per unit.
//
// Balanced: the group's most and least streaming units differ by at most an eighth of the most.
// `spread_matmuls` moves work only in groups that are not balanced, and only there do the
// bounds take the group's average instead of each unit's own streaming: a move keeps every
// matmul's streaming (the same shape on the same parameters), so the group's sum is the same and
// its busiest unit streams at least the average, whatever is moved. Where a group is balanced
// nothing moves, and the per-unit bounds hold as before.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/run_data.h"

namespace xpu::analysis {

struct MatrixGroups {
    struct Group {
        std::uint32_t stream = kNone;
        std::vector<std::uint32_t> units;  // into RunData::units, ascending
        Tick most = 0, least = 0, sum = 0;  // the units' summed matmul streaming
        bool balanced = true;
        Tick average() const { return units.empty() ? 0 : (sum + units.size() - 1) / units.size(); }
    };
    std::vector<Group> groups;
    std::vector<int> group_of;  // per unit: its group, or -1
    // The group of `unit` if it is not balanced, else null.
    const Group* unbalanced(std::uint32_t unit) const {
        if (unit >= group_of.size() || group_of[unit] < 0) return nullptr;
        const Group& g = groups[static_cast<std::size_t>(group_of[unit])];
        return g.balanced ? nullptr : &g;
    }
};

// `streaming`: per unit, its matmuls' summed streaming (bounds.h, matmul_streaming).
MatrixGroups matrix_groups(const RunData& run, const std::vector<Tick>& streaming);

// Per unit, the summed streaming of its matmuls (each op's end - start).
std::vector<Tick> matmul_streaming(const RunData& run);

}  // namespace xpu::analysis
