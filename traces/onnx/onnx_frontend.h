// The ONNX front end of xpu_tracegen: reads a model's graph (shapes only: weights may be absent,
// external or graph inputs without data), infers every tensor's shape, and lowers the nodes in
// graph order through the same code generator as the other workloads (traces/gen/lowering.h),
// the way a compiler for this chip would:
//   Conv (any stride, padding, dilation, groups)  -> matmuls on the MXUs: implicit GEMM with
//       M = N x Ho x Wo, K = C/G x kh x kw, N = O/G per group; grouped and depthwise
//       convolutions pack several groups block-diagonally into one weight tile (Matmul::packed);
//   MatMul (batched, broadcast), Gemm (transposed operands: strided DMAs, bias in the epilogue)
//       -> matmuls;
//   BatchNormalization after a Conv -> folded into the Conv's weights (free), else a vector pass;
//   LayerNormalization, Softmax, activations, elementwise ops, pooling, reductions -> vector
//       passes over HBM;
//   Transpose -> a permute pass; Concat, Split, Slice, Gather, Expand, Pad -> DMAs;
//   Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout -> free (the view changes);
//   nodes computing from constants, weights and shapes only (Shape, Constant, shape arithmetic,
//       weight slicing) -> evaluated at compile time (free).
// Every instruction is annotated "<prefix>/<node name>/<step>" (the node's name, without a
// leading '/', or "<OpType>_<index>" when it has none), so the analysis rolls up
// model -> node -> instruction.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/gen/lowering.h"
#include "traces/trace_writer.h"

namespace xpu::onnxfe {

// Bad model or option: the message names the file, the node or tensor, and what was expected.
struct OnnxError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct OnnxParams {
    std::string path;
    std::uint64_t batch = 1;  // symbolic dims named like "batch" / "N"
    std::uint64_t seq = 0;    // symbolic dims named like "seq" / "sequence" (0: not given)
    bool skip_unsupported = false;  // --unsupported=skip
    unsigned tp = 1;                // tensor-parallel chips (traces/onnx/sharding.h: the rule)
    std::string prefix = "model";
    gen::TileConfig tiles;
};

struct NodeReport {
    std::string name, op;
    std::uint64_t flops = 0;      // 2 x MACs of the node (Conv, Gemm, MatMul), summed over the chips
    std::string how;              // "mxu", "vector", "dma", "free", "folded", "compile-time", "skipped"
    std::string split;            // --tp > 1: the sharding rule that applied (sharding.h)
    unsigned all_gathers = 0;     // --tp > 1: inputs all-gathered before the node
    bool all_reduce = false;      // --tp > 1: outputs all-reduced after it
};

struct OnnxSummary {
    std::uint64_t instructions = 0, flops = 0, hbm_bytes_read = 0, hbm_bytes_written = 0;  // over every chip
    std::uint64_t remote_bytes = 0;                 // sent between chips by the collectives
    std::vector<std::uint64_t> chip_instructions;   // per stream (chip c, core 0)
    unsigned all_gathers = 0, all_reduces = 0;      // collectives per chip
    unsigned halo_exchanges = 0;                    // nodes split by output rows (neighbours' rows sent first)
    std::vector<std::string> uneven;                // nodes with a dim --tp does not divide
    std::vector<NodeReport> nodes;
    std::map<std::string, unsigned> skipped;  // op type -> nodes skipped (--unsupported=skip)
};

// The op types the front end lowers, sorted.
std::vector<std::string> supported_ops();

// Reads, infers and lowers the model into one stream per chip (chip c, core 0; tp chips) of `w`,
// with the collectives of the sharding between the nodes. Throws OnnxError
// (nothing is added to `w` before the whole graph has been checked, so the caller can discard
// the output).
OnnxSummary emit_onnx(trace::TraceWriter& w, const OnnxParams& p);

}  // namespace xpu::onnxfe
