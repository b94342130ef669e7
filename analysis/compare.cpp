#include "analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "analysis/platform_keys.h"
#include "analysis/render_util.h"
#include "analysis/report.h"
#include "traces/json_reader.h"
#include "traces/json_writer.h"
#include "traces/sha256.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

RunOrigin read_run_origin(const std::string& dir) {
    RunOrigin o;
    o.dir = dir;
    try {
        const JsonValue s = read_json_file((fs::path(dir) / "stats.json").string());
        auto str = [&](const char* k) {
            const JsonValue* v = s.get(k);
            return v && v->is_string() ? v->str : std::string();
        };
        auto list = [&](const char* k) {
            std::vector<std::string> out;
            if (const JsonValue* v = s.get(k))
                for (const auto& i : v->items)
                    if (i.is_string()) out.push_back(i.str);
            return out;
        };
        o.platform = str("platform");
        o.trace = str("trace");
        o.trace_sha256 = str("trace_sha256");
        o.version = str("version");
        o.command_line = list("command_line");
        o.overrides = list("overrides");
    } catch (const JsonError&) {
        // A run without a readable stats.json still compares by its log: its origin is unknown.
    }
    // The hash of what the log replayed, when stats.json does not say (a run made before it did).
    if (o.trace_sha256.empty()) {
        try {
            o.trace_sha256 = sha256_file((fs::path(dir) / "txlog.trace.bin").string());
        } catch (const std::exception&) {
        }
    }
    return o;
}

namespace {
using Row = Comparison::Row;

std::vector<Row> rows_of(const std::vector<Rollup>& ra, const std::vector<Rollup>& rb) {
    std::map<std::string, Row> m;
    for (const auto& r : ra) {
        Row& x = m[r.key];
        x.key = r.key;
        x.a = static_cast<double>(r.total()) / 1e3;
        x.in_a = true;
    }
    for (const auto& r : rb) {
        Row& x = m[r.key];
        x.key = r.key;
        x.b = static_cast<double>(r.total()) / 1e3;
        x.in_b = true;
    }
    std::vector<Row> out;
    for (auto& [k, v] : m) out.push_back(v);
    // Largest change first: what an architect reads the comparison for. Ties by name, so the
    // order never depends on the maps' insertion.
    std::stable_sort(out.begin(), out.end(), [](const Row& x, const Row& y) { return std::fabs(x.b - x.a) > std::fabs(y.b - y.a); });
    return out;
}

std::string fmt(double v, int d) { return render::fixed(v, d); }

std::string ratio(double a, double b) { return a > 0 ? fmt(b / a, 3) + "x" : std::string("-"); }
}  // namespace

