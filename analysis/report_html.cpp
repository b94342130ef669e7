#include "analysis/report_html.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "analysis/bounds.h"
#include "analysis/patch.h"
#include "analysis/relower.h"
#include "analysis/render_util.h"
#include "analysis/verify.h"
#include "traces/json_writer.h"
#include "traces/trace_text.h"

namespace xpu::analysis {

namespace {

using namespace render;

constexpr std::size_t kTopOps = 20;
constexpr std::size_t kMaxUnitRows = 120;
constexpr std::size_t kMaxRollupRows = 64;
constexpr std::size_t kMaxSeries = 48;
constexpr std::size_t kMaxHeatRows = 128;
constexpr std::size_t kMaxPathRows = 200;
constexpr std::size_t kTopDmas = 20;

// Geometry of the bar charts (SVG user units = CSS px).
constexpr double kSvgW = 1320, kBarX = 330, kBarW = 600, kRightX = 940;
constexpr double kRowH = 22, kBarH = 14;

Tick sum(const CauseTimes& t) {
    Tick s = 0;
    for (Tick v : t) s += v;
    return s;
}

Cause cause_at(std::size_t i) { return static_cast<Cause>(i); }

const char* status_text(unsigned st) {
    switch (st) {
        case 0: return "completed";
        case 1: return "deadlock";
        case 2: return "time limit reached";
        case 3: return "interrupted";
    }
    return "unknown";
}

// At most `n` characters (code points) of s, with an ellipsis when cut.
std::string clip(const std::string& s, std::size_t n) {
    std::size_t cps = 0, i = 0;
    for (; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
            if (cps == n) break;
            ++cps;
        }
    }
    if (i >= s.size()) return s;
    return s.substr(0, i) + "\xE2\x80\xA6";
}

std::string px(double v) { return fixed(v, 2); }

void esc(std::string& h, std::string_view s) { html_escape_to(h, s); }

std::string instr_label(const RunData& run, std::uint32_t stream, std::uint64_t index) {
    if (stream < run.streams.size()) return run.streams[stream].label() + " #" + std::to_string(index);
    return "stream " + std::to_string(stream) + " #" + std::to_string(index);
}

// The text form of an instruction (describe()), or its label if the run does not have it.
std::string instr_text(const RunData& run, std::uint32_t stream, std::uint64_t index) {
    if (stream < run.streams.size() && index < run.streams[stream].code.size()) return describe(run, stream, index);
    return instr_label(run, stream, index);
}

// An instruction's text form with its annotation, without its place: "swait flag=2 val=3 cond=ge [layer0/mlp/wait_data]".
std::string instruction_text(const RunData& run, Instruction in) {
    const std::string ann = run.annotation(in);
    in.present = static_cast<std::uint16_t>(in.present & ~(kAnn | kTimestamp));
    std::string t = trace::format_instruction(in);
    if (!ann.empty()) t += " [" + ann + "]";
    return t;
}

// Where a move puts an instruction: in front of "#12 swait ... [ann]", or at the end of the stream.
std::string target_text(const RunData& run, std::uint32_t stream, std::uint64_t before) {
    if (stream >= run.streams.size() || before >= run.streams[stream].code.size()) return "the end of the stream";
    return "#" + std::to_string(before) + " " + instruction_text(run, run.streams[stream].code[before]);
}

// The full list behind a rolled-up text, collapsed: "<details><summary>ops (160)</summary>...".
void names_details(std::string& h, const char* what, const std::vector<std::string>& names) {
    if (names.size() < 2) return;
    h += "<details><summary>";
    esc(h, what);
    h += " (" + std::to_string(names.size()) + ")</summary><small>";
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) h += "<br>";
        esc(h, names[i].empty() ? "(no annotation)" : names[i]);
    }
    h += "</small></details>";
}

void swatch(std::string& h, Cause c) {
    h += "<span class=\"sw\" style=\"background:";
    h += cause_color(c);
    h += "\"></span>";
}

void legend(std::string& h) {
    h += "<div class=\"legend\" id=\"legend\">";
    for (std::size_t i = 0; i < kCauses; ++i) {
        h += "<span class=\"item\" data-cause=\"";
        h += cause_key(cause_at(i));
        h += "\" data-color=\"";
        h += cause_color(cause_at(i));
        h += "\">";
        swatch(h, cause_at(i));
        esc(h, cause_name(cause_at(i)));
        h += "</span>";
    }
    h += "</div>\n";
}

struct BarRow {
    std::string label, hint, right;
    CauseTimes t{};
    double scale = 0;  // the time the full bar width stands for
};

