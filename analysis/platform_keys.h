// The scalar keys of a run's effective platform description (OUT/platform.yaml, which sim_main
// writes with --dump-config's emitter: block mappings, one "key: value" a line, lists in flow
// style). The analysis needs no YAML library for it: it reads the mappings' scalars into dotted
// keys ("chip.modules.hbm.channel_bandwidth_gbps" -> "37.5") and skips lists, which is all the
// sensitivity table (analysis/sensitivity.h) asks of it. Not a general YAML reader.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace xpu::analysis {

using PlatformKeys = std::map<std::string, std::string>;

// Empty if the file cannot be read.
PlatformKeys read_platform_keys(const std::string& path);

// The matrix sockets of the bindings list ("- core0.scalar.mxu[4] -> core0.mxu4.cmd"), which
// read_platform_keys skips: the scalar core's module, the socket, the matrix unit's module.
struct MatrixBinding {
    std::string scalar;  // "core0.scalar"
    int socket = -1;
    std::string unit;    // "core0.mxu4"
};
std::vector<MatrixBinding> read_matrix_bindings(const std::string& path);

}  // namespace xpu::analysis