Comparison compare_runs(const std::string& dir_a, const Analysis& a, const std::string& dir_b, const Analysis& b) {
    Comparison c;
    c.a = read_run_origin(dir_a);
    c.b = read_run_origin(dir_b);
    c.same_trace = c.a.trace_sha256 == c.b.trace_sha256;
    const PlatformKeys ka = read_platform_keys((fs::path(dir_a) / "platform.yaml").string());
    const PlatformKeys kb = read_platform_keys((fs::path(dir_b) / "platform.yaml").string());
    std::map<std::string, bool> keys;
    for (const auto& [k, v] : ka) keys[k] = true;
    for (const auto& [k, v] : kb) keys[k] = true;
    for (const auto& [k, unused] : keys) {
        auto ia = ka.find(k), ib = kb.find(k);
        const std::string va = ia == ka.end() ? "" : ia->second, vb = ib == kb.end() ? "" : ib->second;
        if (va != vb) c.platform.push_back({k, va, vb});
    }
    c.time = {"simulated time", static_cast<double>(a.end) / 1e3, static_cast<double>(b.end) / 1e3, true, true};
    c.instructions = {"instructions", static_cast<double>(a.instructions), static_cast<double>(b.instructions), true, true};
    for (std::size_t i = 0; i < kCauses; ++i) {
        if (!a.core_total[i] && !b.core_total[i]) continue;
        c.causes.push_back({cause_name(static_cast<Cause>(i)), static_cast<double>(a.core_total[i]) / 1e3,
                            static_cast<double>(b.core_total[i]) / 1e3, true, true});
    }
    std::map<std::string, Row> util;
    auto add_util = [](const Analysis& x, std::map<std::string, Row>& m, bool side_b) {
        std::map<std::string, std::pair<double, double>> acc;
        for (const auto& u : x.units) {
            auto& p = acc[u.kind];
            p.first += x.end ? static_cast<double>(u.time[0]) / static_cast<double>(x.end) : 0;
            p.second += 1;
        }
        for (auto& [k, p] : acc) {
            Row& r = m[k];
            r.key = k;
            (side_b ? r.b : r.a) = p.first / p.second;
            (side_b ? r.in_b : r.in_a) = true;
        }
    };
    add_util(a, util, false);
    add_util(b, util, true);
    for (auto& [k, r] : util) c.utilisation.push_back(r);
    c.by_op = rows_of(a.by_op_merged, b.by_op_merged);
    c.by_layer = rows_of(a.by_layer, b.by_layer);
    c.top_a = a.suggestions.empty() ? "none" : a.suggestions[0].kind + " at " + a.suggestions[0].where;
    c.top_b = b.suggestions.empty() ? "none" : b.suggestions[0].kind + " at " + b.suggestions[0].where;
    return c;
}

std::string trace_warning(const Comparison& c) {
    if (c.same_trace) return "";
    auto side = [](const RunOrigin& o) {
        return (o.trace.empty() ? std::string("(trace unknown)") : o.trace) + " sha256 " +
               (o.trace_sha256.empty() ? std::string("unknown") : o.trace_sha256.substr(0, 16));
    };
    return "WARNING: the two runs replayed DIFFERENT traces (A: " + side(c.a) + ", B: " + side(c.b) +
           "): the deltas below compare different programs, not one program on two platforms";
}

void print_comparison(std::ostream& os, const Comparison& c, std::size_t top) {
    auto col = [](const std::string& s) {
        std::ostringstream o;
        o << std::setw(20) << s;
        return o.str();
    };
    const std::string warn = trace_warning(c);
    if (!warn.empty()) os << "!!! " << warn << " !!!\n\n";
    os << "== comparison ==\n";
    os << "  A: " << c.a.dir << (c.a.platform.empty() ? "" : "  (" + c.a.platform + ", " + c.a.trace + ")") << "\n";
    os << "  B: " << c.b.dir << (c.b.platform.empty() ? "" : "  (" + c.b.platform + ", " + c.b.trace + ")") << "\n";
    auto overrides = [&](const char* side, const RunOrigin& o) {
        if (o.overrides.empty()) return;
        os << "  " << side << " overrides:";
        for (const auto& s : o.overrides) os << " --set " << s;
        os << "\n";
    };
    overrides("A", c.a);
    overrides("B", c.b);
    os << "  trace: " << (c.same_trace ? "the same (SHA-256 " + c.a.trace_sha256.substr(0, 16) + "...)" : "DIFFERENT") << "\n";
    os << "  platform differences (" << c.platform.size() << ")\n";
    if (c.platform.empty()) os << "    none\n";
    for (const auto& d : c.platform)
        os << "    " << d.key << ": " << (d.a.empty() ? "(absent)" : d.a) << " -> " << (d.b.empty() ? "(absent)" : d.b) << "\n";
    os << "\n" << std::left << std::setw(34) << "" << std::right << col("A") << col("B") << col("B/A") << "\n";
    auto row = [&](const std::string& what, double x, double y, const std::string& fx, const std::string& fy) {
        os << "  " << std::left << std::setw(32) << what << std::right << col(fx) << col(fy) << col(ratio(x, y)) << "\n";
    };
    auto ns = [](double v) { return render::duration(static_cast<Tick>(std::llround(v * 1e3))); };
    row("simulated time", c.time.a, c.time.b, ns(c.time.a), ns(c.time.b));
    row("instructions", c.instructions.a, c.instructions.b, fmt(c.instructions.a, 0), fmt(c.instructions.b, 0));
    os << "  core time by cause\n";
    for (const auto& r : c.causes) row("    " + r.key, r.a, r.b, ns(r.a), ns(r.b));
    os << "  utilisation (busy share of the run, mean over units of a kind)\n";
    for (const auto& r : c.utilisation) row("    " + r.key, r.a, r.b, fmt(100 * r.a, 1) + "%", fmt(100 * r.b, 1) + "%");
    auto table = [&](const char* title, const std::vector<Row>& rows) {
        os << "  " << title << " (largest change first, " << std::min(top, rows.size()) << " of " << rows.size() << ")\n";
        for (std::size_t i = 0; i < rows.size() && i < top; ++i) {
            const Row& r = rows[i];
            const double d = r.b - r.a;
            os << "    " << std::left << std::setw(40) << r.key << std::right << col(r.in_a ? ns(r.a) : "-")
               << col(r.in_b ? ns(r.b) : "-") << col((d < 0 ? "-" : "+") + ns(std::fabs(d))) << "\n";
        }
    };
    table("core time by op, A, B, B-A", c.by_op);
    table("core time by layer, A, B, B-A", c.by_layer);
    os << "  top suggestion\n    A: " << c.top_a << "\n    B: " << c.top_b << "\n";
    if (!warn.empty()) os << "\n!!! " << warn << " !!!\n";
}

