// Elaborates a PlatformConfig: instantiates every chip's modules under `xpu.chipN` (nested
// SystemC modules follow the description's nesting), derives what the description implies
// (address-map routes, memory bases, which trace stream each core runs), and binds the TLM
// sockets as listed. Any mismatch is a ConfigError naming the binding and its place.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/scalar_core.h"
#include "models/xpu_module.h"
#include "platform/platform_config.h"
#include "traces/trace_reader.h"

namespace xpu::platform {

class Platform {
public:
    // `trace` may be null (elaborate without running anything, e.g. to check a description).
    Platform(const PlatformConfig& cfg, const trace::TraceFile* trace);
    ~Platform();

    const std::vector<XpuModule*>& modules() const { return modules_; }
    const std::vector<ScalarCore*>& cores() const { return cores_; }
    XpuModule* find(const std::string& full_name) const;
    void set_recorder(Recorder* r);

private:
    std::vector<std::unique_ptr<sc_core::sc_module>> owned_;
    std::vector<XpuModule*> modules_;
    std::vector<ScalarCore*> cores_;
};

}  // namespace xpu::platform
