#include "platform/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "analysis/analysis.h"
#include "analysis/render_util.h"
#include "platform/config_error.h"
#include "platform/run_report.h"
#include "platform/yaml_source.h"
#include "traces/json_reader.h"

namespace xpu::platform::sweep {

namespace fs = std::filesystem;

namespace {
std::vector<std::string> string_list(const YamlSource& src, const YAML::Node& n, const std::string& key, bool allow_empty = false) {
    if (!n.IsSequence()) src.fail(n, key, "expected a list, e.g. [a, b]");
    if (n.size() == 0 && !allow_empty) src.fail(n, key, "expected at least one entry");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
        if (!n[i].IsScalar()) src.fail(n[i], key + "[" + std::to_string(i) + "]", "expected a value (text or number)");
        out.push_back(n[i].Scalar());
    }
    return out;
}

std::string resolve(const std::string& spec_file, const std::string& p) {
    if (fs::path(p).is_absolute()) return p;
    const fs::path base = fs::path(spec_file).parent_path();
    return (base.empty() ? fs::path(p) : base / p).lexically_normal().string();
}
}  // namespace

Spec load_spec(const std::string& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) throw ConfigError(file + ": cannot open the sweep spec (expected a YAML file: docs/sweep.md)");
    YamlSource src = YamlSource::load(file);
    YAML::Node root = src.root();
    Spec s;
    s.file = file;
    if (!root.IsMap()) src.fail(root, "(top)", "expected a mapping with traces, platforms, grid and optionally sim_args, baseline");
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (k != "traces" && k != "platforms" && k != "grid" && k != "sim_args" && k != "baseline")
            src.fail(it->first, k, "unknown key (known: traces, platforms, grid, sim_args, baseline)");
    }
    for (const char* k : {"traces", "platforms"})
        if (!root[k]) src.fail(root, k, std::string("missing: expected a list of ") + (k[0] == 't' ? "trace files" : "platform descriptions"));
    s.traces = string_list(src, root["traces"], "traces");
    s.platforms = string_list(src, root["platforms"], "platforms");
    for (std::size_t i = 0; i < s.traces.size(); ++i) {
        s.trace_paths.push_back(resolve(file, s.traces[i]));
        if (!fs::is_regular_file(s.trace_paths.back()))
            src.fail(root["traces"][i], "traces[" + std::to_string(i) + "]",
                     "no such file: " + s.trace_paths.back() + " (paths are relative to the spec's folder)");
    }
    for (std::size_t i = 0; i < s.platforms.size(); ++i) {
        s.platform_paths.push_back(resolve(file, s.platforms[i]));
        if (!fs::is_regular_file(s.platform_paths.back()))
            src.fail(root["platforms"][i], "platforms[" + std::to_string(i) + "]",
                     "no such file: " + s.platform_paths.back() + " (paths are relative to the spec's folder)");
    }
    if (YAML::Node g = root["grid"]) {
        if (!g.IsMap()) src.fail(g, "grid", "expected a mapping of platform keys to lists of values, e.g. chip.clock_ghz: [1.05, 2.1]");
        for (auto it = g.begin(); it != g.end(); ++it) {
            const std::string key = it->first.Scalar();
            s.grid.emplace_back(key, string_list(src, it->second, "grid." + key));
        }
    }
    // The points: traces x platforms x every grid value's product. Bounded (each point is a run,
    // a folder and a row; far more than a machine or a Slurm array runs), and counted without
    // overflow before any is listed.
    {
        constexpr double kMaxPoints = 100000;
        double n = static_cast<double>(s.trace_paths.size()) * static_cast<double>(s.platform_paths.size());
        for (const auto& g : s.grid) n *= static_cast<double>(g.second.size());
        if (n > kMaxPoints) {
            std::ostringstream os;
            os << std::fixed << std::setprecision(0) << "the spec makes " << n << " points (traces x platforms x the grid's values), more than a sweep runs (at most "
               << kMaxPoints << "): fewer values, or several sweeps";
            src.fail(root["grid"] ? root["grid"] : root, "grid", os.str());
        }
    }
    if (YAML::Node a = root["sim_args"]) {
        s.sim_args = string_list(src, a, "sim_args", true);
        for (std::size_t i = 0; i < s.sim_args.size(); ++i) {
            const std::string& x = s.sim_args[i];
            for (const char* own : {"--platform", "-p", "--trace", "-t", "--out", "-o", "--set", "--vcd", "--dump-config", "--list-types"})
                if (x == own || x.rfind(std::string(own) + "=", 0) == 0)
                    src.fail(a[i], "sim_args[" + std::to_string(i) + "]",
                             "'" + x + "' is set by the sweep itself (traces, platforms, grid; --out per point): expected other sim_main options");
        }
    }
    for (const auto& g : s.grid) s.baseline.push_back(g.second.front());
    if (YAML::Node b = root["baseline"]) {
        if (!b.IsMap()) src.fail(b, "baseline", "expected a mapping: platform and grid keys to the values of the point speedups are against");
        for (auto it = b.begin(); it != b.end(); ++it) {
            const std::string key = it->first.Scalar();
            if (!it->second.IsScalar()) src.fail(it->second, "baseline." + key, "expected a value");
            const std::string v = it->second.Scalar();
            if (key == "platform") {
                auto f = std::find(s.platforms.begin(), s.platforms.end(), v);
                if (f == s.platforms.end()) src.fail(it->second, "baseline.platform", "expected one of the spec's platforms");
                s.baseline_platform = static_cast<std::size_t>(f - s.platforms.begin());
                continue;
            }
            std::size_t k = 0;
            while (k < s.grid.size() && s.grid[k].first != key) ++k;
            if (k == s.grid.size()) src.fail(it->first, "baseline." + key, "not a key of the grid (expected platform or a grid key)");
            const auto& vals = s.grid[k].second;
            if (std::find(vals.begin(), vals.end(), v) == vals.end())
                src.fail(it->second, "baseline." + key, "'" + v + "' is not one of the grid's values for this key");
            s.baseline[k] = v;
        }
    }
    return s;
}

