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
    std::string prefix = "model";
    gen::TileConfig tiles;
};

struct NodeReport {
    std::string name, op;
    std::uint64_t flops = 0;      // 2 x MACs of the node (Conv, Gemm, MatMul)
    std::string how;              // "mxu", "vector", "dma", "free", "folded", "compile-time", "skipped"
};

struct OnnxSummary {
    std::uint64_t instructions = 0, flops = 0, hbm_bytes_read = 0, hbm_bytes_written = 0;
    std::vector<NodeReport> nodes;
    std::map<std::string, unsigned> skipped;  // op type -> nodes skipped (--unsupported=skip)
};

// The op types the front end lowers, sorted.
std::vector<std::string> supported_ops();

// Reads, infers and lowers the model into one stream (chip 0, core 0) of `w`. Throws OnnxError
// (nothing is added to `w` before the whole graph has been checked, so the caller can discard
// the output).
OnnxSummary emit_onnx(trace::TraceWriter& w, const OnnxParams& p);

}  // namespace xpu::onnxfe
