// What the generators tile for, read from a platform description (--platform FILE): the units
// core 0 of a chip can use (a trace's stream runs there): its matrix units (count and size),
// vector units and DMA engines, as chip.bindings binds them to core 0's scalar core (every unit
// of the chip where nothing is bound to it), and its VMEM capacity.
//
// traces/ is the base of the project and may not use platform/ (tests/layering), so this is a
// minimal reader of the few keys it needs, with yaml-cpp: modules are found by their `type`
// anywhere under chip.modules, and a key a module leaves out takes its model's default
// (models/*.h; tests/e2e/tracegen.sh checks that a description and its `sim_main --dump-config`,
// every default filled in, give the same target, so a default changed there cannot drift).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/gen/lowering.h"

namespace xpu::gen {

struct Target {
    unsigned mxus = 8, mxu_rows = 128, mxu_cols = 128;
    unsigned vpus = 1, dma_engines = 4;
    std::uint64_t vmem_bytes = 32ull << 20;
    // The chips' torus, X first (topology.dims where topology.kind is a torus; empty otherwise):
    // what a collective over every chip is lowered on (analysis/relower.h).
    std::vector<unsigned> torus_dims;
};

struct TargetError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws TargetError naming the file (and the key) on a description it cannot use.
Target read_target(const std::string& platform_yaml);

// The tiling for `t`: dim = the MXU size, up to 8 MXUs, every vector unit and DMA engine, the
// vector passes' buffers in the top quarter of VMEM and matmul row blocks (tile_m, at most
// `base.tile_m`) that fit below them. Everything else (dtype, planted options) from `base`.
// Throws TargetError when the platform cannot be tiled for (non-square MXUs, VMEM too small).
TileConfig tiles_for(const Target& t, TileConfig base);

}  // namespace xpu::gen
