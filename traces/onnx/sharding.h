// Tensor parallelism for the ONNX front end (xpu_tracegen onnx --tp N): which tensors are split
// over the N chips, along which axis, and where collectives go, decided node by node in graph
// order the way a GSPMD-style compiler propagates shardings. The rule, in short (docs/tracegen.md
// "Tensor parallelism" has it in full):
//   - every matrix-unit node (Conv, Gemm, MatMul) is split, never replicated, so FLOPs summed
//     over the chips are the graph's 2 x MACs exactly:
//       MatMul/Gemm with weights, input whole      -> column-parallel (weights split by output
//                                                     column; the output split on its last axis)
//                                                     unless that split would be all-gathered at
//                                                     a reshape downstream (heads tp does not
//                                                     divide): then by rows (sequence-parallel)
//       MatMul/Gemm with weights, input split on K -> row-parallel (weights split by row; partial
//                                                     sums, all-reduced right after the node)
//         (so consecutive pairs are Megatron's column- then row-parallel, one all-reduce a pair)
//       MatMul/Gemm with weights, input split on a row/batch axis -> stays split (weights whole)
//       MatMul of two activations (attention)      -> split on a batch axis (heads) both share,
//                                                     else on M or N, else partial sums over K
//       Conv, input whole or split by rows         -> by batch when the batch divides by N (no
//                                                     communication at all), else by output rows
//                                                     (spatial partitioning: each chip its rows,
//                                                     the weights whole, a halo of kernel rows
//                                                     exchanged with the neighbours first), else
//                                                     (fewer output rows than chips) by output
//                                                     channels (whole groups)
//       Conv, input split by channels              -> grouped/depthwise: by groups (no
//                                                     communication); else partial sums over the
//                                                     input channels, all-reduced (the row-parallel
//                                                     half of a pair)
//   - the other nodes follow their inputs' split when it commutes with them (elementwise ops,
//     views that keep the split axis whole, transposes, splits and slices of whole pieces,
//     reductions and normalisations over other axes); where it does not, the split input is
//     all-gathered first and the node runs on every chip (vector and DMA work replicated, as
//     Megatron replicates layer norms);
//   - a whole tensor is read in any split for free (each chip slices its part).
// Dims that N does not divide are split unevenly (chip c takes [c d / N, (c + 1) d / N)), as
// GSPMD pads the last shard; collectives move the padded size. Never an error; the summary
// counts them (a warning).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class GraphProto;
}

namespace xpu::onnxfe {

using Dims = std::vector<std::int64_t>;

// How one node runs, as the front end planned it.
enum class NodeKind { CompileTime, Skipped, Runtime };

struct Sharding {
    std::vector<std::pair<std::string, int>> gather;  // tensors all-gathered before the node (whole
                                                      // afterwards), with the axis each was split on
    std::map<std::string, int> in_axis;  // the part of each input the node reads (-1 or absent: whole)
    std::vector<int> out_axis;           // per output: the split axis, -1 whole
    bool all_reduce = false;             // outputs are partial sums: all-reduced right after the node
    bool uneven = false;                 // a split dim that tp does not divide
    bool halo = false;                   // Conv/pool split by output rows: input 0 (split by rows,
                                         // axis 2) needs its neighbours' boundary rows first
    std::string rule;                    // which rule applied, e.g. "column-parallel"
};

struct ShardingInputs {
    const onnx::GraphProto* graph = nullptr;
    std::vector<NodeKind> kinds;                                        // per node
    std::function<const Dims*(const std::string&)> dims;                // a tensor's full shape (nullptr: unknown)
    std::function<bool(const std::string&)> compile_time;               // weights, constants
    std::function<bool(const std::string&, Dims&)> const_ints;          // a constant tensor's values
    unsigned tp = 1;
};

// One entry per node of the graph (compile-time and skipped nodes included).
std::vector<Sharding> plan_sharding(const ShardingInputs& in);

// The part [first, end) of a dim of size d that chip c of tp holds.
std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t d, unsigned c, unsigned tp);

}  // namespace xpu::onnxfe
