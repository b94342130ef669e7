// The scalar keys of a run's effective platform description (OUT/platform.yaml, which sim_main
// writes with --dump-config's emitter: block mappings, one "key: value" a line, lists in flow
// style). The analysis needs no YAML library for it: it reads the mappings' scalars into dotted
// keys ("chip.modules.hbm.channel_bandwidth_gbps" -> "37.5") and skips lists, which is all the
// sensitivity table (analysis/sensitivity.h) asks of it. Not a general YAML reader.
#pragma once

#include <map>
#include <string>

namespace xpu::analysis {

using PlatformKeys = std::map<std::string, std::string>;

// Empty if the file cannot be read.
PlatformKeys read_platform_keys(const std::string& path);

}  // namespace xpu::analysis
