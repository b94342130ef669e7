#include "traces/gen/target.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace xpu::gen {

namespace {

// "32MiB", "16 KiB", "1GiB", "4096": bytes.
std::uint64_t parse_bytes(const std::string& file, const std::string& key, const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(i);
    unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
    const std::uint64_t mult = unit.empty() || unit == "B" ? 1 : unit == "KiB" ? 1ull << 10 : unit == "MiB" ? 1ull << 20
                               : unit == "GiB" ? 1ull << 30 : 0;
    if (i == 0 || !mult) throw TargetError(file + ": " + key + ": expected bytes such as 32MiB, got '" + text + "'");
    return std::stoull(text.substr(0, i)) * mult;
}

// Every module under chip.modules, by its dotted path ("core0.mxu0", "dma0"): its node and type.
struct Module {
    std::string path, type;
    YAML::Node node;
};

void collect(const YAML::Node& n, const std::string& path, std::vector<Module>& out) {
    if (!n.IsMap()) return;
    if (n["type"] && n["type"].IsScalar()) {
        out.push_back({path, n["type"].as<std::string>(), n});
        return;
    }
    for (const auto& kv : n) collect(kv.second, path.empty() ? kv.first.as<std::string>() : path + "." + kv.first.as<std::string>(), out);
}

unsigned unsigned_key(const std::string& file, const Module& m, const char* key, unsigned dflt) {
    try {
        return m.node[key] ? m.node[key].as<unsigned>() : dflt;
    } catch (const YAML::Exception&) {
        throw TargetError(file + ": chip.modules." + m.path + "." + key + ": expected a positive integer");
    }
}

std::string trim(std::string x) {
    const auto b = x.find_first_not_of(" \t"), e = x.find_last_not_of(" \t");
    return b == std::string::npos ? "" : x.substr(b, e - b + 1);
}

// The path of core 0's scalar core ("core0.scalar"), or "" if there is none.
std::string core0_scalar(const std::string& file, const std::vector<Module>& mods) {
    for (const Module& m : mods)
        if (m.type == "ScalarCore" && unsigned_key(file, m, "core", 0) == 0) return m.path;
    return "";
}

// The modules core 0's scalar core (at `scalar`) is bound to, per role ("mxu", "vpu", "dma"), from
// chip.bindings ("core0.scalar.mxu[3] -> core0.mxu3.cmd"): a trace's stream runs on core 0 and
// can use only those. Empty where the description binds nothing to such a core.

std::map<std::string, std::vector<std::string>> bound_to_core0(const YAML::Node& chip, const std::string& scalar) {
    std::map<std::string, std::vector<std::string>> by_role;
    const YAML::Node bindings = chip["bindings"];
    if (scalar.empty() || !bindings || !bindings.IsSequence()) return by_role;
    for (const auto& b : bindings) {
        if (!b.IsScalar()) continue;
        const std::string text = b.as<std::string>();
        const auto arrow = text.find("->");
        if (arrow == std::string::npos) continue;
        const std::string from = trim(text.substr(0, arrow)), to = trim(text.substr(arrow + 2));
        if (from.compare(0, scalar.size() + 1, scalar + ".") != 0) continue;
        const std::string port = from.substr(scalar.size() + 1);
        const std::string role = port.substr(0, port.find('['));
        const auto dot = to.rfind('.');
        if (dot != std::string::npos) by_role[role].push_back(to.substr(0, dot));
    }
    return by_role;
}

}  // namespace

