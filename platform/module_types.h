// The registry of module types a platform description can instantiate: a type name maps to a
// model, its config struct (whose params part declares the type's keys, models/params.h) and
// what the builder fills into it. The models themselves never see YAML. Adding a model = one
// entry in the shipped list (module_types.cpp), or one register_module_type() from outside.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/interconnect.h"
#include "models/xpu_module.h"
#include "platform/param_catalog.h"

namespace xpu::trace {
class TraceFile;
}

namespace xpu::platform {

// What the builder knows about the chip a module lands on.
struct BuildContext {
    std::uint16_t chip = 0;
    Tick cycle = 1000;     // chip clock period, ps
    std::array<std::uint64_t, 2> space_base{};  // Space::Vmem (the lowest vmem base), Space::Hbm
    std::vector<std::uint64_t> core_vmem_base;   // DmaEngine: each core's VMEM base, by core id (builder.h)
    std::uint64_t vmem_base = 0;                 // VectorUnit: the VMEM base of the core that commands it
    const trace::TraceFile* trace = nullptr;
    std::optional<std::size_t> stream;  // TraceInjector: which stream it plays; ScalarCore: runs
    std::vector<AddressRange> routes;   // Interconnect: its address map
    unsigned cores = 1;                 // SyncFlags: barrier participants
    std::optional<std::uint64_t> base;  // memories: where the address map put them
    std::optional<std::uint64_t> flags_base;  // DmaEngine: the chips' SyncFlags window, if mapped
    std::vector<unsigned> dims;         // IciPort: the torus
    unsigned links_per_neighbour = 1;
    bool switched = false;              // IciPort: topology switch (every other chip via links[0])
};

// A module of the description before elaboration: its parameters (a ParamSet, read from its
// mapping in the description), what the loader needs to know of it, and how to build it.
class ModuleSpec : public ParamSet {
public:
    // Memories: bytes they serve (the address map gives them a base).
    virtual std::optional<std::uint64_t> capacity() const { return std::nullopt; }
    // ScalarCore: the core id of the trace stream it runs.
    virtual std::optional<std::uint16_t> core_id() const { return std::nullopt; }
    virtual std::unique_ptr<XpuModule> build(const std::string& name, const BuildContext& ctx) const = 0;
};

// The spec of a model whose config is Config (its params struct plus what the builder fills in).
template <class Config>
class ConfigSpec : public ModuleSpec {
public:
    void declare(ParamVisitor& v) override { config_.declare(v); }
    const Config& config() const { return config_; }

protected:
    Config config_;
};

// How a model becomes a module of the description: what the builder fills into its config, and
// (optionally) what the loader asks of it.
template <class Config>
struct ModelRecipe {
    void (*fill)(Config&, const BuildContext&) = nullptr;
    std::optional<std::uint64_t> (*capacity)(const Config&) = nullptr;
    std::optional<std::uint16_t> (*core_id)(const Config&) = nullptr;
};

template <class Model, class Config>
class ModelSpec : public ConfigSpec<Config> {
public:
    explicit ModelSpec(ModelRecipe<Config> r) : recipe_(r) {}
    std::optional<std::uint64_t> capacity() const override {
        return recipe_.capacity ? recipe_.capacity(this->config_) : std::nullopt;
    }
    std::optional<std::uint16_t> core_id() const override {
        return recipe_.core_id ? recipe_.core_id(this->config_) : std::nullopt;
    }
    std::unique_ptr<XpuModule> build(const std::string& name, const BuildContext& ctx) const override {
        Config k = this->config_;
        if (recipe_.fill) recipe_.fill(k, ctx);
        return std::make_unique<Model>(name.c_str(), k);
    }

private:
    ModelRecipe<Config> recipe_;
};

struct ModuleType {
    std::string name;
    std::string doc;
    std::function<std::unique_ptr<ModuleSpec>()> make;
};

// The type `name` of Model, configured by Config (whose declare() names its keys).
template <class Model, class Config>
ModuleType model_type(std::string name, std::string doc, ModelRecipe<Config> recipe = {}) {
    return {std::move(name), std::move(doc), [recipe] { return std::make_unique<ModelSpec<Model, Config>>(recipe); }};
}

// The shipped types, then any registered since; a name is registered once.
const std::vector<ModuleType>& module_types();
const ModuleType* find_module_type(const std::string& name);
// Adds a type (a model outside xpusim, a test's): descriptions can then name it in `type:`; the
// builder, the log header, the waveforms and the run's accounting ask the module itself
// (XpuModule: role, facts, waveforms), so nothing else needs to know it. Throws
// std::logic_error on a taken name.
void register_module_type(ModuleType type);

// Registers a type at static initialisation: `static ModuleTypeRegistrar r{model_type<...>(...)};`
struct ModuleTypeRegistrar {
    explicit ModuleTypeRegistrar(ModuleType type) { register_module_type(std::move(type)); }
};

// The typed config of a declared module, or null if it is not of that config type.
template <class Config>
const Config* config_of(const ModuleSpec& spec) {
    auto* s = dynamic_cast<const ConfigSpec<Config>*>(&spec);
    return s ? &s->config() : nullptr;
}

}  // namespace xpu::platform