std::string Point::name() const {
    char b[16];
    std::snprintf(b, sizeof b, "%04zu", index);
    return b;
}

std::vector<std::string> Point::sets(const Spec& s) const {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < s.grid.size(); ++k) out.push_back(s.grid[k].first + "=" + s.grid[k].second[value[k]]);
    return out;
}

std::vector<Point> points_of(const Spec& s) {
    std::vector<Point> out;
    for (std::size_t t = 0; t < s.traces.size(); ++t)
        for (std::size_t p = 0; p < s.platforms.size(); ++p) {
            std::vector<std::size_t> v(s.grid.size(), 0);
            for (;;) {
                Point pt;
                pt.index = out.size();
                pt.trace = t;
                pt.platform = p;
                pt.value = v;
                out.push_back(pt);
                // Odometer: the last grid key turns fastest; a carry out of the first ends it.
                bool carry_out = true;
                for (std::size_t k = v.size(); k-- > 0;) {
                    if (++v[k] < s.grid[k].second.size()) {
                        carry_out = false;
                        break;
                    }
                    v[k] = 0;
                }
                if (carry_out) break;
            }
        }
    return out;
}

std::vector<std::string> command_of(const Spec& s, const Point& p, const std::string& sim_main, const std::string& out_dir) {
    std::vector<std::string> a = {sim_main, "--platform", s.platform_paths[p.platform], "--trace", s.trace_paths[p.trace],
                                  "--out", (fs::path(out_dir) / "runs" / p.name()).string()};
    for (const auto& kv : p.sets(s)) {
        a.push_back("--set");
        a.push_back(kv);
    }
    a.push_back("-q");
    a.push_back("--deterministic");
    // Verification replays each point's top suggestions: 5 more runs per point, which a sweep
    // does not ask for unless its sim_args do.
    bool verify = false;
    for (const auto& x : s.sim_args) verify = verify || x.rfind("--verify", 0) == 0 || x == "--no-verify";
    if (!verify) a.push_back("--no-verify");
    a.insert(a.end(), s.sim_args.begin(), s.sim_args.end());
    return a;
}

