#include "platform/run_report.h"

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <iomanip>
#include <map>
#include <string_view>
#include <unordered_map>
#include <sstream>
#include <stdexcept>

#include "traces/json_writer.h"

namespace xpu::platform {

namespace {
std::string human_bytes(double b) {
    const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (i < 4 && b >= 1024) {
        b /= 1024;
        ++i;
    }
    std::ostringstream os;
    os << std::fixed << std::setprecision(i ? 2 : 0) << b << " " << u[i];
    return os.str();
}
std::string human_time(double ns) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(3);
    if (ns >= 1e6) os << ns / 1e6 << " ms";
    else if (ns >= 1e3) os << ns / 1e3 << " us";
    else os << ns << " ns";
    return os.str();
}
}  // namespace

void print_summary(std::ostream& os, const RunInputs& in, const RunResult& r) {
    os << std::fixed;
    os << "platform   " << in.platform_file << "\n";
    os << "trace      " << in.trace_file << " (" << r.streams << " stream" << (r.streams == 1 ? "" : "s") << ")\n";
    os << "simulated  " << human_time(r.simulated_ns)
       << (r.completed ? std::string() : std::string("  (INCOMPLETE: ") + stop_reason_name(r.stop) + ")") << "\n";
    os << "retired    " << r.instructions << " instructions\n";
    if (in.deterministic)
        os << "host       not measured (--deterministic)\n";
    else
        os << "host       " << std::setprecision(2) << r.instructions_per_second() / 1e6 << " M instructions/s ("
       << std::setprecision(3) << r.wall_seconds << " s wall, peak RSS " << human_bytes(static_cast<double>(r.peak_rss_bytes))
       << ")\n";
    if (r.peak_flops_per_s > 0 && r.simulated_ns > 0) {
        double achieved = r.flops / (r.simulated_ns * 1e-9);
        os << "compute    " << std::setprecision(2) << achieved / 1e12 << " TFLOP/s of " << r.peak_flops_per_s / 1e12
           << " peak (" << std::setprecision(1) << 100.0 * achieved / r.peak_flops_per_s << "%)\n";
    }
    if (r.hbm_peak_gbps > 0) {
        os << "HBM        read " << human_bytes(static_cast<double>(r.hbm_bytes_read)) << ", written "
           << human_bytes(static_cast<double>(r.hbm_bytes_written)) << ", " << std::setprecision(1) << r.achieved_gbps()
           << " GB/s of " << r.hbm_peak_gbps << " peak (" << 100.0 * r.achieved_gbps() / r.hbm_peak_gbps << "%)\n";
    }
    const Breakdown& b = r.breakdown;
    if (!b.ops.empty()) {
        os << "time by op (share of core time)";
        if (b.chips.size() > 1 || b.communication_share > 0)
            os << ", communication " << std::setprecision(1) << 100.0 * b.communication_share << "%";
        os << "\n";
        for (std::size_t i = 0; i < b.ops.size() && i < 8; ++i)
            os << "  " << std::setw(6) << std::setprecision(1) << 100.0 * b.ops[i].share << "%  " << b.ops[i].op << "\n";
    }
    if (b.chips.size() > 1 && b.chips.size() <= 16) {
        os << "per chip\n";
        for (const auto& c : b.chips)
            os << "  chip " << std::setw(3) << c.chip << "  " << std::setw(10) << c.instructions << " instructions, done at "
               << human_time(c.finish_ns) << ", HBM " << human_bytes(static_cast<double>(c.hbm_bytes_read + c.hbm_bytes_written))
               << ", ICI sent " << human_bytes(static_cast<double>(c.link_bytes_sent)) << "\n";
    }
    os << "utilisation (busy / simulated time)\n";
    if (r.units.size() > 40) {  // many chips: one line per kind of unit
        std::map<std::string, std::vector<double>> by_kind;
        for (const auto& u : r.units) by_kind[u.kind].push_back(u.utilization);
        for (auto& [kind, v] : by_kind) {
            double sum = 0;
            for (double x : v) sum += x;
            os << "  " << std::left << std::setw(14) << kind << std::right << std::setw(5) << v.size() << " units  min "
               << std::setprecision(1) << 100.0 * *std::min_element(v.begin(), v.end()) << "%  mean " << 100.0 * sum / v.size()
               << "%  max " << 100.0 * *std::max_element(v.begin(), v.end()) << "%\n";
        }
        return;
    }
    std::size_t w = 0;
    for (const auto& u : r.units) w = std::max(w, u.name.size());
    for (const auto& u : r.units)
        os << "  " << std::left << std::setw(static_cast<int>(w)) << u.name << std::right << "  " << std::setw(6)
           << std::setprecision(1) << 100.0 * u.utilization << "%  " << u.kind << "\n";
}

