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
#include <unordered_map>
#include <vector>

#include "models/scalar_core.h"
#include "models/xpu_module.h"
#include "platform/platform_config.h"
#include "traces/trace_reader.h"

namespace xpu {
class IciLink;
}

namespace xpu::platform {

// The VMEM a core's `vmem:ADDR` operands address (vld, vst, and its DMAs' vmem: operands, also
// `vmem@C:` on another chip, whose VMEM of the same core it is: chips are identical).
struct CoreVmem {
    std::uint64_t base = 0;  // global address of its byte 0
    std::string target;      // its module (path in the chip); "" when not one VMEM (see below)
};

// Where each memory space starts, as the models compute global addresses (space base + operand
// address), decided once here for the builder, the pre-run check (platform/simulation.cpp) and
// the transaction log's header (platform/txlog_meta.cpp).
//  - hbm: the lowest base among the address map's hbm entries (the chip's HBM, shared by its cores).
//  - vmem: `vmem:ADDR` is an offset into the issuing core's own VMEM (docs/trace-format.md). With
//    one vmem entry in the map, every core addresses it (one VMEM, shared). With several, core K's
//    is the one mapped VMEM its vector units' `mem` sockets are bound to, else the one mapped VMEM
//    in the same container as its ScalarCore (core0.vmem beside core0.scalar). A chip with one core
//    where neither decides keeps the lowest vmem base (its vmem entries form one space, e.g.
//    banks); with several cores that is a ConfigError naming the core and the candidates.
struct SpaceBases {
    std::array<std::uint64_t, 2> base{};  // by Space (Vmem: the lowest vmem base, Hbm)
    std::array<bool, 2> has{};            // the map has an entry of that space
    std::optional<std::uint64_t> flags;   // the sync flags' window, if mapped
    std::map<std::uint16_t, CoreVmem> vmem_of_core;  // by core id, every core of the chip

    // The VMEM base of core `core` (the lowest vmem base for a core id the chip does not have).
    std::uint64_t vmem_base(std::uint16_t core) const;
    // vmem_base() of core ids 0..the highest core id, for models (DmaEngineConfig::core_vmem_base).
    std::vector<std::uint64_t> vmem_bases() const;
};
// Throws ConfigError when a multi-core chip's VMEMs cannot be assigned to its cores (above).
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
    const SpaceBases& spaces() const { return spaces_; }  // what the models were given (space_bases)
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
    std::vector<std::unordered_map<std::string, XpuModule*>> chip_by_path_;  // per chip: path in the description -> module
    std::vector<LinkPlan> link_plan_;
    IciSwitch* switch_ = nullptr;  // topology switch: the crossbar
    SpaceBases spaces_;
};

}  // namespace xpu::platform