void write_comparison_json(const std::string& path, const Comparison& c) {
    std::ostringstream os;
    JsonWriter j(os);
    auto origin = [&](const char* key, const RunOrigin& o) {
        j.begin_object(key);
        j.field("dir", o.dir);
        j.field("platform", o.platform);
        j.field("trace", o.trace);
        j.field("trace_sha256", o.trace_sha256);
        j.field("version", o.version);
        j.begin_array("command_line");
        for (const auto& s : o.command_line) j.value(s);
        j.end_array();
        j.begin_array("overrides");
        for (const auto& s : o.overrides) j.value(s);
        j.end_array();
        j.end_object();
    };
    auto rows = [&](const char* key, const std::vector<Row>& rs, const char* unit) {
        j.begin_array(key);
        for (const auto& r : rs) {
            j.begin_object();
            j.field("key", r.key);
            if (r.in_a) j.field("a", r.a); else j.null_field("a");
            if (r.in_b) j.field("b", r.b); else j.null_field("b");
            j.field("delta", r.b - r.a);
            j.field("unit", unit);
            j.end_object();
        }
        j.end_array();
    };
    j.begin_object();
    j.field("schema", "xpusim.compare/1");
    origin("a", c.a);
    origin("b", c.b);
    j.field("same_trace", c.same_trace);
    j.field("warning", trace_warning(c));
    j.begin_array("platform_differences");
    for (const auto& d : c.platform) {
        j.begin_object();
        j.field("key", d.key);
        if (d.a.empty()) j.null_field("a"); else j.field("a", d.a);
        if (d.b.empty()) j.null_field("b"); else j.field("b", d.b);
        j.end_object();
    }
    j.end_array();
    rows("totals", {c.time, c.instructions}, "ns | instructions");
    j.field("speedup", c.time.b > 0 ? c.time.a / c.time.b : 0.0);
    rows("core_by_cause", c.causes, "ns");
    rows("utilisation_by_kind", c.utilisation, "fraction");
    rows("by_op", c.by_op, "ns");
    rows("by_layer", c.by_layer, "ns");
    j.field("top_suggestion_a", c.top_a);
    j.field("top_suggestion_b", c.top_b);
    j.end_object();
    os << "\n";
    render::FileOut f(path);
    f.write(os.str());
    f.close();
}