std::string status_of_exit(int code) {
    switch (code) {
        case 0: return "ok";
        case 5: return "deadlock";
        case 7: return "time-limit";
        default: return "failed";
    }
}

Result read_result(const std::string& out_dir, const Point& p) {
    Result r;
    const fs::path runs = fs::path(out_dir) / "runs";
    std::ifstream rcf(runs / (p.name() + ".rc"));
    int rc = -1;
    if (!(rcf >> rc)) return r;  // never finished (or never started)
    r.status = status_of_exit(rc);
    if (rc != 0) {
        // sim_main's messages: the first line says what went wrong (the rest may be a diagnosis).
        std::ifstream log(runs / (p.name() + ".log"));
        std::string line;
        while (std::getline(log, line))
            if (!line.empty()) {
                r.error = line;
                break;
            }
        r.error = "exit " + std::to_string(rc) + (r.error.empty() ? std::string() : ": " + r.error);
    }
    try {
        const JsonValue st = read_json_file((runs / p.name() / "stats.json").string());
        auto num = [&](const char* path) {
            const JsonValue* v = st.at_path(path);
            return v ? v->number_or(0) : 0.0;
        };
        r.have_stats = true;
        r.simulated_ns = num("simulated_time_ns");
        r.instructions = num("instructions_retired");
        r.tflops = num("compute.achieved_tflops");
        r.hbm_gbps = num("hbm.achieved_gbps");
        r.comm_share = num("communication_share");
    } catch (const JsonError& e) {
        if (rc == 0) {
            r.status = "failed";
            r.error = e.what();
        }
    }
    try {
        const JsonValue an = read_json_file((runs / p.name() / "analysis.json").string());
        if (const JsonValue* c = an.get("core_ns"))
            for (const auto& [k, v] : c->members) r.core_ns.emplace_back(k, v.number_or(0));
    } catch (const JsonError&) {
        // No analysis (sim_args with --no-analysis or --no-txlog): no stall mix for the point.
    }
    return r;
}

void set_speedups(const Spec& s, const std::vector<Point>& pts, std::vector<Result>& rs) {
    std::vector<double> base(s.traces.size(), 0);
    for (const Point& p : pts) {
        if (p.platform != s.baseline_platform) continue;
        bool is_base = true;
        for (std::size_t k = 0; k < s.grid.size(); ++k) is_base = is_base && s.grid[k].second[p.value[k]] == s.baseline[k];
        if (is_base && rs[p.index].status == "ok") base[p.trace] = rs[p.index].simulated_ns;
    }
    for (const Point& p : pts) {
        Result& r = rs[p.index];
        r.speedup = r.status == "ok" && r.simulated_ns > 0 && base[p.trace] > 0 ? base[p.trace] / r.simulated_ns : 0;
    }
}

namespace {
std::string csv(const std::string& f) {
    if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
    std::string q = "\"";
    for (char c : f) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}
std::string num(double v) {
    char b[40];
    std::snprintf(b, sizeof b, "%.10g", v);
    return b;
}
// The causes analysis.json names, in its order: the columns are fixed whatever the points had.
std::vector<std::string> cause_columns() {
    std::vector<std::string> out;
    for (std::size_t c = 0; c < analysis::kCauses; ++c) out.push_back(analysis::cause_key(static_cast<analysis::Cause>(c)));
    return out;
}
double core(const Result& r, const std::string& k) {
    for (const auto& [name, v] : r.core_ns)
        if (name == k) return v;
    return 0;
}
}  // namespace