// Horizontal stacked bars, one row per entry, one colour per cause; hovering a segment shows
// the cause and its time.
void stacked_bars(std::string& h, const std::vector<BarRow>& rows, const std::string& what) {
    if (rows.empty()) {
        h += "<p class=\"none\">Nothing recorded.</p>\n";
        return;
    }
    const double height = kRowH * static_cast<double>(rows.size()) + 4;
    h += "<svg class=\"bars\" width=\"" + px(kSvgW) + "\" height=\"" + px(height) + "\" viewBox=\"0 0 " + px(kSvgW) + " " +
         px(height) + "\" role=\"img\" aria-label=\"";
    esc(h, what);
    h += "\">\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const BarRow& row = rows[r];
        const double y = kRowH * static_cast<double>(r);
        const Tick total = sum(row.t);
        h += "<g><text x=\"0\" y=\"" + px(y + 15) + "\">";
        h += "<title>";
        esc(h, row.label);
        if (!row.hint.empty()) {
            h += " (";
            esc(h, row.hint);
            h += ")";
        }
        h += "</title>";
        esc(h, clip(row.label, 46));
        h += "</text>\n";
        h += "<rect class=\"track\" x=\"" + px(kBarX) + "\" y=\"" + px(y + 4) + "\" width=\"" + px(kBarW) + "\" height=\"" +
             px(kBarH) + "\"/>\n";
        double x = kBarX;
        for (std::size_t c = 0; c < kCauses; ++c) {
            const Tick v = row.t[c];
            if (!v || !(row.scale > 0)) continue;
            const double w = kBarW * static_cast<double>(v) / row.scale;
            h += "<rect x=\"" + px(x) + "\" y=\"" + px(y + 4) + "\" width=\"" + px(w) + "\" height=\"" + px(kBarH) + "\" fill=\"";
            h += cause_color(cause_at(c));
            h += "\"><title>";
            esc(h, row.label);
            h += ": ";
            esc(h, cause_name(cause_at(c)));
            h += " " + duration(v) + " (" + percent(static_cast<double>(v), static_cast<double>(total)) + ")</title></rect>\n";
            x += w;
        }
        h += "<text x=\"" + px(kRightX) + "\" y=\"" + px(y + 15) + "\">";
        esc(h, row.right);
        h += "</text></g>\n";
    }
    h += "</svg>\n";
}

// The numbers behind a bar chart, in a table that opens on demand.
void cause_table(std::string& h, const std::vector<BarRow>& rows, const std::string& key_title) {
    if (rows.empty()) return;
    std::array<bool, kCauses> used{};
    for (const auto& r : rows)
        for (std::size_t c = 0; c < kCauses; ++c)
            if (r.t[c]) used[c] = true;
    h += "<details><summary>the numbers</summary>\n<table class=\"num\"><thead><tr><th>";
    esc(h, key_title);
    h += "</th><th>total</th>";
    for (std::size_t c = 0; c < kCauses; ++c)
        if (used[c]) {
            h += "<th>";
            swatch(h, cause_at(c));
            esc(h, cause_name(cause_at(c)));
            h += "</th>";
        }
    h += "</tr></thead><tbody>\n";
    for (const auto& r : rows) {
        const Tick total = sum(r.t);
        h += "<tr><td>";
        esc(h, r.label);
        h += "</td><td class=\"n\">" + duration(total) + "</td>";
        for (std::size_t c = 0; c < kCauses; ++c)
            if (used[c]) {
                h += "<td class=\"n\">";
                if (r.t[c]) h += duration(r.t[c]) + " <small>" + percent(static_cast<double>(r.t[c]), static_cast<double>(total)) + "</small>";
                h += "</td>";
            }
        h += "</tr>\n";
    }
    h += "</tbody></table></details>\n";
}

// A small inline stacked bar (for table cells).
void mini_bar(std::string& h, const CauseTimes& t, const std::string& what) {
    const Tick total = sum(t);
    constexpr double W = 160, H = 12;
    h += "<svg class=\"mini\" width=\"160\" height=\"12\" viewBox=\"0 0 160 12\" role=\"img\" aria-label=\"";
    esc(h, what);
    h += "\">";
    double x = 0;
    for (std::size_t c = 0; c < kCauses && total; ++c) {
        if (!t[c]) continue;
        const double w = W * static_cast<double>(t[c]) / static_cast<double>(total);
        h += "<rect x=\"" + px(x) + "\" y=\"0\" width=\"" + px(w) + "\" height=\"" + px(H) + "\" fill=\"";
        h += cause_color(cause_at(c));
        h += "\"><title>";
        esc(h, cause_name(cause_at(c)));
        h += " " + duration(t[c]) + "</title></rect>";
        x += w;
    }
    h += "</svg>";
}

// "95.26 us · 8 instr", or "· 8 units" for the kinds of unit (count_word).
std::string rollup_right(const Rollup& r, const char* count_word) {
    const std::string word = count_word;
    return duration(sum(r.time)) + " \xC2\xB7 " + std::to_string(r.instructions) + " " +
           (word == "units" && r.instructions == 1 ? std::string("unit") : word);
}

std::vector<BarRow> rollup_rows(std::vector<Rollup> v, std::size_t limit, const char* count_word) {
    std::stable_sort(v.begin(), v.end(), [](const Rollup& x, const Rollup& y) { return sum(x.time) > sum(y.time); });
    if (v.size() > limit) v.resize(limit);
    double scale = 0;
    for (const auto& r : v) scale = std::max(scale, static_cast<double>(sum(r.time)));
    std::vector<BarRow> rows;
    for (const auto& r : v) {
        BarRow b;
        b.label = r.key.empty() ? "(no annotation)" : r.key;
        if (r.layers > 1) b.label += " x" + std::to_string(r.layers);  // by_op_merged: the layers it adds up
        b.t = r.time;
        b.scale = scale;
        b.right = rollup_right(r, count_word);
        rows.push_back(std::move(b));
    }
    return rows;
}