void write_comparison_html(const std::string& path, const Comparison& c) {
    using render::html_escape;
    std::string h;
    h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xpusim comparison</title><style>"
         "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
         "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
         ".warn{background:#c62828;color:#fff;padding:.8em;font-weight:bold;font-size:1.2em}"
         ".faster{color:#2e7d32}.slower{color:#c62828}.bar{display:inline-block;height:10px}"
         "</style></head><body>\n<h1>Two runs compared</h1>\n";
    const std::string warn = trace_warning(c);
    if (!warn.empty()) h += "<p class=\"warn\">" + html_escape(warn) + "</p>\n";
    auto origin = [&](const char* side, const RunOrigin& o) {
        h += "<tr><td>" + std::string(side) + "</td><td>" + html_escape(o.dir) + "</td><td>" + html_escape(o.platform) + "</td><td>" +
             html_escape(o.trace) + "</td><td><code>" + html_escape(o.trace_sha256.substr(0, 16)) + "</code></td><td>";
        for (const auto& s : o.overrides) h += "<code>--set " + html_escape(s) + "</code><br>";
        h += "</td></tr>\n";
    };
    h += "<table><tr><th></th><th>folder</th><th>platform</th><th>trace</th><th>trace SHA-256</th><th>overrides</th></tr>\n";
    origin("A", c.a);
    origin("B", c.b);
    h += "</table>\n<h2>Platform differences</h2>\n";
    if (c.platform.empty()) h += "<p>none: the effective platforms are identical</p>\n";
    else {
        h += "<table><tr><th>key</th><th>A</th><th>B</th></tr>\n";
        for (const auto& d : c.platform)
            h += "<tr><td>" + html_escape(d.key) + "</td><td>" + html_escape(d.a.empty() ? "(absent)" : d.a) + "</td><td>" +
                 html_escape(d.b.empty() ? "(absent)" : d.b) + "</td></tr>\n";
        h += "</table>\n";
    }
    auto ns = [](double v) { return render::duration(static_cast<Tick>(std::llround(v * 1e3))); };
    const double speed = c.time.b > 0 ? c.time.a / c.time.b : 0;
    h += "<h2>Result</h2>\n<p>B runs in " + ns(c.time.b) + " against " + ns(c.time.a) + " for A: <b class=\"" +
         (speed >= 1 ? "faster" : "slower") + "\">speedup " + fmt(speed, 3) + "x</b></p>\n";
    auto table = [&](const char* title, const std::vector<Row>& rows, bool share) {
        h += std::string("<h2>") + title + "</h2>\n<table><tr><th></th><th>A</th><th>B</th><th>B - A</th><th>B/A</th></tr>\n";
        double scale = 0;
        for (const auto& r : rows) scale = std::max(scale, std::fabs(r.b - r.a));
        for (const auto& r : rows) {
            const double d = r.b - r.a;
            auto v = [&](bool in, double x) { return !in ? std::string("-") : share ? fmt(100 * x, 1) + "%" : ns(x); };
            const std::string delta = share ? fmt(100 * d, 1) + " pt" : (d < 0 ? "-" : "+") + ns(std::fabs(d));
            const int px = scale > 0 ? static_cast<int>(std::lround(120 * std::fabs(d) / scale)) : 0;
            h += "<tr><td>" + html_escape(r.key) + "</td><td>" + v(r.in_a, r.a) + "</td><td>" + v(r.in_b, r.b) + "</td><td class=\"" +
                 (d <= 0 ? "faster" : "slower") + "\">" + delta + " <span class=\"bar\" style=\"width:" + std::to_string(px) +
                 "px;background:" + (d <= 0 ? "#2e7d32" : "#c62828") + "\"></span></td><td>" + ratio(r.a, r.b) + "</td></tr>\n";
        }
        h += "</table>\n";
    };
    table("Core time by cause", c.causes, false);
    table("Utilisation by kind of unit", c.utilisation, true);
    table("Core time by op (layers added up)", c.by_op, false);
    table("Core time by layer", c.by_layer, false);
    h += "<h2>Top suggestion</h2>\n<p>A: " + html_escape(c.top_a) + "<br>B: " + html_escape(c.top_b) + "</p>\n</body></html>\n";
    render::FileOut f(path);
    f.write(h);
    f.close();
}

}  // namespace xpu::analysis
