// A platform description, loaded strictly from YAML (see docs/platform.md): the simulation
// settings, the chip count and clock, one chip's module instances (nested mappings mirror the
// SystemC hierarchy: a mapping with `type` is a module, one without is a container), its
// address map and its socket bindings. Every value is checked here, with file:line:col.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/instruction.h"
#include "platform/module_types.h"

namespace xpu::platform {

struct ModuleDecl {
    std::string path;   // within the chip, dotted: "core0.mxu0"
    std::string type;
    std::unique_ptr<ModuleSpec> spec;
    std::string where;  // file:line:col of its declaration
};

struct SocketName {
    std::string module;  // dotted path within the chip
    std::string socket;
    int index = -1;      // [i] for multi sockets, -1 when not given
    std::string text() const;
};

struct BindingDecl {
    SocketName from, to;
    std::string where;
    std::string text;
};

struct AddressMapEntry {
    Space space = Space::Hbm;
    std::string target;
    std::uint64_t base = 0;
    std::string where;
};

struct PlatformConfig {
    std::string file;
    std::string name;
    double quantum_ns = 1000;
    unsigned chips = 1;
    double clock_ghz = 1.0;
    std::vector<ModuleDecl> modules;
    std::vector<AddressMapEntry> address_map;
    std::vector<BindingDecl> bindings;
    YAML::Node effective;  // the description with every default filled in

    const ModuleDecl* module(const std::string& path) const;
};

// Loads FILE, applies each `--set KEY.PATH=VALUE`, validates; throws ConfigError.
PlatformConfig load_platform(const std::string& file, const std::vector<std::string>& sets = {});
// The effective configuration as YAML text.
std::string dump_config(const PlatformConfig& cfg);

}  // namespace xpu::platform