void rollup_section(std::string& h, const char* id, const char* title, const std::string& intro, const std::vector<Rollup>& v,
                    std::size_t limit, const char* key_title, const char* count_word = "instr") {
    h += "<section id=\"";
    h += id;
    h += "\"><h2>";
    h += title;
    h += "</h2>\n<p>";
    h += intro;
    if (v.size() > limit) h += " The " + std::to_string(limit) + " largest of " + std::to_string(v.size()) + " are shown.";
    h += "</p>\n";
    const auto rows = rollup_rows(v, limit, count_word);
    stacked_bars(h, rows, title);
    cause_table(h, rows, key_title);
    h += "</section>\n";
}

// --- charts over time ----------------------------------------------------------------------

bool is_utilisation(const Series& s) {
    std::string n = s.name;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s.unit == "%" && (n.find("utilisation") != std::string::npos || n.find("utilization") != std::string::npos);
}

// Line charts: HBM first, then links, VMEM, the rest.
int series_group(const Series& s) {
    std::string n = s.name + " " + s.unit;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n.find("hbm") != std::string::npos) return 0;
    if (n.find("link") != std::string::npos || n.find("ici") != std::string::npos) return 1;
    if (n.find("vmem") != std::string::npos) return 2;
    return 3;
}

// The utilisation series (in %) as one heat map: a row per unit, a cell per bucket, darker when busier.
void utilisation_map(std::string& h, const std::vector<const Series*>& ser) {
    constexpr double L = 330, W = 900, RH = 14;
    constexpr int kLevels = 10;
    auto fill = [](int level) {  // level 0..kLevels: #f2f2f2 to #146e14
        const double f = static_cast<double>(level) / kLevels;
        const int r = static_cast<int>(242 + (20 - 242) * f + 0.5), g = static_cast<int>(242 + (110 - 242) * f + 0.5),
                  b = static_cast<int>(242 + (20 - 242) * f + 0.5);
        char c[8];
        std::snprintf(c, sizeof c, "#%02x%02x%02x", r, g, b);
        return std::string(c);
    };
    const double height = RH * static_cast<double>(ser.size()) + 26;
    h += "<figure class=\"chart\"><figcaption>Utilisation over time (busy share of each bucket; darker is busier)";
    h += " \xC2\xB7 0%";
    for (int l = 0; l <= kLevels; l += 2) h += "<span class=\"sw\" style=\"background:" + fill(l) + "\"></span>";
    h += " 100%</figcaption>\n<svg class=\"heat\" width=\"1320\" height=\"" + px(height) + "\" viewBox=\"0 0 1320 " + px(height) +
         "\" role=\"img\" aria-label=\"utilisation over time\">\n";
    Tick span = 0;
    for (std::size_t r = 0; r < ser.size(); ++r) {
        const Series& s = *ser[r];
        span = std::max<Tick>(span, s.bucket * s.values.size());
        const double y = RH * static_cast<double>(r);
        const double ceiling = s.ceiling > 0 ? s.ceiling : 100;
        double mean = 0;
        for (double v : s.values) mean += v;
        if (!s.values.empty()) mean /= static_cast<double>(s.values.size());
        std::string label = s.name;
        const auto cut = label.rfind(" utili");
        if (cut != std::string::npos) label.resize(cut);
        h += "<g><text x=\"0\" y=\"" + px(y + 11) + "\"><title>";
        esc(h, s.name);
        h += ": mean " + fixed(mean, 1) + "%, peak " + fixed(s.high_water, 1) + "%</title>";
        esc(h, clip(label, 46));
        h += "</text>";
        const std::size_t n = s.values.size();
        for (std::size_t i = 0; i < n;) {
            auto level = [&](std::size_t k) {
                return std::clamp(static_cast<int>(s.values[k] / ceiling * kLevels + 0.5), 0, kLevels);
            };
            const int lv = level(i);
            std::size_t j = i + 1;
            while (j < n && level(j) == lv) ++j;
            if (lv > 0) {
                const double x0 = L + W * static_cast<double>(i) / static_cast<double>(n),
                             x1 = L + W * static_cast<double>(j) / static_cast<double>(n);
                h += "<rect x=\"" + px(x0) + "\" y=\"" + px(y + 1) + "\" width=\"" + px(x1 - x0) + "\" height=\"" + px(RH - 2) +
                     "\" fill=\"" + fill(lv) + "\"/>";
            }
            i = j;
        }
        h += "<rect class=\"cell\" x=\"" + px(L) + "\" y=\"" + px(y + 1) + "\" width=\"" + px(W) + "\" height=\"" + px(RH - 2) + "\"/>";
        h += "<text x=\"" + px(L + W + 10) + "\" y=\"" + px(y + 11) + "\">mean " + fixed(mean, 1) + "%</text></g>\n";
    }
    const double ya = RH * static_cast<double>(ser.size()) + 16;
    for (int g = 0; g <= 4; ++g)
        h += "<text class=\"axis\" x=\"" + px(L + W * g / 4) + "\" y=\"" + px(ya) + "\" text-anchor=\"middle\">" +
             duration(static_cast<Tick>(static_cast<double>(span) * g / 4)) + "</text>";
    h += "\n</svg></figure>\n";
}

