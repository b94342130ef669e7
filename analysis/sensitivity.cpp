#include "analysis/sensitivity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "analysis/platform_keys.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

namespace {

// One resource: the modules of a type (or a top-level key), the parameters scaled, and whether
// more capable means larger (bandwidth) or smaller (latency, cycles per item). Keyed by the
// description's `type:`, not by role: parameter names belong to a type (another HBM model with
// role hbm would have other keys), and these are keys of a description to --set.
struct Lever {
    const char* resource;
    const char* type;  // module type, or nullptr for a top-level key
    std::vector<const char*> params;
    bool larger;
};

const std::vector<Lever>& levers() {
    static const std::vector<Lever> l = {
        {"HBM bandwidth", "HbmController", {"channel_bandwidth_gbps"}, true},
        {"HBM latency", "HbmController", {"latency_ns"}, false},
        {"DMA engine bandwidth", "DmaEngine", {"bandwidth_gbps"}, true},
        {"matrix units (rows streamed per cycle)", "MatrixUnit", {"rows_per_cycle"}, true},
        {"vector units (load/store width, transcendental and cross-lane rate)", "VectorUnit",
         {"ldst_bytes_per_cycle", "trans_cycles_per_vreg", "xlu_cycles_per_vreg"}, true},
        {"VMEM port width", "Vmem", {"port_bytes_per_cycle"}, true},
        {"chip clock (every on-chip unit)", nullptr, {"chip.clock_ghz"}, true},
        {"ICI link bandwidth", nullptr, {"topology.link.bandwidth_gbps"}, true},
        {"ICI link latency", nullptr, {"topology.link.latency_ns"}, false},
    };
    return l;
}

// Parameters counted in cycles per item get faster by dividing, like latencies.
bool per_item(const std::string& p) { return p.find("cycles_per") != std::string::npos; }

// The scaled value as text: integers stay integers (rounded towards the more capable side, at
// least 1), reals keep 6 significant digits. Empty if the value is not a plain number.
std::string scaled(const std::string& v, double factor, bool multiply) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || x <= 0) return {};
    const bool integer = v.find_first_not_of("0123456789") == std::string::npos;
    const double y = multiply ? x * factor : x / factor;
    char b[64];
    if (integer) std::snprintf(b, sizeof b, "%.0f", std::max(1.0, multiply ? std::ceil(y) : std::floor(y)));
    else std::snprintf(b, sizeof b, "%.6g", y);
    return b;
}

std::string pattern(const std::vector<std::string>& keys) {
    if (keys.size() == 1) return keys[0];
    // "chip.modules.dma0.bandwidth_gbps", "...dma1..." -> "chip.modules.dma*.bandwidth_gbps"
    std::string p = keys[0];
    for (const auto& k : keys) {
        if (k.size() != p.size()) return keys[0] + " (+" + std::to_string(keys.size() - 1) + " more)";
        for (std::size_t i = 0; i < p.size(); ++i)
            if (p[i] != k[i]) p[i] = '*';
    }
    std::string out;  // collapse runs of '*'
    for (char c : p)
        if (c != '*' || out.empty() || out.back() != '*') out += c;
    return out;
}

}  // namespace

std::vector<SensitivityLine> sensitivity_levers(const std::string& platform_yaml, double factor) {
    const PlatformKeys keys = read_platform_keys(platform_yaml);
    std::vector<SensitivityLine> out;
    for (const Lever& l : levers()) {
        SensitivityLine line;
        line.resource = l.resource;
        line.factor = factor;
        std::vector<std::string> scaled_keys;
        auto add = [&](const std::string& key, const std::string& param) {
            auto it = keys.find(key);
            if (it == keys.end()) return;
            const std::string v = scaled(it->second, factor, l.larger && !per_item(param));
            if (v.empty() || v == it->second) return;  // not a number, or already at its limit (1 cycle)
            line.sets.push_back(key + "=" + v);
            scaled_keys.push_back(key);
        };
        if (l.type) {
            for (const auto& [k, v] : keys) {
                const std::string suffix = ".type";
                if (v != l.type || k.size() <= suffix.size() || k.compare(k.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
                const std::string module = k.substr(0, k.size() - suffix.size());
                for (const char* p : l.params) add(module + "." + p, p);
            }
        } else {
            for (const char* p : l.params) add(p, p);
        }
        if (line.sets.empty()) continue;
        std::sort(scaled_keys.begin(), scaled_keys.end());
        // One pattern per parameter: "chip.modules.dma*.bandwidth_gbps".
        std::string key;
        for (const char* p : l.params) {
            std::vector<std::string> of;
            for (const auto& k : scaled_keys)
                if (k.size() > std::string(p).size() && k.compare(k.size() - std::string(p).size(), std::string::npos, p) == 0) of.push_back(k);
            if (!of.empty()) key += (key.empty() ? "" : ", ") + pattern(of);
        }
        line.key = key;
        out.push_back(std::move(line));
    }
    return out;
}

std::vector<SensitivityLine> measure_sensitivity(const std::string& out_dir, double run_time_ns, const SensitivityOptions& opt) {
    const std::string platform = (fs::path(out_dir) / "platform.yaml").string();
    if (!fs::exists(platform)) return {};
    std::vector<SensitivityLine> lines = sensitivity_levers(platform, opt.factor);
    std::vector<ReplayJob> jobs;
    for (const auto& l : lines) jobs.push_back({(fs::path(out_dir) / "txlog.trace.bin").string(), l.sets});
    ReplayOptions ro;
    ro.sim_main = opt.sim_main.empty() ? find_sim_main() : opt.sim_main;
    ro.platform = platform;
    ro.work_dir = (fs::path(out_dir) / "sensitivity.tmp").string();
    ro.jobs = opt.jobs;
    ro.budget_seconds = opt.budget_seconds;
    ro.stop_requested = opt.stop_requested;
    if (opt.progress) ro.progress = progress_lines(*opt.progress, "sensitivity");
    if (ro.sim_main.empty()) {
        for (auto& l : lines) l.error = "no sim_main beside this program to replay with";
        return lines;
    }
    std::error_code ec;
    fs::create_directories(ro.work_dir, ec);
    const std::vector<ReplayResult> r = replay_all(jobs, ro);
    fs::remove_all(ro.work_dir, ec);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (!r[i].ok) {
            lines[i].error = r[i].error;
            continue;
        }
        lines[i].measured = true;
        lines[i].simulated_time_ns = r[i].simulated_ns;
        lines[i].speedup = r[i].simulated_ns > 0 ? run_time_ns / r[i].simulated_ns : 0;
    }
    std::stable_sort(lines.begin(), lines.end(), [](const SensitivityLine& a, const SensitivityLine& b) {
        if (a.measured != b.measured) return a.measured;
        return a.speedup > b.speedup;
    });
    return lines;
}

}  // namespace xpu::analysis
