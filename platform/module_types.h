// The registry of module types a platform description can instantiate. Each type declares its
// parameters once (name, range, unit, meaning) by reading them into its model's plain config
// struct; the models themselves never see YAML. Adding a model = one entry here.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/interconnect.h"
#include "models/xpu_module.h"
#include "platform/param_reader.h"

namespace xpu::trace {
class TraceFile;
}

namespace xpu::platform {

// What the builder knows about the chip a module lands on.
struct BuildContext {
    std::uint16_t chip = 0;
    Tick cycle = 1000;     // chip clock period, ps
    Tick quantum = 1'000'000;
    std::array<std::uint64_t, 2> space_base{};  // Space::Vmem, Space::Hbm
    const trace::TraceFile* trace = nullptr;
    std::optional<std::size_t> stream;  // TraceInjector: which stream it plays
    std::vector<AddressRange> routes;   // Interconnect: its address map
    unsigned cores = 1;                 // SyncFlags: barrier participants
    std::optional<std::uint64_t> base;  // memories: where the address map put them
    std::optional<std::uint64_t> flags_base;  // DmaEngine: the chips' SyncFlags window, if mapped
    std::vector<unsigned> dims;         // IciPort: the torus
    unsigned links_per_neighbour = 1;
};

class ModuleSpec {
public:
    virtual ~ModuleSpec() = default;
    virtual void params(ParamReader& p) = 0;
    // Memories: bytes they serve (the address map gives them a base).
    virtual std::optional<std::uint64_t> capacity() const { return std::nullopt; }
    // ScalarCore: the core id of the trace stream it runs.
    virtual std::optional<std::uint16_t> core_id() const { return std::nullopt; }
    virtual std::unique_ptr<XpuModule> build(const std::string& name, const BuildContext& ctx) const = 0;
};

struct ModuleType {
    std::string name;
    std::string doc;
    std::function<std::unique_ptr<ModuleSpec>()> make;
};

const std::vector<ModuleType>& module_types();
// Adds a type (a model of one's own, a test's): descriptions can then name it in `type:`; the
// builder, the log header, the waveforms and the run's accounting ask the module itself
// (XpuModule: role, facts, waveforms), so nothing else needs to know it. Throws
// std::invalid_argument if the name is taken.
void register_module_type(ModuleType t);
const ModuleType* find_module_type(const std::string& name);
// Human-readable reference of every type's parameters (sim_main --list-types).
std::string describe_module_types();

}  // namespace xpu::platform