bool is_bytes_unit(const std::string& u) { return u == "B" || u == "bytes" || u == "byte"; }

std::string value_text(double v, const std::string& unit) {
    if (is_bytes_unit(unit)) return bytes(static_cast<std::uint64_t>(std::max(0.0, v)));
    if (unit == "%") return fixed(v, 1) + "%";
    return number(v) + (unit.empty() ? "" : " " + unit);
}

void line_chart(std::string& h, const Series& s, std::size_t k) {
    constexpr double W = 1240, H = 190, L = 90, R = 180, T = 12, B = 28;
    const double pw = W - L - R, ph = H - T - B;
    const std::size_t n = s.values.size();
    double vmax = std::max(s.ceiling, s.high_water);
    double peak = 0;
    for (double v : s.values) peak = std::max(peak, v);
    vmax = std::max(vmax, peak);
    if (!(vmax > 0)) vmax = 1;
    vmax *= 1.05;
    const double span = static_cast<double>(s.bucket) * static_cast<double>(n);
    auto xs = [&](double i) { return L + pw * (n ? i / static_cast<double>(n) : 0); };
    auto ys = [&](double v) { return T + ph * (1 - std::max(0.0, v) / vmax); };

    h += "<figure class=\"chart\"><figcaption>";
    esc(h, s.name);
    if (!s.unit.empty()) {
        h += " (";
        esc(h, s.unit);
        h += ")";
    }
    h += " \xC2\xB7 peak " + value_text(peak, s.unit);
    if (s.ceiling > 0) h += " of " + value_text(s.ceiling, s.unit) + " (" + percent(peak, s.ceiling) + ")";
    if (s.high_water > 0) h += " \xC2\xB7 high-water mark " + value_text(s.high_water, s.unit);
    h += " \xC2\xB7 buckets of " + duration(s.bucket) + "</figcaption>\n";
    h += "<svg class=\"line\" width=\"1240\" height=\"190\" viewBox=\"0 0 1240 190\" role=\"img\" aria-label=\"";
    esc(h, s.name);
    h += "\">\n";
    // axes and grid
    for (int g = 0; g <= 4; ++g) {
        const double v = vmax / 1.05 * g / 4;
        const double y = ys(v);
        h += "<line class=\"grid\" x1=\"" + px(L) + "\" y1=\"" + px(y) + "\" x2=\"" + px(L + pw) + "\" y2=\"" + px(y) + "\"/>";
        h += "<text class=\"axis\" x=\"" + px(L - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">";
        esc(h, value_text(v, s.unit));
        h += "</text>\n";
    }
    for (int g = 0; g <= 4; ++g) {
        const double x = L + pw * g / 4;
        h += "<text class=\"axis\" x=\"" + px(x) + "\" y=\"" + px(H - 8) + "\" text-anchor=\"middle\">" +
             duration(static_cast<Tick>(span * g / 4)) + "</text>";
    }
    h += "\n<line class=\"axisline\" x1=\"" + px(L) + "\" y1=\"" + px(T + ph) + "\" x2=\"" + px(L + pw) + "\" y2=\"" + px(T + ph) + "\"/>\n";
    // the values, as a step line (each bucket's value across its bucket), with the area under it
    if (n) {
        std::string pts;
        pts.reserve(n * 30);
        for (std::size_t i = 0; i < n; ++i) {
            const double y = ys(s.values[i]);
            pts += px(xs(static_cast<double>(i))) + "," + px(y) + " " + px(xs(static_cast<double>(i + 1))) + "," + px(y) + " ";
        }
        h += "<polygon class=\"area s" + std::to_string(k % 4) + "\" points=\"" + px(L) + "," + px(T + ph) + " " + pts + px(L + pw) + "," +
             px(T + ph) + "\"/>\n";
        pts.pop_back();
        h += "<polyline class=\"val s" + std::to_string(k % 4) + "\" points=\"" + pts + "\"><title>";
        esc(h, s.name);
        h += "</title></polyline>\n";
    }
    if (s.ceiling > 0) {
        const double y = ys(s.ceiling);
        h += "<line class=\"ceiling\" x1=\"" + px(L) + "\" y1=\"" + px(y) + "\" x2=\"" + px(L + pw) + "\" y2=\"" + px(y) + "\"/>";
        h += "<text class=\"ceiling\" x=\"" + px(L + pw + 6) + "\" y=\"" + px(y + 4) + "\">ceiling ";
        esc(h, value_text(s.ceiling, s.unit));
        h += "</text>\n";
    }
    if (s.high_water > 0) {
        const double y = ys(s.high_water);
        h += "<line class=\"hwm\" x1=\"" + px(L) + "\" y1=\"" + px(y) + "\" x2=\"" + px(L + pw) + "\" y2=\"" + px(y) + "\"/>";
        h += "<text class=\"hwm\" x=\"" + px(L + pw + 6) + "\" y=\"" + px(y + (s.ceiling > 0 && std::abs(ys(s.ceiling) - y) < 14 ? 18 : 4)) +
             "\">high-water ";
        esc(h, value_text(s.high_water, s.unit));
        h += "</text>\n";
    }
    h += "</svg></figure>\n";
}

const char* kStyle = R"(body{font-family:sans-serif;margin:20px 28px;color:#222;background:#fff;max-width:1340px}
h1{font-size:22px;margin:0 0 10px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ccc;padding-bottom:3px}
p{margin:4px 0 8px;font-size:14px}nav{font-size:13px;margin:6px 0 10px}nav a{margin-right:12px}
table{border-collapse:collapse;font-size:13px;margin:4px 0}th,td{border-bottom:1px solid #e2e2e2;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;white-space:nowrap}td.t{font-family:monospace;font-size:12px}
table.facts td:first-child{color:#555}
.legend{font-size:13px;margin:8px 0;position:sticky;top:0;background:#fff;padding:4px 0;z-index:1}
.legend .item{margin-right:16px;white-space:nowrap}
.sw{display:inline-block;width:14px;height:14px;vertical-align:-2px;margin-right:5px}
svg text{font-family:sans-serif;font-size:12px;fill:#222}svg text.axis{font-size:11px;fill:#555}
rect.track{fill:#f3f3f3}rect.cell{fill:none;stroke:#ddd;stroke-width:0.5}line.grid{stroke:#e6e6e6;stroke-width:1}line.axisline{stroke:#888;stroke-width:1}
polyline.val{fill:none;stroke-width:1.5}polygon.area{stroke:none;opacity:0.18}
.s0{stroke:#1f77b4;fill:#1f77b4}.s1{stroke:#2ca02c;fill:#2ca02c}.s2{stroke:#9467bd;fill:#9467bd}.s3{stroke:#8c564b;fill:#8c564b}
line.ceiling{stroke:#d62728;stroke-width:1.5;stroke-dasharray:6 4}text.ceiling{fill:#d62728}
line.hwm{stroke:#ff7f0e;stroke-width:1.5;stroke-dasharray:2 3}text.hwm{fill:#b35900}
figure.chart{margin:10px 0 14px}figcaption{font-size:13px;margin-bottom:2px}
details{margin:4px 0 10px;font-size:13px}summary{cursor:pointer;color:#555}
.none{color:#777;font-style:italic}small{color:#666}
)";

}  // namespace

void write_report_html(const std::string& path, const RunData& run, const Analysis& a, bool per_layer) {
    std::string h;
    h.reserve(1 << 18);
    const double end = static_cast<double>(a.end);

    h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>xpusim report";
    auto meta_of = [&](const char* k) -> std::string {
        auto it = run.meta.find(k);
        return it == run.meta.end() ? std::string() : it->second;
    };
    if (!meta_of("trace").empty()) {
        h += ": ";
        esc(h, meta_of("trace"));
    }
    h += "</title>\n<style>\n";
    h += kStyle;
    h += "</style>\n</head>\n<body>\n<h1>xpusim run report</h1>\n";
    h += "<nav><a href=\"#summary\">summary</a><a href=\"#suggestions\">suggestions</a><a href=\"#units\">units</a>"
         "<a href=\"#ops\">ops</a><a href=\"#layers\">layers</a><a href=\"#chips\">chips</a><a href=\"#time\">over time</a>"
         "<a href=\"#critical\">critical path</a><a href=\"#stalls\">stalled instructions</a><a href=\"#dmas\">DMAs</a></nav>\n";

    // --- summary -------------------------------------------------------------------------------
    h += "<section id=\"summary\"><h2>Run</h2>\n<table class=\"facts\"><tbody>\n";
    auto fact = [&](const std::string& k, const std::string& v) {
        h += "<tr><td>";
        esc(h, k);
        h += "</td><td>";
        esc(h, v);
        h += "</td></tr>\n";
    };
    if (!meta_of("platform").empty()) fact("platform", meta_of("platform"));
    if (!meta_of("trace").empty()) fact("trace", meta_of("trace"));
    if (!run.dir.empty()) fact("output folder", run.dir);
    fact("end time", duration(a.end));
    fact("status", std::string(status_text(a.status)) + (a.status ? " (the run did not complete)" : ""));
    fact("instructions", std::to_string(a.instructions));
    fact("log records", std::to_string(a.records));
    fact("streams (cores)", std::to_string(run.streams.size()));
    fact("units", std::to_string(a.units.size()));
    fact("DMAs", std::to_string(run.dmas.size()));
    h += "</tbody></table>\n";
    if (!run.meta.empty()) {
        h += "<details><summary>platform facts from the log header</summary><table class=\"facts\"><tbody>\n";
        for (const auto& [k, v] : run.meta) fact(k, v);
        h += "</tbody></table></details>\n";
    }
    legend(h);
    {
        std::vector<BarRow> rows;
        BarRow core;
        core.label = "all cores";
        core.t = a.core_total;
        core.scale = static_cast<double>(sum(a.core_total));
        core.right = duration(sum(a.core_total)) + " core time";
        rows.push_back(core);
        BarRow crit;
        crit.label = "critical path";
        crit.t = a.critical_by_cause;
        crit.scale = static_cast<double>(sum(a.critical_by_cause));
        crit.right = duration(sum(a.critical_by_cause)) + " on the path";
        rows.push_back(crit);
        h += "<p>Where the cores' time went (issuing, and stalled by cause), and the causes along the critical path.</p>\n";
        stacked_bars(h, rows, "core time and critical path by cause");
        cause_table(h, rows, "");
    }
    h += "</section>\n";

    // --- suggestions ---------------------------------------------------------------------------
    h += "<section id=\"suggestions\"><h2>Suggestions</h2>\n";
    {
        std::vector<const Suggestion*> sug;
        for (const auto& s : a.suggestions) sug.push_back(&s);  // in the ranking --apply N uses
        h += "<p>Bounds: ";
        esc(h, describe_headroom(a.bounds, a.end));
        h += ".</p>\n";
        if (!a.verify_note.empty()) {
            h += "<p>";
            esc(h, a.verify_note);
            h += ".</p>\n";
        }
        if (!a.together.ranks.empty() && a.together.measured) {
            h += "<p>Verified suggestions " + ranks_text(a.together.ranks) + " compose; applied together (<code>--apply " +
                 ranks_text(a.together.ranks) + "</code>) they save " + duration(static_cast<Tick>(std::llabs(a.together.measured_saving))) +
                 " (" + percent(static_cast<double>(a.together.measured_saving), static_cast<double>(a.end)) + " of the run, measured by replay).</p>\n";
        }
        if (sug.empty()) {
            h += "<p class=\"none\">No suggestion.</p>\n";
        } else {
            h += std::string("<p>") + (a.verified ? "Verified by replay, ranked by measured saving (then the ones not replayed, by estimate, "
                                                    "then those that gained nothing). "
                                                  : "Not verified by replay: ranked by estimated saving. ") +
                 "<code>xpu_analyze OUTDIR --apply N -o patched.bin</code> writes the trace with suggestion N applied.</p>\n";
            h += "<table class=\"sug\"><thead><tr><th>#</th><th>kind</th><th>where</th><th>finding</th><th>action</th>"
                 "<th>status</th><th>measured saving</th><th>estimated saving</th><th>changes</th></tr></thead><tbody>\n";
            for (std::size_t i = 0; i < sug.size(); ++i) {
                const Suggestion& s = *sug[i];
                h += "<tr><td class=\"n\">" + std::to_string(i + 1) + "</td><td>";
                esc(h, s.kind);
                if (s.variant) h += " <small>(variant)</small>";
                h += "</td><td>";
                esc(h, s.where);
                h += "</td><td>";
                esc(h, s.cause);
                names_details(h, "ops", s.ops);
                names_details(h, "DMAs' ops", s.dma_ops);
                h += "</td><td>";
                esc(h, s.action);
                h += "</td><td>";
                esc(h, verdict_key(s.verdict));
                if (!s.verdict_note.empty()) {
                    h += "<br><small>";
                    esc(h, s.verdict_note);
                    h += "</small>";
                }
                h += "</td><td class=\"n\">";
                if (s.measured)
                    h += (s.measured_saving < 0 ? "-" : "") + duration(static_cast<Tick>(std::llabs(s.measured_saving))) + " <small>(" +
                         percent(static_cast<double>(s.measured_saving), static_cast<double>(end)) + ")</small>";
                else
                    h += "&mdash;";
                h += "</td><td class=\"n\">" + duration(s.estimated_saving) + " <small>(" +
                     percent(static_cast<double>(s.estimated_saving), end) + " of the run" + capped_note(s) +
                     ")</small></td><td>";
                if (s.relowering) esc(h, "the whole trace lowered again: " + s.relowering->command);
                else if (s.moves.empty() && s.edits.empty()) h += "none recorded";
                else esc(h, changes_text(counted_changes(run, s)));  // as xpu_analyze --apply counts them
                if (!s.edits.empty()) {  // merge_dma: the rewritten DMAs first, then the dropped ones
                    const std::size_t show = std::min<std::size_t>(s.edits.size(), 3);
                    for (std::size_t m = 0; m < show; ++m) {
                        const Edit& ed = s.edits[m];
                        h += "<br><small>";
                        std::string t = "rewrite " + instr_text(run, ed.stream, ed.index) + " to " + instruction_text(run, ed.in);
                        if (!ed.then.empty()) t += " and " + std::to_string(ed.then.size()) + " more after it";
                        esc(h, t);
                        h += "</small>";
                    }
                    if (s.edits.size() > show) h += "<br><small>\xE2\x80\xA6</small>";
                }
                if (!s.moves.empty()) {
                    const std::size_t show = std::min<std::size_t>(s.moves.size(), 3);
                    for (std::size_t m = 0; m < show; ++m) {
                        const Move& mv = s.moves[m];
                        h += "<br><small>";
                        if (mv.before == Move::kDelete)
                            esc(h, "delete " + instr_text(run, mv.stream, mv.from));
                        else
                            esc(h, "move " + instr_text(run, mv.stream, mv.from) + " before " + target_text(run, mv.stream, mv.before));
                        h += "</small>";
                    }
                    if (s.moves.size() > show) h += "<br><small>\xE2\x80\xA6</small>";
                }
                h += "</td></tr>\n";
            }
            h += "</tbody></table>\n";
        }
    }
    h += "</section>\n";

    // --- per unit ------------------------------------------------------------------------------
    if (!a.sensitivity.empty()) {
        h += "<section id=\"sensitivity\"><h2>Hardware sensitivity</h2>\n<p>The trace replayed with one resource at a time made " +
             JsonWriter::number(a.sensitivity[0].factor) + "x as capable; the <code>--set</code> reproduces each line.</p>\n";
        h += "<table><thead><tr><th>speedup</th><th>resource</th><th>simulated time</th><th>--set</th></tr></thead><tbody>\n";
        for (const SensitivityLine& l : a.sensitivity) {
            h += "<tr><td class=\"n\">";
            h += l.measured ? JsonWriter::number(std::round(l.speedup * 1000) / 1000) + "x" : std::string("&mdash;");
            h += "</td><td>";
            esc(h, l.resource);
            h += "</td><td class=\"n\">";
            h += l.measured ? duration(static_cast<Tick>(l.simulated_time_ns * 1000.0 + 0.5)) : std::string("&mdash;");
            h += "</td><td><small>";
            for (const auto& set : l.sets) {
                h += "--set ";
                esc(h, set);
                h += " ";
            }
            h += "</small></td></tr>\n";
        }
        h += "</tbody></table></section>\n";
    }
    h += "<section id=\"units\"><h2>Time per unit</h2>\n<p>Every unit's time from 0 to the end (" + duration(a.end) +
         "), split by what it was doing: busy, stalled (by cause) or idle.";
    if (a.units.size() > kMaxUnitRows)
        h += " The first " + std::to_string(kMaxUnitRows) + " of " + std::to_string(a.units.size()) +
             " units are shown; the kinds of unit below add up all of them.";
    h += "</p>\n";
    {
        std::vector<BarRow> rows;
        for (std::size_t i = 0; i < a.units.size() && i < kMaxUnitRows; ++i) {
            const UnitAccount& u = a.units[i];
            BarRow b;
            b.label = u.name;
            b.hint = u.kind;
            b.t = u.time;
            b.scale = std::max(end, static_cast<double>(sum(u.time)));
            const double total = static_cast<double>(sum(u.time));
            b.right = "busy " + percent(static_cast<double>(u.time[0]), total);
            std::size_t worst = kCauses;
            for (std::size_t c = 1; c + 1 < kCauses; ++c)
                if (u.time[c] && (worst == kCauses || u.time[c] > u.time[worst])) worst = c;
            if (worst != kCauses) b.right += std::string(" \xC2\xB7 ") + cause_name(cause_at(worst)) + " " + percent(static_cast<double>(u.time[worst]), total);
            rows.push_back(std::move(b));
        }
        stacked_bars(h, rows, "time per unit by cause");
        cause_table(h, rows, "unit");
    }
    h += "</section>\n";

    {
        // Added up over layers unless asked per layer (the merged list has no more rows than by_op).
        const bool merged = !per_layer && !a.by_op_merged.empty() && a.by_op_merged.size() < a.by_op.size();
        std::string intro = "Core time (issue slots and stalls) by the instructions' annotation (op), largest first.";
        if (merged)
            intro += " Each op added up over the layers (layer*/..., xN: N layers); per layer: <code>xpu_analyze OUT --per-layer</code>.";
        rollup_section(h, "ops", "Core time per op", intro, merged ? a.by_op_merged : a.by_op, kTopOps, "op");
    }
    rollup_section(h, "layers", "Core time per layer", "Core time by layer (the annotations' layerN/ prefix).", a.by_layer,
                   kMaxRollupRows, "layer");
    rollup_section(h, "chips", "Core time per chip", "Core time of each chip's cores.", a.by_chip, kMaxRollupRows, "chip");
    rollup_section(h, "kinds", "Time per kind of unit", "Every unit's time added up by kind.", a.by_unit_kind, kMaxRollupRows,
                   "kind", "units");

    // --- over time -----------------------------------------------------------------------------
    h += "<section id=\"time\"><h2>Over time</h2>\n";
    {
        std::vector<const Series*> util, ser;
        for (const auto& s : a.series) (is_utilisation(s) ? util : ser).push_back(&s);
        std::stable_sort(ser.begin(), ser.end(), [](const Series* x, const Series* y) { return series_group(*x) < series_group(*y); });
        if (util.empty() && ser.empty()) h += "<p class=\"none\">No series.</p>\n";
        if (util.size() > kMaxHeatRows) {
            h += "<p>Utilisation: the first " + std::to_string(kMaxHeatRows) + " of " + std::to_string(util.size()) + " units are shown.</p>\n";
            util.resize(kMaxHeatRows);
        }
        if (!util.empty()) utilisation_map(h, util);
        if (ser.size() > kMaxSeries)
            h += "<p>The first " + std::to_string(kMaxSeries) + " of " + std::to_string(ser.size()) + " series are shown.</p>\n";
        for (std::size_t i = 0; i < ser.size() && i < kMaxSeries; ++i) line_chart(h, *ser[i], i);
    }
    h += "</section>\n";

    // --- critical path -------------------------------------------------------------------------
    h += "<section id=\"critical\"><h2>Critical path</h2>\n";
    if (a.critical_path.empty()) {
        h += "<p class=\"none\">No critical path.</p>\n";
    } else {
        h += "<p>The chain of instructions and transfers that sets the end time, latest first (" +
             std::to_string(a.critical_path_steps) + " steps";
        if (a.critical_path_steps > kMaxPathRows) h += "; the latest " + std::to_string(kMaxPathRows) + " are shown";
        h += ").</p>\n<table class=\"path\"><thead><tr><th>#</th><th>node</th><th>edge (why not earlier)</th><th>cause</th>"
             "<th>start</th><th>duration</th></tr></thead><tbody>\n";
        for (std::size_t i = 0; i < a.critical_path.size() && i < kMaxPathRows; ++i) {
            const PathStep& p = a.critical_path[i];
            h += "<tr><td class=\"n\">" + std::to_string(i + 1) + "</td><td class=\"t\">";
            esc(h, p.node);
            h += "</td><td>";
            esc(h, p.edge);
            h += "</td><td>";
            swatch(h, p.cause);
            esc(h, cause_name(p.cause));
            h += "</td><td class=\"n\">" + duration(p.begin) + "</td><td class=\"n\">" + duration(p.end >= p.begin ? p.end - p.begin : 0) +
                 "</td></tr>\n";
        }
        h += "</tbody></table>\n";
    }
    h += "</section>\n";

    // --- top stalls ----------------------------------------------------------------------------
    h += "<section id=\"stalls\"><h2>Most stalled instructions</h2>\n";
    if (a.top_stalls.empty()) {
        h += "<p class=\"none\">No stalled instruction.</p>\n";
    } else {
        h += "<p>The time between the moment each could have issued and its issue, by cause, longest first.</p>\n"
             "<table class=\"stalls\"><thead><tr><th>#</th><th>instruction</th><th>stall</th><th>by cause</th><th>why</th>"
             "</tr></thead><tbody>\n";
        for (std::size_t i = 0; i < a.top_stalls.size(); ++i) {
            const Stall& s = a.top_stalls[i];
            h += "<tr><td class=\"n\">" + std::to_string(i + 1) + "</td><td class=\"t\">";
            esc(h, instr_text(run, s.stream, s.index));
            h += "</td><td class=\"n\">" + duration(s.total) + "</td><td>";
            mini_bar(h, s.by, "stall by cause");
            h += "</td><td>";
            esc(h, s.why);
            h += "</td></tr>\n";
        }
        h += "</tbody></table>\n";
    }
    h += "</section>\n";

    // --- DMAs ----------------------------------------------------------------------------------
    h += "<section id=\"dmas\"><h2>DMAs</h2>\n";
    {
        std::vector<const DmaView*> d;
        for (const auto& v : a.dmas) d.push_back(&v);
        std::stable_sort(d.begin(), d.end(), [](const DmaView* x, const DmaView* y) { return x->caused_stall > y->caused_stall; });
        if (d.empty()) {
            h += "<p class=\"none\">No DMA.</p>\n";
        } else {
            h += "<p>The DMAs whose completion the cores waited for longest";
            if (d.size() > kTopDmas) h += " (" + std::to_string(kTopDmas) + " of " + std::to_string(d.size()) + ")";
            h += ". Issue delay: from the moment it could have issued in program order to its issue.</p>\n"
                 "<table class=\"dma\"><thead><tr><th>#</th><th>instruction</th><th>annotation</th><th>engine</th><th>bytes</th>"
                 "<th>could issue</th><th>issue delay</th><th>transfer (from)</th><th>achieved</th><th>overlap with compute</th>"
                 "<th>cores waited</th></tr></thead><tbody>\n";
            for (std::size_t i = 0; i < d.size() && i < kTopDmas; ++i) {
                const DmaView& v = *d[i];
                const Tick xfer = v.complete >= v.start ? v.complete - v.start : 0;
                h += "<tr><td class=\"n\">" + std::to_string(i + 1) + "</td><td class=\"t\">";
                esc(h, instr_label(run, v.stream, v.index));
                h += "</td><td>";
                esc(h, v.annotation);
                h += "</td><td>";
                esc(h, v.engine);
                h += "</td><td class=\"n\">" + bytes(v.bytes) + "</td><td class=\"n\">" + duration(v.earliest_issue) +
                     "</td><td class=\"n\">" + duration(v.issue >= v.earliest_issue ? v.issue - v.earliest_issue : 0) +
                     "</td><td class=\"n\">" + duration(xfer) + " from " + duration(v.start) + "</td><td class=\"n\">" +
                     number(v.achieved_gbps) + " GB/s</td><td class=\"n\">" + duration(v.overlap_compute) + " <small>(" +
                     percent(static_cast<double>(v.overlap_compute), static_cast<double>(xfer)) + ")</small></td><td class=\"n\">" +
                     duration(v.caused_stall) + "</td></tr>\n";
            }
            h += "</tbody></table>\n";
        }
    }
    h += "</section>\n";
    h += "<footer><p><small>xpusim analysis of " + std::to_string(a.records) +
         " log records. Charts are drawn in the page; it needs no network.</small></p></footer>\n</body>\n</html>\n";

    FileOut out(path);
    out.write(h);
    out.close();
}

}  // namespace xpu::analysis