void write_results_csv(const std::string& path, const Spec& s, const std::vector<Point>& pts, const std::vector<Result>& rs) {
    std::ostringstream os;
    os << "point,trace,platform";
    for (const auto& g : s.grid) os << "," << csv(g.first);
    os << ",status,simulated_time_ns,speedup,instructions_retired,achieved_tflops,hbm_achieved_gbps,communication_share";
    const auto causes = cause_columns();
    for (const auto& c : causes) os << ",core_" << c << "_ns";
    os << ",error,folder\n";
    for (const Point& p : pts) {
        const Result& r = rs[p.index];
        os << p.name() << "," << csv(s.traces[p.trace]) << "," << csv(s.platforms[p.platform]);
        for (std::size_t k = 0; k < s.grid.size(); ++k) os << "," << csv(s.grid[k].second[p.value[k]]);
        os << "," << r.status;
        if (r.have_stats)
            os << "," << num(r.simulated_ns) << "," << (r.speedup > 0 ? num(r.speedup) : "") << "," << num(r.instructions) << ","
               << num(r.tflops) << "," << num(r.hbm_gbps) << "," << num(r.comm_share);
        else
            os << ",,,,,,";
        for (const auto& c : causes) os << "," << (r.core_ns.empty() ? std::string() : num(core(r, c)));
        os << "," << csv(r.error) << ",runs/" << p.name() << "\n";
    }
    write_file_atomically(path, os.str());
}

