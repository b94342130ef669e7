#include "traces/gen/target.h"

#include <algorithm>
#include <cctype>

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

void walk(const std::string& file, const YAML::Node& n, const std::string& path, Target& t, bool& first_mxu) {
    if (!n.IsMap()) return;
    if (n["type"] && n["type"].IsScalar()) {
        const std::string type = n["type"].as<std::string>();
        auto u = [&](const char* key, unsigned dflt) {
            try {
                return n[key] ? n[key].as<unsigned>() : dflt;
            } catch (const YAML::Exception&) {
                throw TargetError(file + ": " + path + "." + key + ": expected a positive integer");
            }
        };
        if (type == "MatrixUnit") {
            const unsigned rows = u("rows", 128), cols = u("cols", 128);
            if (first_mxu) {
                t.mxus = 0;
                t.mxu_rows = rows;
                t.mxu_cols = cols;
                first_mxu = false;
            } else if (rows != t.mxu_rows || cols != t.mxu_cols) {
                throw TargetError(file + ": " + path + ": matrix units of different sizes (" + std::to_string(rows) + "x" +
                                  std::to_string(cols) + " and " + std::to_string(t.mxu_rows) + "x" +
                                  std::to_string(t.mxu_cols) + "): the generators tile for one size");
            }
            ++t.mxus;
        } else if (type == "VectorUnit") {
            ++t.vpus;
        } else if (type == "DmaEngine") {
            ++t.dma_engines;
        } else if (type == "Vmem") {
            t.vmem_bytes = n["capacity"] ? parse_bytes(file, path + ".capacity", n["capacity"].as<std::string>()) : 32ull << 20;
        }
        return;
    }
    for (const auto& kv : n) walk(file, kv.second, path + "." + kv.first.as<std::string>(), t, first_mxu);
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
    Target t;
    t.vpus = t.dma_engines = 0;
    bool first_mxu = true;
    walk(file, mods, "chip.modules", t, first_mxu);
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
