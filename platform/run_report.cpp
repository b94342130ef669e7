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
    for (const auto& o : in.overrides) os << "  --set    " << o << "\n";
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
    write_file_atomically(path, [&](std::ostream& os) { os << text; });
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error(path + ": cannot write (check that the output folder is writable)");
        try {
            write(f);
        } catch (...) {
            f.close();
            std::remove(tmp.c_str());
            throw;
        }
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

namespace {
// The statistics of stats.json, each written with its unit and meaning where its value is
// written: the "descriptions" object at the end is the record of these calls, so no figure
// can appear without its description (tests/e2e/stats_descriptions.sh checks every number has
// one). Keys of repeated objects use a wildcard: "units.*.busy_ns", "ops[].share";
// module statistics are keyed by kind: "modules.MatrixUnit.flops".
class Described {
public:
    explicit Described(JsonWriter& j) : j_(j) {}
    template <class T>
    void field(const std::string& path, const char* key, T value, const char* unit, const char* desc) {
        j_.field(key, value);
        // Called for every statistic of every module (tens of thousands on a 256-chip ring):
        // the key is built in a reused buffer and looked up before anything is allocated.
        key_.assign(path);
        if (!path.empty()) key_ += '.';
        key_ += key;
        if (seen_.find(key_) == seen_.end()) note(key_, unit, desc);
    }
    void note(const std::string& key, const std::string& unit, const std::string& desc) {
        if (seen_.emplace(key, rows_.size()).second) rows_.push_back({key, unit, desc});
    }
    void write() {
        j_.begin_object("descriptions");
        for (const auto& r : rows_) {
            j_.begin_object(r.key.c_str());
            j_.field("unit", r.unit);
            j_.field("description", r.desc);
            j_.end_object();
        }
        j_.end_object();
    }

private:
    struct Row {
        std::string key, unit, desc;
    };
    JsonWriter& j_;
    std::vector<Row> rows_;  // in the order first written
    std::unordered_map<std::string, std::size_t> seen_;  // hashed: looked up for every statistic of every module
    std::string key_;  // field()'s
};
}  // namespace