void write_report_html(const std::string& path, const Spec& s, const std::vector<Point>& pts, const std::vector<Result>& rs) {
    using analysis::render::html_escape;
    using analysis::render::fixed;
    auto label = [&](const Point& p) {
        std::string l = fs::path(s.traces[p.trace]).filename().string();
        if (s.platforms.size() > 1) l += " | " + fs::path(s.platforms[p.platform]).filename().string();
        for (std::size_t k = 0; k < s.grid.size(); ++k) {
            const std::string& key = s.grid[k].first;
            l += " | " + key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1) + "=" + s.grid[k].second[p.value[k]];
        }
        return l;
    };
    std::size_t ok = 0, failed = 0;
    for (const auto& r : rs) (r.status == "ok" ? ok : failed)++;
    std::string h;
    h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xpusim sweep</title><style>"
         "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
         "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
         ".bad{color:#c62828}svg text{font-size:12px;font-family:sans-serif}"
         "</style></head><body>\n<h1>Sweep: " + html_escape(s.file) + "</h1>\n<p>" + std::to_string(pts.size()) + " points: " +
         std::to_string(ok) + " ok, " + std::to_string(failed) + " not ok. Speedup = the simulated time of the trace's baseline point (";
    {
        std::string b = fs::path(s.platforms[s.baseline_platform]).filename().string();
        for (std::size_t k = 0; k < s.grid.size(); ++k) b += ", " + s.grid[k].first + "=" + s.baseline[k];
        h += html_escape(b);
    }
    h += ") / the point's.</p>\n";
    // Labels right-aligned before the bars: wide enough for the longest (about 7 px a character).
    std::size_t longest = 0;
    for (const Point& p : pts) longest = std::max(longest, label(p).size());
    const int label_w = static_cast<int>(std::max<std::size_t>(200, 7 * longest + 12)), bar_w = 420, row_h = 22;
    const int height = static_cast<int>(pts.size()) * row_h + 30;
    // Speedup per point: one bar each, the baseline at 1.0 drawn as a line.
    double max_sp = 1;
    for (const auto& r : rs) max_sp = std::max(max_sp, r.speedup);
    h += "<h2>Speedup per point</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(label_w + bar_w + 80) +
         "\" height=\"" + std::to_string(height) + "\">\n";
    for (const Point& p : pts) {
        const Result& r = rs[p.index];
        const int y = static_cast<int>(p.index) * row_h + 4;
        h += "<text x=\"" + std::to_string(label_w - 6) + "\" y=\"" + std::to_string(y + 14) + "\" text-anchor=\"end\">" + html_escape(label(p)) +
             "</text>\n";
        if (r.speedup > 0) {
            const int w = static_cast<int>(std::lround(bar_w * r.speedup / max_sp));
            h += "<rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(w) +
                 "\" height=\"16\" fill=\"" + (r.speedup >= 1 ? "#2e7d32" : "#ef6c00") + "\"><title>" + fixed(r.speedup, 3) +
                 "x</title></rect>\n<text x=\"" + std::to_string(label_w + w + 4) + "\" y=\"" + std::to_string(y + 13) + "\">" +
                 fixed(r.speedup, 3) + "x</text>\n";
        } else {
            h += "<text class=\"bad\" x=\"" + std::to_string(label_w + 4) + "\" y=\"" + std::to_string(y + 13) + "\" fill=\"#c62828\">" +
                 html_escape(r.status) + "</text>\n";
        }
    }
    const int x1 = label_w + static_cast<int>(std::lround(bar_w / max_sp));
    h += "<line x1=\"" + std::to_string(x1) + "\" x2=\"" + std::to_string(x1) + "\" y1=\"0\" y2=\"" + std::to_string(height - 20) +
         "\" stroke=\"#222\" stroke-dasharray=\"4 3\"/><text x=\"" + std::to_string(x1 + 3) + "\" y=\"" + std::to_string(height - 6) +
         "\">1.0x</text>\n</svg>\n";
    // Stall mix per point: core time by cause, as shares of the point's core time.
    const auto causes = cause_columns();
    h += "<h2>Stall mix per point (core time by cause)</h2>\n<p>";
    for (std::size_t c = 0; c < causes.size(); ++c)
        h += std::string("<span style=\"display:inline-block;width:12px;height:12px;background:") +
             analysis::render::cause_color(static_cast<analysis::Cause>(c)) + "\"></span> " +
             html_escape(analysis::cause_name(static_cast<analysis::Cause>(c))) + " &nbsp; ";
    h += "</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(label_w + bar_w + 80) + "\" height=\"" +
         std::to_string(height) + "\">\n";
    for (const Point& p : pts) {
        const Result& r = rs[p.index];
        const int y = static_cast<int>(p.index) * row_h + 4;
        h += "<text x=\"" + std::to_string(label_w - 6) + "\" y=\"" + std::to_string(y + 14) + "\" text-anchor=\"end\">" + html_escape(label(p)) +
             "</text>\n";
        double total = 0;
        for (const auto& c : causes) total += core(r, c);
        if (total <= 0) {
            h += "<text x=\"" + std::to_string(label_w + 4) + "\" y=\"" + std::to_string(y + 13) + "\">no analysis</text>\n";
            continue;
        }
        double x = label_w;
        for (std::size_t c = 0; c < causes.size(); ++c) {
            const double w = bar_w * core(r, causes[c]) / total;
            if (w <= 0) continue;
            h += "<rect x=\"" + fixed(x, 2) + "\" y=\"" + std::to_string(y) + "\" width=\"" + fixed(w, 2) + "\" height=\"16\" fill=\"" +
                 analysis::render::cause_color(static_cast<analysis::Cause>(c)) + "\"><title>" +
                 html_escape(analysis::cause_name(static_cast<analysis::Cause>(c))) + " " + fixed(100 * core(r, causes[c]) / total, 1) +
                 "%</title></rect>\n";
            x += w;
        }
    }
    h += "</svg>\n<h2>Results</h2>\n<table><tr><th>point</th><th>trace</th><th>platform</th>";
    for (const auto& g : s.grid) h += "<th>" + html_escape(g.first) + "</th>";
    h += "<th>status</th><th>simulated</th><th>speedup</th><th>TFLOP/s</th><th>HBM GB/s</th><th>error</th></tr>\n";
    for (const Point& p : pts) {
        const Result& r = rs[p.index];
        h += "<tr><td>" + p.name() + "</td><td>" + html_escape(s.traces[p.trace]) + "</td><td>" + html_escape(s.platforms[p.platform]) + "</td>";
        for (std::size_t k = 0; k < s.grid.size(); ++k) h += "<td>" + html_escape(s.grid[k].second[p.value[k]]) + "</td>";
        h += std::string("<td") + (r.status == "ok" ? "" : " class=\"bad\"") + ">" + html_escape(r.status) + "</td><td>" +
             (r.have_stats ? fixed(r.simulated_ns / 1e3, 3) + " us" : "") + "</td><td>" + (r.speedup > 0 ? fixed(r.speedup, 3) + "x" : "") +
             "</td><td>" + (r.have_stats ? fixed(r.tflops, 2) : "") + "</td><td>" + (r.have_stats ? fixed(r.hbm_gbps, 1) : "") + "</td><td>" +
             html_escape(r.error) + "</td></tr>\n";
    }
    h += "</table>\n</body></html>\n";
    write_file_atomically(path, h);
}

}  // namespace xpu::platform::sweep
