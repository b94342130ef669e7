// A platform description, loaded strictly from YAML (see docs/platform.md): the simulation
// settings, the chip count and clock, one chip's module instances (nested mappings mirror the
// SystemC hierarchy: a mapping with `type` is a module, one without is a container), its
// address map and its socket bindings. Every value is checked here, with file:line:col.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/ici.h"
#include "traces/instruction.h"
#include "platform/config_error.h"
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

// What an address-map entry holds: a memory space instructions name (vmem, hbm), the chip's
// sync flags (for completion flags written by other chips), or the window of remote addresses
// served by the chip's IciPort.
enum class Window { Vmem, Hbm, Flags, Remote };

struct AddressMapEntry {
    Window window = Window::Hbm;
    std::string target;
    std::uint64_t base = 0;
    std::string where;
};

// The description's own mappings, each declared once like a model's parameters
// (models/params.h): the same declarations read the YAML, fill --dump-config and write the
// reference (sim_main --list-types, docs/platform.md).

// The top level; its mappings sim, chip and topology have their own structs.
struct DescriptionParams {
    unsigned xpusim = 1;  // format version
    std::string name;
    unsigned chips = 1;
    void declare(ParamVisitor& v);
};

struct SimParams {
    double quantum_ns = 1000;
    void declare(ParamVisitor& v);
};

// One chip: its clock; its modules, address map and bindings are read by the loader.
struct ChipParams {
    double clock_ghz = 1.0;
    void declare(ParamVisitor& v);
};

// One entry of chip.address_map, as written.
struct AddressMapParams {
    std::string space;  // vmem, hbm, flags or remote
    std::string target;
    std::uint64_t base = 0;
    void declare(ParamVisitor& v);
};

// How the chips connect: a ring or torus of `dims` (product = chips), with one IciLink per
// direction per neighbour (times links_per_neighbour).
struct TopologyParams {
    std::string kind = "none";  // none (one chip), ring, torus2d, torus3d, switch
    unsigned links_per_neighbour = 1;
    void declare(ParamVisitor& v);
};

struct Topology : TopologyParams {
    std::vector<unsigned> dims;  // its length depends on kind: read by the loader
    IciLinkConfig link;
    IciSwitchParams crossbar;  // kind switch: topology.switch
};

struct PlatformConfig : DescriptionParams, SimParams, ChipParams {
    std::string file;
    Topology topology;
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
