// SCALE-Sim topologies (github.com/scalesim-project/scale-sim-v2, topologies/): one matmul
// problem per row, lowered by Lowering::matmuls and annotated "<prefix>/<layer name>/<step>".
//   conv format: Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels,
//                Num Filter, Strides[, ...]   (SCALE-Sim's convention: no padding, and an output
//                of ceil((H - R + stride) / stride) x ceil((W - S + stride) / stride));
//                as a GEMM: M = output pixels, N = filters, K = R x S x channels;
//   GEMM format: Layer, M, N, K   (C[M x N] = A[M x K] B[K x N], as SCALE-Sim reads it).
// The format is told by the header row. Trailing commas and blank lines are accepted.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/gen/lowering.h"

namespace xpu::gen {

struct TopologyLayer {
    std::string name;
    std::uint64_t m = 0, n = 0, k = 0;
};

// Bad file: the message names the file, the line and what was expected.
struct TopologyError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Reads a SCALE-Sim topology file (either format) into its GEMMs. Throws TopologyError.
std::vector<TopologyLayer> read_scalesim_topology(const std::string& path);

// Emits every layer, one after the other (each ends with its results in HBM).
void emit_topology(Emitter& e, const TileConfig& t, const std::vector<TopologyLayer>& layers,
                   const std::string& prefix = "scalesim");

}  // namespace xpu::gen
