// Where a run's time went, by chip and by op, from the models' own counters: each core
// attributes the advance of its issue point to the annotation of the instruction it issued
// (ScalarCore::time_by_annotation), so the shares are of core time, summed over cores.
#pragma once

#include <string>
#include <vector>

#include "platform/builder.h"

namespace xpu::platform {

struct ChipFigure {
    unsigned chip = 0;
    std::uint64_t instructions = 0;
    double finish_ns = 0;  // the latest of its cores
    std::uint64_t hbm_bytes_read = 0, hbm_bytes_written = 0;
    std::uint64_t link_bytes_sent = 0;  // on the links leaving this chip
};

struct OpFigure {
    std::string op;      // annotation without its layer prefix and its phase (attn/qk_matmul)
    double core_ns = 0;  // summed over cores
    double share = 0;    // of all cores' time
};

struct Breakdown {
    std::vector<ChipFigure> chips;
    std::vector<OpFigure> ops;        // largest first
    double communication_share = 0;   // ops that are collectives (all_reduce, all_gather, reduce_scatter)
};

// `annotations`: the trace's string table.
Breakdown breakdown(const Platform& p, const std::vector<std::string>& annotations);
// "layer3/attn/qk_matmul/matmul" -> "attn/qk_matmul"; "gemm/matmul" -> "gemm".
std::string op_of(const std::string& annotation);
bool is_communication(const std::string& op);

}  // namespace xpu::platform
