// Elaborates a PlatformConfig: instantiates every chip's modules under `xpu.chipN` (nested
// SystemC modules follow the description's nesting), derives what the description implies
// (address-map routes, memory bases, which trace stream each core runs), and binds the TLM
// sockets as listed. Any mismatch is a ConfigError naming the binding and its place.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/scalar_core.h"
#include "models/xpu_module.h"
#include "platform/platform_config.h"
#include "traces/trace_reader.h"

namespace xpu {
class IciLink;
}

namespace xpu::platform {

// Where each memory space starts, as the models compute global addresses (space base + operand
// address): the lowest base among the address map's entries of that window.
struct SpaceBases {
    std::array<std::uint64_t, 2> base{};  // by Space (Vmem, Hbm)
    std::array<bool, 2> has{};            // the map has an entry of that space
    std::optional<std::uint64_t> flags;   // the sync flags' window, if mapped
};
SpaceBases space_bases(const PlatformConfig& cfg);

// The bindings of each initiator socket ("module.socket", module as in the description), in
// socket-index order: the explicit indices [i], or the order of the description. Throws
// ConfigError if a socket's bindings mix both forms or their indices are not 0..n-1.
using BindingOrder = std::map<std::string, std::vector<const BindingDecl*>>;
BindingOrder binding_order(const PlatformConfig& cfg);
// The modules bound to `module.socket`, in socket-index order (empty if none).
std::vector<std::string> bound_targets(const BindingOrder& order, const std::string& module, const std::string& socket);

// Thrown by Platform's constructor when its `stop_requested` says so (a signal arrived while a
// large platform was being built: thousands of chips take seconds).
struct BuildInterrupted {};

class Platform {
public:
    // `trace` may be null (elaborate without running anything, e.g. to check a description).
    // `stop_requested`, if given, is polled between chips; it returning true throws
    // BuildInterrupted.
    Platform(const PlatformConfig& cfg, const trace::TraceFile* trace, const std::function<bool()>& stop_requested = {});
    ~Platform();

    const std::vector<XpuModule*>& modules() const { return modules_; }
    const std::vector<ScalarCore*>& cores() const { return cores_; }
    XpuModule* find(const std::string& full_name) const;
    void set_recorder(Recorder* r);

private:
    struct Plan;
    struct LinkPlan {
        unsigned from, to;
        IciLink* link;
    };
    void build_chip(const PlatformConfig& cfg, const Plan& plan, unsigned chip);
    void build_links(const PlatformConfig& cfg);
    void connect_links(const PlatformConfig& cfg);
    void bind_chip(const PlatformConfig& cfg, const Plan& plan, unsigned chip);

    std::vector<std::unique_ptr<sc_core::sc_module>> owned_;
    std::vector<XpuModule*> modules_;
    std::vector<std::vector<XpuModule*>> chip_modules_;  // per chip: binding checks stay linear in the chip count
    std::vector<ScalarCore*> cores_;
    std::map<std::string, XpuModule*> by_path_;  // "chipN/" + path in the description
    std::vector<LinkPlan> link_plan_;
    IciSwitch* switch_ = nullptr;  // topology switch: the crossbar
};

}  // namespace xpu::platform