Target read_target(const std::string& file) {
    YAML::Node root;
    try {
        root = YAML::LoadFile(file);
    } catch (const YAML::BadFile&) {
        throw TargetError(file + ": cannot open");
    } catch (const YAML::Exception& e) {
        throw TargetError(file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    const YAML::Node mods = root["chip"] ? root["chip"]["modules"] : YAML::Node();
    if (!mods || !mods.IsMap()) throw TargetError(file + ": expected a platform description with chip.modules");
    std::vector<Module> all;
    collect(mods, "", all);
    // Core 0's own units where the bindings say which they are (a chip of several cores: the
    // others' units are not the trace's); else every unit of the chip.
    const std::string scalar = core0_scalar(file, all);
    const auto bound = bound_to_core0(root["chip"], scalar);
    // Core 0's VMEM: the one beside its scalar core ("core0.vmem" for "core0.scalar"), else the first.
    const std::string group = scalar.find('.') == std::string::npos ? "" : scalar.substr(0, scalar.rfind('.') + 1);
    const Module* vmem = nullptr;
    for (const Module& m : all)
        if (m.type == "Vmem" && (!vmem || (!group.empty() && m.path.compare(0, group.size(), group) == 0 &&
                                           vmem->path.compare(0, group.size(), group) != 0)))
            vmem = &m;
    auto in_core0 = [&](const Module& m, const char* role) {
        auto it = bound.find(role);
        if (it == bound.end() || it->second.empty()) return true;
        return std::find(it->second.begin(), it->second.end(), m.path) != it->second.end();
    };
    Target t;
    t.mxus = t.vpus = t.dma_engines = 0;
    bool first_mxu = true;
    for (const Module& m : all) {
        if (m.type == "MatrixUnit" && in_core0(m, "mxu")) {
            const unsigned rows = unsigned_key(file, m, "rows", 128), cols = unsigned_key(file, m, "cols", 128);
            if (first_mxu) {
                t.mxu_rows = rows;
                t.mxu_cols = cols;
                first_mxu = false;
            } else if (rows != t.mxu_rows || cols != t.mxu_cols) {
                throw TargetError(file + ": chip.modules." + m.path + ": matrix units of different sizes (" + std::to_string(rows) + "x" +
                                  std::to_string(cols) + " and " + std::to_string(t.mxu_rows) + "x" +
                                  std::to_string(t.mxu_cols) + "): the generators tile for one size");
            }
            ++t.mxus;
        } else if (m.type == "VectorUnit" && in_core0(m, "vpu")) {
            ++t.vpus;
        } else if (m.type == "DmaEngine" && in_core0(m, "dma")) {
            ++t.dma_engines;
        }
    }
    if (vmem)
        t.vmem_bytes = vmem->node["capacity"]
                           ? parse_bytes(file, "chip.modules." + vmem->path + ".capacity", vmem->node["capacity"].as<std::string>())
                           : 32ull << 20;
    if (const YAML::Node topo = root["topology"]; topo && topo.IsMap() && topo["kind"] && topo["kind"].IsScalar() &&
                                                   topo["kind"].Scalar().rfind("torus", 0) == 0 && topo["dims"] && topo["dims"].IsSequence()) {
        for (const YAML::Node& d : topo["dims"]) {
            unsigned x = 0;
            if (!d.IsScalar() || !YAML::convert<unsigned>::decode(d, x) || x == 0)
                throw TargetError(file + ": topology.dims: expected a list of positive numbers");
            t.torus_dims.push_back(x);
        }
    }
    if (first_mxu) throw TargetError(file + ": no MatrixUnit under chip.modules: nothing to tile matmuls for");
    if (!t.vpus) throw TargetError(file + ": no VectorUnit under chip.modules");
    if (!t.dma_engines) throw TargetError(file + ": no DmaEngine under chip.modules");
    return t;
}

TileConfig tiles_for(const Target& t, TileConfig c) {
    if (t.mxu_rows != t.mxu_cols)
        throw TargetError("--platform: " + std::to_string(t.mxu_rows) + "x" + std::to_string(t.mxu_cols) +
                          " matrix units: the generators tile for square arrays");
    c.dim = t.mxu_rows;
    c.mxus = std::min(t.mxus, 8u);  // the accumulator registers split over at most 8
    c.vpus = t.vpus;
    c.dma_engines = t.dma_engines;
    c.vec_base = t.vmem_bytes / 4 * 3;  // configs/xpu.yaml's 32 MiB: 24 MiB, the fixed layout's
    // Matmul buffers: three A and B buffers and a C block (lowering.cpp); own A tiles per MXU
    // when narrow problems run side by side.
    const std::uint64_t eb = dtype_bytes(c.dtype), d = c.dim, m = c.mxus;
    auto footprint = [&](std::uint64_t tile_m) { return 3 * (tile_m * d * eb * m + d * d * eb * m) + tile_m * m * d * eb; };
    unsigned tile_m = c.tile_m;
    while (tile_m > 8 && footprint(tile_m) > c.vec_base) tile_m -= 8;
    if (footprint(tile_m) > c.vec_base)
        throw TargetError("--platform: " + std::to_string(t.vmem_bytes) + " bytes of VMEM cannot hold the matmul buffers of " +
                          std::to_string(m) + " " + std::to_string(d) + "x" + std::to_string(d) + " matrix units");
    c.tile_m = tile_m;
    return c;
}

}  // namespace xpu::gen