void write_file_atomically(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error(path + ": cannot write (check that the output folder is writable)");
        f << text;
        f.flush();
        if (!f) {
            f.close();
            std::remove(tmp.c_str());
            throw std::runtime_error(path + ": write failed (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot rename the finished file into place");
    }
}

void write_stats_json(const std::string& path, const RunInputs& in, const RunResult& r, const Platform& p) {
    std::ostringstream os;
    JsonWriter j(os);
    j.begin_object();
    j.field("schema", "xpusim.stats/1");
    j.field("platform", in.platform_file);
    j.field("trace", in.trace_file);
    j.field("completed", r.completed);
    j.field("stop_reason", stop_reason_name(r.stop));
    j.field("deterministic", in.deterministic);
    j.field("simulated_time_ns", r.simulated_ns);
    j.field("instructions_retired", r.instructions);
    j.field("streams", r.streams);
    j.field("wall_seconds", r.wall_seconds);
    j.field("instructions_per_second", r.instructions_per_second());
    j.field("peak_rss_bytes", r.peak_rss_bytes);
    j.begin_object("units");
    for (const auto& u : r.units) {
        j.begin_object(u.name.c_str());
        j.field("kind", u.kind);
        j.field("busy_ns", u.busy_ns);
        j.field("utilization", u.utilization);
        j.end_object();
    }
    j.end_object();
    j.begin_object("hbm");
    j.field("bytes_read", r.hbm_bytes_read);
    j.field("bytes_written", r.hbm_bytes_written);
    j.field("peak_gbps", r.hbm_peak_gbps);
    j.field("achieved_gbps", r.achieved_gbps());
    j.end_object();
    j.begin_object("compute");
    j.field("flops", r.flops);
    j.field("peak_tflops", r.peak_flops_per_s / 1e12);
    j.field("achieved_tflops", r.simulated_ns > 0 ? r.flops / (r.simulated_ns * 1e-9) / 1e12 : 0.0);
    j.end_object();
    j.field("communication_share", r.breakdown.communication_share);
    j.begin_array("ops");
    for (const auto& o : r.breakdown.ops) {
        j.begin_object();
        j.field("op", o.op);
        j.field("core_ns", o.core_ns);
        j.field("share", o.share);
        j.end_object();
    }
    j.end_array();
    j.begin_array("chips");
    for (const auto& c : r.breakdown.chips) {
        j.begin_object();
        j.field("chip", static_cast<std::uint64_t>(c.chip));
        j.field("instructions", c.instructions);
        j.field("finish_ns", c.finish_ns);
        j.field("hbm_bytes_read", c.hbm_bytes_read);
        j.field("hbm_bytes_written", c.hbm_bytes_written);
        j.field("link_bytes_sent", c.link_bytes_sent);
        j.end_object();
    }
    j.end_array();
    j.begin_object("links");
    // By name through a hash map: a 4096-chip torus has ~50k links among ~100k modules.
    std::unordered_map<std::string_view, const XpuModule*> by_name;
    for (auto* m : p.modules())
        if (m->role() == Role::Link) by_name.emplace(m->name(), m);
    for (const auto& u : r.units)
        if (u.role == Role::Link)
            if (auto it = by_name.find(u.name); it != by_name.end()) {
                const XpuModule* m = it->second;
                j.begin_object(u.name.c_str());
                for (const auto& st : m->stats())
                    if (st.name == "bytes" || st.name == "wire_bytes") j.field(st.name.c_str(), static_cast<std::uint64_t>(st.value));
                j.field("busy_ns", u.busy_ns);
                j.field("utilization", u.utilization);
                j.end_object();
            }
    j.end_object();
    j.begin_object("modules");
    for (auto* m : p.modules()) {
        j.begin_object(m->name());
        j.field("kind", m->kind());
        for (const auto& s : m->stats()) {
            if (s.integer) j.field(s.name.c_str(), static_cast<std::uint64_t>(s.value));
            else j.field(s.name.c_str(), s.value);
        }
        j.end_object();
    }
    j.end_object();
    if (!r.completed) j.field("diagnosis", r.diagnosis);
    j.end_object();
    write_file_atomically(path, os.str());
}

}  // namespace xpu::platform