namespace {
// stats.json's text, to `os` (the JSON writer hands it over in blocks of 64 KiB).
void write_stats(std::ostream& os, const RunInputs& in, const RunResult& r, const Platform& p) {
    JsonWriter j(os);
    Described d(j);
    j.begin_object();
    j.field("schema", "xpusim.stats/1");
    j.field("platform", in.platform_file);
    j.field("trace", in.trace_file);
    // How the run was made (docs/outputs.md, "Runs that remember").
    j.field("version", in.version);
    j.field("trace_sha256", in.trace_sha256);
    j.begin_array("command_line");
    for (const auto& a : in.command_line) j.value(a);
    j.end_array();
    j.begin_array("overrides");
    for (const auto& a : in.overrides) j.value(a);
    j.end_array();
    j.field("completed", r.completed);
    j.field("stop_reason", stop_reason_name(r.stop));
    j.field("deterministic", in.deterministic);
    d.field("", "simulated_time_ns", r.simulated_ns, "ns", "simulated time at which the last event happened (last result, last DMA completion)");
    d.field("", "instructions_retired", r.instructions, "instructions", "instructions executed by all cores");
    d.field("", "streams", static_cast<std::uint64_t>(r.streams), "streams", "trace streams (one per chip and core)");
    d.field("", "build_seconds", r.build_seconds, "s",
            "host time building the platform: its modules made and bound, parsing its description not included (0 with --deterministic)");
    d.field("", "wall_seconds", r.wall_seconds, "s", "host time of the simulation proper, elaboration excluded (0 with --deterministic)");
    d.field("", "instructions_per_second", r.instructions_per_second(), "instructions/s",
            "instructions_retired / wall_seconds: the simulator's speed on this host (0 with --deterministic)");
    d.field("", "peak_rss_bytes", r.peak_rss_bytes, "bytes", "peak resident memory of the process (0 with --deterministic)");
    j.begin_object("units");
    for (const auto& u : r.units) {
        j.begin_object(u.name.c_str());
        j.field("kind", u.kind);
        d.field("units.*", "busy_ns", u.busy_ns, "ns", "time the unit was busy (what busy means depends on its kind: docs/outputs.md)");
        d.field("units.*", "utilization", u.utilization, "fraction", "busy_ns / simulated_time_ns (capped at 1 for an incomplete run)");
        j.end_object();
    }
    j.end_object();
    j.begin_object("hbm");
    d.field("hbm", "bytes_read", r.hbm_bytes_read, "bytes", "bytes read from all HBM controllers");
    d.field("hbm", "bytes_written", r.hbm_bytes_written, "bytes", "bytes written to all HBM controllers");
    d.field("hbm", "peak_gbps", r.hbm_peak_gbps, "GB/s", "sum over HBM controllers of channels x channel bandwidth");
    d.field("hbm", "achieved_gbps", r.achieved_gbps(), "GB/s", "(bytes_read + bytes_written) / simulated time");
    j.end_object();
    j.begin_object("compute");
    d.field("compute", "flops", r.flops, "flop", "2 x multiply-accumulates of all matmuls");
    d.field("compute", "peak_tflops", r.peak_flops_per_s / 1e12, "TFLOP/s", "peak of all matrix units together");
    d.field("compute", "achieved_tflops", r.simulated_ns > 0 ? r.flops / (r.simulated_ns * 1e-9) / 1e12 : 0.0, "TFLOP/s",
            "flops / simulated time");
    j.end_object();
    d.field("", "communication_share", r.breakdown.communication_share, "fraction",
            "share of all cores' time in collective ops (annotations with all_reduce, all_gather, reduce_scatter)");
    j.begin_array("ops");
    for (const auto& o : r.breakdown.ops) {
        j.begin_object();
        j.field("op", o.op);
        d.field("ops[]", "core_ns", o.core_ns, "ns", "core time attributed to the op (its instructions' slots and the stalls in front of them)");
        d.field("ops[]", "share", o.share, "fraction", "core_ns / all cores' time");
        j.end_object();
    }
    j.end_array();
    j.begin_array("chips");
    for (const auto& c : r.breakdown.chips) {
        j.begin_object();
        j.field("chip", static_cast<std::uint64_t>(c.chip));
        d.field("chips[]", "instructions", c.instructions, "instructions", "instructions the chip's cores retired");
        d.field("chips[]", "finish_ns", c.finish_ns, "ns", "time the chip's last core finished");
        d.field("chips[]", "hbm_bytes_read", c.hbm_bytes_read, "bytes", "bytes read from the chip's HBM");
        d.field("chips[]", "hbm_bytes_written", c.hbm_bytes_written, "bytes", "bytes written to the chip's HBM");
        d.field("chips[]", "link_bytes_sent", c.link_bytes_sent, "bytes", "payload bytes the chip sent on inter-chip links");
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
                    if (st.name == "bytes" || st.name == "wire_bytes")
                        d.field("links.*", st.name.c_str(), static_cast<std::uint64_t>(st.value), st.unit.c_str(), st.desc.c_str());
                d.field("links.*", "busy_ns", u.busy_ns, "ns", "time the link was carrying data");
                d.field("links.*", "utilization", u.utilization, "fraction", "busy_ns / simulated_time_ns");
                j.end_object();
            }
    j.end_object();
    j.begin_object("modules");
    for (auto* m : p.modules()) {
        j.begin_object(m->name());
        j.field("kind", m->kind());
        const std::string kind_path = std::string("modules.") + m->kind();
        for (const auto& s : m->stats()) {
            if (s.integer) d.field(kind_path, s.name.c_str(), static_cast<std::uint64_t>(s.value), s.unit.c_str(), s.desc.c_str());
            else d.field(kind_path, s.name.c_str(), s.value, s.unit.c_str(), s.desc.c_str());
        }
        j.end_object();
    }
    j.end_object();
    if (!r.completed) j.field("diagnosis", r.diagnosis);
    d.write();
    j.end_object();
}
}  // namespace

void write_stats_json(const std::string& path, const RunInputs& in, const RunResult& r, const Platform& p) {
    write_file_atomically(path, [&](std::ostream& os) { write_stats(os, in, r, p); });
}

}  // namespace xpu::platform
