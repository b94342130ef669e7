// The renderers of an analysis (analysis/report_html.*, analysis/timeline_json.*) on a run and
// analysis built by hand (analysis_sample.h): report.html is well formed, self-contained,
// escapes every data string, shows every cause in its legend and the tables the issue asks
// for; timeline.json is valid JSON in the trace-event format (every event with ph, pid, tid,
// ts; slices with a name and dur >= 0; a name for every process and track; slices of one track
// never overlap, even at Perfetto's ns resolution), with the expected tracks and slices, and
// merges slices past its cap. Both are deterministic. No SystemC.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "analysis/render_util.h"
#include "analysis/report_html.h"
#include "analysis/timeline_json.h"
#include "traces/json_writer.h"
#include "analysis_sample.h"

namespace xpu::analysis {
namespace {

namespace fs = std::filesystem;

// --- a strict little JSON parser (RFC 8259), enough to check and walk the timeline ----------

struct Json;
using JsonObject = std::vector<std::pair<std::string, Json>>;
using JsonArray = std::vector<Json>;
struct Json {
    std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>, std::shared_ptr<JsonObject>> v;
    bool is_num() const { return std::holds_alternative<double>(v); }
    bool is_str() const { return std::holds_alternative<std::string>(v); }
    bool is_obj() const { return std::holds_alternative<std::shared_ptr<JsonObject>>(v); }
    bool is_arr() const { return std::holds_alternative<std::shared_ptr<JsonArray>>(v); }
    double num() const { return std::get<double>(v); }
    const std::string& str() const { return std::get<std::string>(v); }
    const JsonArray& arr() const { return *std::get<std::shared_ptr<JsonArray>>(v); }
    const JsonObject& obj() const { return *std::get<std::shared_ptr<JsonObject>>(v); }
    const Json* get(const std::string& k) const {
        if (!is_obj()) return nullptr;
        for (const auto& [key, val] : obj())
            if (key == k) return &val;
        return nullptr;
    }
};

class Parser {
public:
    explicit Parser(const std::string& s) : s_(s) {}
    Json document() {
        Json j = value();
        ws();
        if (p_ != s_.size()) fail("text after the document");
        return j;
    }

private:
    [[noreturn]] void fail(const std::string& what) { throw std::runtime_error("JSON at byte " + std::to_string(p_) + ": " + what); }
    void ws() {
        while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t')) ++p_;
    }
    bool eat(char c) {
        ws();
        if (p_ < s_.size() && s_[p_] == c) {
            ++p_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!eat(c)) fail(std::string("expected '") + c + "'");
    }
    Json value() {
        ws();
        if (p_ >= s_.size()) fail("unexpected end");
        const char c = s_[p_];
        if (c == '{') {
            ++p_;
            auto o = std::make_shared<JsonObject>();
            std::set<std::string> keys;
            if (!eat('}')) {
                do {
                    ws();
                    std::string k = string();
                    if (!keys.insert(k).second) fail("duplicate key " + k);
                    expect(':');
                    o->emplace_back(std::move(k), value());
                } while (eat(','));
                expect('}');
            }
            return Json{o};
        }
        if (c == '[') {
            ++p_;
            auto a = std::make_shared<JsonArray>();
            if (!eat(']')) {
                do a->push_back(value());
                while (eat(','));
                expect(']');
            }
            return Json{a};
        }
        if (c == '"') return Json{string()};
        if (s_.compare(p_, 4, "true") == 0) return p_ += 4, Json{true};
        if (s_.compare(p_, 5, "false") == 0) return p_ += 5, Json{false};
        if (s_.compare(p_, 4, "null") == 0) return p_ += 4, Json{nullptr};
        return Json{number()};
    }
    double number() {
        const std::size_t b = p_;
        if (p_ < s_.size() && s_[p_] == '-') ++p_;
        if (p_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[p_]))) fail("bad number");
        if (s_[p_] == '0' && p_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_ + 1]))) fail("leading zero");
        while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
        if (p_ < s_.size() && s_[p_] == '.') {
            ++p_;
            if (p_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[p_]))) fail("bad fraction");
            while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
        }
        if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
            ++p_;
            if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
            if (p_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[p_]))) fail("bad exponent");
            while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
        }
        return std::stod(s_.substr(b, p_ - b));
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    unsigned hex4() {
        if (p_ + 4 > s_.size()) fail("short \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = s_[p_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }
    std::string string() {
        if (p_ >= s_.size() || s_[p_] != '"') fail("expected a string");
        ++p_;
        std::string out;
        for (;;) {
            if (p_ >= s_.size()) fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(s_[p_++]);
            if (c == '"') return out;
            if (c < 0x20) fail("control character in a string");
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            if (p_ >= s_.size()) fail("unterminated escape");
            const char e = s_[p_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        if (s_.compare(p_, 2, "\\u") != 0) fail("lone surrogate");
                        p_ += 2;
                        const unsigned lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("bad surrogate pair");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        fail("lone surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }
    const std::string& s_;
    std::size_t p_ = 0;
};

bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!n || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream os;
    os << f.rdbuf();
    return os.str();
}

// Each test writes into its own folder (suite, name, pid), removed when the process ends.
std::set<fs::path>& temp_dirs() {
    static std::set<fs::path> dirs;
    return dirs;
}
struct RemoveTempDirs : ::testing::Environment {
    void TearDown() override {
        std::error_code ec;
        for (const auto& d : temp_dirs()) fs::remove_all(d, ec);
    }
};
[[maybe_unused]] const ::testing::Environment* const kRemoveTempDirs = ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string temp_path(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::temp_directory_path() / ("xpu_analysis_render_" + std::string(info->test_suite_name()) + "_" +
                                                      info->name() + "_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    temp_dirs().insert(dir);
    return (dir / name).string();
}

// --- HTML: tag structure -------------------------------------------------------------------

// Checks that every element is closed, in order (void elements aside), that attribute values
// are quoted, and that no raw '<' appears in text. Returns "" or what is wrong.
std::string check_html_structure(const std::string& h, std::map<std::string, int>* counts = nullptr) {
    static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"};
    std::vector<std::string> stack;
    std::size_t i = 0;
    if (h.rfind("<!DOCTYPE html>", 0) != 0) return "no <!DOCTYPE html> first";
    i = h.find('>') + 1;
    while (i < h.size()) {
        const std::size_t lt = h.find('<', i);
        if (lt == std::string::npos) break;
        if (h.compare(lt, 4, "<!--") == 0) {
            i = h.find("-->", lt);
            if (i == std::string::npos) return "unterminated comment";
            i += 3;
            continue;
        }
        std::size_t p = lt + 1;
        const bool closing = p < h.size() && h[p] == '/';
        if (closing) ++p;
        std::size_t q = p;
        while (q < h.size() && (std::isalnum(static_cast<unsigned char>(h[q])) || h[q] == '-')) ++q;
        const std::string name = h.substr(p, q - p);
        if (name.empty()) return "a raw '<' in text at byte " + std::to_string(lt);
        // attributes: name="value" pairs up to '>' or '/>'
        bool self_closing = false;
        for (;;) {
            while (q < h.size() && std::isspace(static_cast<unsigned char>(h[q]))) ++q;
            if (q >= h.size()) return "unterminated tag <" + name;
            if (h[q] == '>') {
                ++q;
                break;
            }
            if (h.compare(q, 2, "/>") == 0) {
                self_closing = true;
                q += 2;
                break;
            }
            if (closing) return "attributes in </" + name + ">";
            const std::size_t a = q;
            while (q < h.size() && (std::isalnum(static_cast<unsigned char>(h[q])) || h[q] == '-' || h[q] == ':')) ++q;
            if (q == a) return "bad attribute in <" + name + "> at byte " + std::to_string(q);
            if (h.compare(q, 2, "=\"") != 0) return "unquoted attribute in <" + name + "> at byte " + std::to_string(q);
            const std::size_t end = h.find('"', q + 2);
            if (end == std::string::npos) return "unterminated attribute";
            if (h.substr(q + 2, end - q - 2).find('<') != std::string::npos) return "'<' in an attribute of <" + name + ">";
            q = end + 1;
        }
        i = q;
        if (closing) {
            if (stack.empty() || stack.back() != name)
                return "</" + name + "> closes <" + (stack.empty() ? std::string("nothing") : stack.back()) + "> at byte " +
                       std::to_string(lt);
            stack.pop_back();
            continue;
        }
        if (counts) ++(*counts)[name];
        if (self_closing || kVoid.count(name)) continue;
        if (name == "style" || name == "script") {  // raw text up to its end tag
            const std::size_t end = h.find("</" + name + ">", i);
            if (end == std::string::npos) return "unterminated <" + name + ">";
            i = end;
        }
        stack.push_back(name);
    }
    if (!stack.empty()) return "<" + stack.back() + "> is never closed";
    if (h.find('>', 0) == std::string::npos) return "empty";
    return "";
}

std::string section(const std::string& h, const std::string& id) {
    const std::size_t b = h.find("<section id=\"" + id + "\">");
    if (b == std::string::npos) return "";
    return h.substr(b, h.find("</section>", b) - b);
}

std::size_t count(const std::string& h, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t p = h.find(what); p != std::string::npos; p = h.find(what, p + 1)) ++n;
    return n;
}

class HtmlReport : public ::testing::Test {
protected:
    void SetUp() override {
        run_ = sample::run();
        a_ = sample::analysis(run_);
        path_ = temp_path("report.html");
        write_report_html(path_, run_, a_);
        html_ = slurp(path_);
        ASSERT_FALSE(html_.empty());
    }
    RunData run_;
    Analysis a_;
    std::string path_, html_;
};

TEST_F(HtmlReport, IsWellFormed) {
    std::map<std::string, int> counts;
    EXPECT_EQ(check_html_structure(html_, &counts), "");
    EXPECT_EQ(html_.substr(html_.size() - 8), "</html>\n");
    EXPECT_TRUE(valid_utf8(html_));
    EXPECT_EQ(count(html_, "<svg"), count(html_, "</svg>"));
    EXPECT_EQ(count(html_, "<table"), count(html_, "</table>"));
    EXPECT_GE(counts["svg"], 10);  // bars, line charts, mini bars
    EXPECT_GE(counts["table"], 5);
    EXPECT_NE(html_.find("<meta charset=\"utf-8\">"), std::string::npos);
}

TEST_F(HtmlReport, EscapesEveryDataString) {
    // The annotation, op key, why, node and suggestion carry "<script>..."; none reaches the page raw.
    std::string lower = html_;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    EXPECT_EQ(lower.find("<script"), std::string::npos);
    EXPECT_EQ(html_.find("<b>"), std::string::npos);
    EXPECT_EQ(html_.find("<i>"), std::string::npos);
    const std::string escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;";
    EXPECT_GE(count(html_, escaped), 4u) << "op key, stall why, critical path node, suggestion";
    EXPECT_NE(html_.find("&lt;b&gt;(4.00 MiB)&lt;/b&gt;"), std::string::npos);
    EXPECT_NE(html_.find("out/sample&lt;&amp;&gt;"), std::string::npos);
    EXPECT_NE(html_.find("traces/sample&lt;b&gt;.bin"), std::string::npos);
    // invalid UTF-8 became U+FFFD
    EXPECT_EQ(html_.find('\xff'), std::string::npos);
}

TEST_F(HtmlReport, IsSelfContained) {
    // (the instructions' text form has " src=hbm:..."; an attribute would be src=")
    for (const char* bad : {"http:", "https:", "src=\"", "href=\"http", "<link", "url(", "@import", "<script", "<iframe", "<object", "<img"})
        EXPECT_EQ(html_.find(bad), std::string::npos) << bad;
}

TEST_F(HtmlReport, LegendHasEveryCause) {
    const std::size_t b = html_.find("<div class=\"legend\"");
    ASSERT_NE(b, std::string::npos);
    const std::string legend = html_.substr(b, html_.find("</div>", b) - b);
    for (std::size_t c = 0; c < kCauses; ++c) {
        const Cause cause = static_cast<Cause>(c);
        EXPECT_NE(legend.find(render::html_escape(cause_name(cause))), std::string::npos) << cause_name(cause);
        EXPECT_NE(legend.find(std::string("background:") + render::cause_color(cause)), std::string::npos);
        // and every cause is drawn as a bar segment somewhere in the per-unit chart
        EXPECT_NE(section(html_, "units").find(std::string("fill=\"") + render::cause_color(cause) + "\""), std::string::npos)
            << cause_name(cause);
    }
    std::set<std::string> colors;
    for (std::size_t c = 0; c < kCauses; ++c) colors.insert(render::cause_color(static_cast<Cause>(c)));
    EXPECT_EQ(colors.size(), kCauses) << "one colour per cause";
}

TEST_F(HtmlReport, ShowsRunFacts) {
    const std::string s = section(html_, "summary");
    EXPECT_NE(s.find("<td>end time</td><td>20.00 us</td>"), std::string::npos);
    EXPECT_NE(s.find("<td>status</td><td>completed</td>"), std::string::npos);
    EXPECT_NE(s.find("<td>instructions</td><td>14</td>"), std::string::npos);
    EXPECT_NE(s.find("<td>log records</td><td>" + std::to_string(run_.records) + "</td>"), std::string::npos);
    EXPECT_NE(s.find("configs/xpu.yaml"), std::string::npos);
}

TEST_F(HtmlReport, UnitsGetOneBarEach) {
    const std::string s = section(html_, "units");
    for (const auto& u : a_.units) EXPECT_NE(s.find(">" + u.name + "</text>"), std::string::npos) << u.name;
    // core0: busy 8000 of 20 us; its largest stall is HBM
    EXPECT_NE(s.find("busy 0.5% \xC2\xB7 HBM bandwidth/queueing 25.0%"), std::string::npos);
}

TEST_F(HtmlReport, OpsShowsTheTop20Largest) {
    const std::string s = section(html_, "ops");
    for (std::size_t r = 0; r < sample::kOps; ++r) {
        char key[16];
        std::snprintf(key, sizeof key, "op%02zu", r);
        if (r == 3) continue;  // the escaped script
        if (r < 20)
            EXPECT_NE(s.find(std::string(">") + key + "</text>"), std::string::npos) << key;
        else
            EXPECT_EQ(s.find(key), std::string::npos) << key;
    }
    // largest first
    EXPECT_LT(s.find(">op00<"), s.find(">op01<"));
    EXPECT_LT(s.find(">op01<"), s.find(">op19<"));
    EXPECT_NE(s.find("The 20 largest of 25 are shown."), std::string::npos);
    EXPECT_NE(section(html_, "layers").find(">layer1</text>"), std::string::npos);
    EXPECT_NE(section(html_, "chips").find(">chip1</text>"), std::string::npos);
}

TEST_F(HtmlReport, SeriesHaveCeilingAndHighWater) {
    const std::string s = section(html_, "time");
    EXPECT_EQ(count(s, "<svg class=\"line\""), a_.series.size() - 1);  // utilisation: in the heat map
    EXPECT_EQ(count(s, "<svg class=\"heat\""), 1u);
    EXPECT_NE(s.find(">xpu.chip0.core0.mxu0</text>"), std::string::npos);
    EXPECT_EQ(count(s, "<line class=\"ceiling\""), 3u);
    EXPECT_EQ(count(s, "<line class=\"hwm\""), 1u);
    EXPECT_NE(html_.find("line.ceiling{stroke:#d62728;stroke-width:1.5;stroke-dasharray"), std::string::npos) << "dashed";
    EXPECT_NE(s.find("high-water 12.00 MiB"), std::string::npos);
    EXPECT_NE(s.find("ceiling 1200 GB/s"), std::string::npos);
    // utilisation first, then HBM, links, VMEM
    EXPECT_LT(s.find("Utilisation over time"), s.find("hbm bandwidth"));
    EXPECT_LT(s.find("hbm bandwidth"), s.find("chip0_xp traffic"));
    EXPECT_LT(s.find("chip0_xp traffic"), s.find("vmem occupancy"));
}

TEST_F(HtmlReport, CriticalPathTable) {
    const std::string s = section(html_, "critical");
    EXPECT_EQ(count(s, "<tr>"), a_.critical_path.size() + 1);
    EXPECT_NE(s.find("xpu.chip0.dma0 transfer of #6 [&lt;script&gt;"), std::string::npos);
    EXPECT_NE(s.find("<td>unit busy: xpu.chip0.core0.mxu0</td>"), std::string::npos);
    EXPECT_NE(s.find("<td class=\"n\">3.880 us</td>"), std::string::npos);  // the transfer's duration
}

TEST_F(HtmlReport, TopStallsInTextForm) {
    const std::string s = section(html_, "stalls");
    EXPECT_EQ(count(s, "<tr>"), a_.top_stalls.size() + 1);
    for (const auto& st : a_.top_stalls)
        EXPECT_NE(s.find(render::html_escape(describe(run_, st.stream, st.index))), std::string::npos)
            << describe(run_, st.stream, st.index);
    EXPECT_NE(s.find("chip0.core0 #1 swait"), std::string::npos);
    EXPECT_NE(s.find("4.999 us"), std::string::npos);
}

TEST_F(HtmlReport, DmaTableTop20ByCausedStall) {
    const std::string s = section(html_, "dmas");
    EXPECT_EQ(count(s, "<tr>"), 21u);
    EXPECT_NE(s.find("(20 of 25)"), std::string::npos);
    // caused_stall = ((i*7) % 25 + 1) us/1000: the largest is i with i*7%25 == 24, i.e. i = 7
    std::vector<std::pair<Tick, std::string>> all;
    for (const auto& v : a_.dmas) all.push_back({v.caused_stall, v.annotation});
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    std::size_t last = 0;
    for (std::size_t k = 0; k < all.size(); ++k) {
        const std::size_t at = s.find("<td>" + all[k].second + "</td>");
        if (k < 20) {
            ASSERT_NE(at, std::string::npos) << all[k].second;
            EXPECT_GT(at, last) << all[k].second;
            last = at;
        } else {
            EXPECT_EQ(at, std::string::npos) << all[k].second;
        }
    }
    EXPECT_EQ(all[0].second, "dma07");
    EXPECT_NE(s.find("<td class=\"n\">512.00 KiB</td>"), std::string::npos);  // dma07: 8 << 16 bytes
}

TEST_F(HtmlReport, SuggestionsRankedBySaving) {
    const std::string s = section(html_, "suggestions");
    const std::size_t hoist = s.find("<td>hoist_dma</td>"), reorder = s.find("<td>reorder</td>"), drop = s.find("<td>drop_wait</td>");
    ASSERT_NE(hoist, std::string::npos);
    ASSERT_NE(reorder, std::string::npos);
    ASSERT_NE(drop, std::string::npos);
    EXPECT_LT(hoist, reorder);
    EXPECT_LT(reorder, drop);
    EXPECT_NE(s.find("3.000 us"), std::string::npos);
    EXPECT_NE(s.find("(15.0% of the run)"), std::string::npos);
    EXPECT_NE(s.find("delete the swait &lt;i&gt;#1&lt;/i&gt;"), std::string::npos);
    EXPECT_NE(s.find("delete chip0.core0 #1"), std::string::npos);
    // Changes as instruction text with the annotation, not bare indices.
    EXPECT_NE(s.find("move chip0.core0 #6 dma src=hbm:0x100000 dst=vmem:0x2000 bytes=2097152 flag=2 ["), std::string::npos);
    EXPECT_NE(s.find("before #2 mpush s0=v2 [layer0/gemm/matmul]"), std::string::npos);
    EXPECT_NE(s.find("delete chip0.core0 #1 swait flag=1 val=1 cond=ge"), std::string::npos);
    EXPECT_NE(s.find("move chip0.core0 #5"), std::string::npos);
}

TEST_F(HtmlReport, IsDeterministic) {
    const std::string again = temp_path("again.html");
    write_report_html(again, run_, a_);
    EXPECT_EQ(slurp(again), html_);
}

TEST(HtmlReportEdge, EmptyAnalysisStillRenders) {
    RunData run;
    Analysis a;
    const std::string p = temp_path("empty.html");
    write_report_html(p, run, a);
    const std::string h = slurp(p);
    EXPECT_EQ(check_html_structure(h), "");
    EXPECT_NE(h.find("No suggestion."), std::string::npos);
    EXPECT_NE(h.find("No critical path."), std::string::npos);
}

TEST(HtmlReportEdge, UnwritablePathThrowsNamingIt) {
    RunData run;
    Analysis a;
    try {
        write_report_html("/nonexistent-dir/x/report.html", run, a);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/report.html"), std::string::npos) << e.what();
    }
    try {
        write_timeline_json("/nonexistent-dir/x/timeline.json", run, a);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/timeline.json"), std::string::npos) << e.what();
    }
}

// --- timeline.json -------------------------------------------------------------------------

struct Slice {
    double ts, dur;
    std::string name, cat;
    const Json* args;
};

// Walks a trace-event document, checking the format; collects the slices per (pid, tid) and the
// names of processes and threads.
struct Trace {
    Json doc;
    std::map<std::pair<long, long>, std::vector<Slice>> slices;
    std::map<long, std::string> process_names;
    std::map<std::pair<long, long>, std::string> thread_names;
    std::map<std::string, std::vector<std::pair<double, double>>> counters;
    std::size_t events = 0;

    std::vector<Slice> by_thread_name(const std::string& n) const {
        for (const auto& [k, v] : thread_names)
            if (v == n) {
                auto it = slices.find(k);
                return it == slices.end() ? std::vector<Slice>{} : it->second;
            }
        return {};
    }
    std::size_t count_cat(const std::string& cat) const {
        std::size_t n = 0;
        for (const auto& [k, v] : slices)
            for (const auto& s : v) n += s.cat == cat;
        return n;
    }
    const Json& metadata() const { return *doc.get("metadata"); }
};

Trace load_trace(const std::string& path) {
    Trace t;
    const std::string text = slurp(path);
    EXPECT_TRUE(valid_utf8(text));
    t.doc = Parser(text).document();
    EXPECT_TRUE(t.doc.is_obj());
    const Json* ev = t.doc.get("traceEvents");
    EXPECT_TRUE(ev && ev->is_arr());
    const Json* unit = t.doc.get("displayTimeUnit");
    EXPECT_TRUE(unit && unit->is_str() && unit->str() == "ns");
    EXPECT_TRUE(t.doc.get("metadata") && t.doc.get("metadata")->is_obj());
    if (!ev || !ev->is_arr()) return t;
    for (const Json& e : ev->arr()) {
        ++t.events;
        EXPECT_TRUE(e.is_obj());
        const Json *ph = e.get("ph"), *pid = e.get("pid"), *tid = e.get("tid"), *ts = e.get("ts"), *name = e.get("name");
        EXPECT_TRUE(ph && ph->is_str() && ph->str().size() == 1);
        EXPECT_TRUE(pid && pid->is_num() && pid->num() >= 0 && pid->num() == std::floor(pid->num()));
        EXPECT_TRUE(tid && tid->is_num() && tid->num() >= 0 && tid->num() == std::floor(tid->num()));
        EXPECT_TRUE(ts && ts->is_num() && ts->num() >= 0);
        EXPECT_TRUE(name && name->is_str() && !name->str().empty());
        if (!ph || !pid || !tid || !ts || !name || !ph->is_str() || !name->is_str()) continue;
        const std::pair<long, long> key{static_cast<long>(pid->num()), static_cast<long>(tid->num())};
        const std::string& p = ph->str();
        if (p == "X") {
            const Json* dur = e.get("dur");
            EXPECT_TRUE(dur && dur->is_num() && dur->num() >= 0);
            const Json* cat = e.get("cat");
            t.slices[key].push_back({ts->num(), dur ? dur->num() : 0, name->str(), cat && cat->is_str() ? cat->str() : "", e.get("args")});
        } else if (p == "M") {
            const Json* args = e.get("args");
            EXPECT_TRUE(args && args->is_obj());
            const std::string& n = name->str();
            if (n == "process_name") {
                t.process_names[key.first] = args->get("name")->str();
            } else if (n == "thread_name") {
                t.thread_names[key] = args->get("name")->str();
            } else {
                EXPECT_TRUE(n == "process_sort_index" || n == "thread_sort_index") << n;
                EXPECT_TRUE(args->get("sort_index") && args->get("sort_index")->is_num());
            }
        } else if (p == "C") {
            const Json* args = e.get("args");
            EXPECT_TRUE(args && args->get("value") && args->get("value")->is_num());
            if (args && args->get("value")) t.counters[name->str()].push_back({ts->num(), args->get("value")->num()});
        } else {
            ADD_FAILURE() << "unexpected phase " << p;
        }
    }
    // every thread with slices is named, in a named process
    for (const auto& [k, v] : t.slices) {
        EXPECT_TRUE(t.thread_names.count(k)) << "pid " << k.first << " tid " << k.second;
        EXPECT_TRUE(t.process_names.count(k.first)) << "pid " << k.first;
    }
    // tids are unique across processes
    std::map<long, long> pid_of_tid;
    for (const auto& [k, n] : t.thread_names) {
        auto [it, fresh] = pid_of_tid.emplace(k.second, k.first);
        EXPECT_TRUE(fresh || it->second == k.first) << "tid " << k.second << " in two processes";
    }
    return t;
}

// Slices of one thread must nest or be disjoint; ours are disjoint, also in whole ns the way
// Perfetto reads them (round(ts * 1000) + round(dur * 1000)).
void expect_disjoint(const Trace& t) {
    for (const auto& [k, v] : t.slices) {
        std::vector<Slice> s = v;
        std::stable_sort(s.begin(), s.end(), [](const Slice& x, const Slice& y) { return x.ts < y.ts; });
        for (std::size_t i = 1; i < s.size(); ++i) {
            const double prev_end_us = s[i - 1].ts + s[i - 1].dur;
            EXPECT_LE(prev_end_us, s[i].ts + 1e-9) << t.thread_names.at(k) << ": " << s[i - 1].name << " overlaps " << s[i].name;
            const long long prev_end_ns = std::llround(s[i - 1].ts * 1000) + std::llround(s[i - 1].dur * 1000);
            EXPECT_LE(prev_end_ns, std::llround(s[i].ts * 1000)) << t.thread_names.at(k) << " at ns resolution";
        }
    }
}

class Timeline : public ::testing::Test {
protected:
    void SetUp() override {
        run_ = sample::run();
        a_ = sample::analysis(run_);
        path_ = temp_path("timeline.json");
        write_timeline_json(path_, run_, a_);
        trace_ = load_trace(path_);
    }
    RunData run_;
    Analysis a_;
    std::string path_;
    Trace trace_;
};

TEST_F(Timeline, IsTraceEventJson) {
    EXPECT_GT(trace_.events, 20u);
    expect_disjoint(trace_);
    const Json& m = trace_.metadata();
    ASSERT_TRUE(m.get("simulated_time_ns"));
    EXPECT_EQ(m.get("simulated_time_ns")->num(), 20000);
    EXPECT_EQ(m.get("dropped_slices")->num(), 0);
    EXPECT_EQ(m.get("merged")->str(), "none: every slice is shown");
}

TEST_F(Timeline, ProcessPerChipAndOneForLinks) {
    std::set<std::string> names;
    for (const auto& [pid, n] : trace_.process_names) names.insert(n);
    EXPECT_EQ(names, (std::set<std::string>{"chip 0", "chip 1", "links"}));
}

TEST_F(Timeline, TracksPerCoreUnitDmaEngineAndLink) {
    std::set<std::string> names;
    for (const auto& [k, n] : trace_.thread_names) names.insert(n);
    for (const char* n : {"core0 stalls", "core0 instructions", "core1 stalls", "core1 instructions", "xpu.chip0.core0.mxu0",
                          "xpu.chip0.core0.mxu0 (2)", "xpu.chip0.core0.vpu", "xpu.chip0.dma0",
                          "xpu.chip1.dma0", "xpu.links.chip0_xp"})
        EXPECT_TRUE(names.count(n)) << n;
    EXPECT_FALSE(names.count("xpu.chip0.dma0 (2)")) << "its two DMAs do not overlap";
    EXPECT_FALSE(names.count("core0 instructions (2)")) << "an instruction's slice ends at the next issue: one lane";
    EXPECT_EQ(trace_.count_cat("instr"), 8u + 2u + 4u);  // core1's last instruction never issued
    EXPECT_EQ(trace_.count_cat("unit"), 4u);
    EXPECT_EQ(trace_.count_cat("dma"), 3u);
    EXPECT_EQ(trace_.count_cat("link"), 2u);  // the HBM transaction is no link's
    EXPECT_EQ(trace_.count_cat("stall"), 7u + 2u + 2u);
}

TEST_F(Timeline, SlicesNamedByAnnotationAndCause) {
    // instructions: by annotation, else the mnemonic
    std::vector<std::string> core0;
    for (const auto& [k, n] : trace_.thread_names)
        if (trace_.process_names.at(k.first) == "chip 0" && n.rfind("core0 instructions", 0) == 0)
            for (const auto& s : trace_.slices.at(k)) core0.push_back(s.name);
    std::sort(core0.begin(), core0.end());
    std::vector<std::string> want = {"layer0/gemm/load_b", "swait", "layer0/gemm/matmul", "layer0/gemm/matmul", "layer0/gemm/matmul",
                                     sample::kEvil, "bad utf8 \xEF\xBF\xBD\xEF\xBF\xBD end", "halt"};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(core0, want);
    // DMAs: by the DMA instruction's annotation, start to complete
    auto dma1 = trace_.by_thread_name("xpu.chip1.dma0");
    ASSERT_EQ(dma1.size(), 1u);
    EXPECT_EQ(dma1[0].name, "layer1/allreduce/send");
    EXPECT_DOUBLE_EQ(dma1[0].ts, 0.02);
    EXPECT_DOUBLE_EQ(dma1[0].dur, 8.98);
    EXPECT_EQ(dma1[0].args->get("bytes")->num(), 1 << 20);
    // stalls: by cause, from the core's account
    auto st = trace_.by_thread_name("core0 stalls");
    std::set<std::string> causes;
    for (const auto& s : st) causes.insert(s.name);
    EXPECT_EQ(causes.size(), 7u);
    EXPECT_TRUE(causes.count("HBM bandwidth/queueing"));
    EXPECT_FALSE(causes.count("busy"));
    EXPECT_FALSE(causes.count("idle"));
    // the link's transactions, from arrival to done
    auto link = trace_.by_thread_name("xpu.links.chip0_xp");
    ASSERT_EQ(link.size(), 2u);
    EXPECT_EQ(link[0].name, "layer1/allreduce/send");
    EXPECT_EQ(link[0].args->get("initiator")->str(), "xpu.chip1.dma0");
}

TEST_F(Timeline, InstructionsFromIssueToCompleteOrNextIssue) {
    std::vector<Slice> core0;
    for (const auto& [k, n] : trace_.thread_names)
        if (trace_.process_names.at(k.first) == "chip 0" && n == "core0 instructions") core0 = trace_.slices.at(k);
    ASSERT_EQ(core0.size(), 8u);
    // the DMA: issued at 1 ns, completes at 5 us, but the swait issues at 2 ns
    EXPECT_EQ(core0[0].name, "layer0/gemm/load_b");
    EXPECT_DOUBLE_EQ(core0[0].ts, 0.001);
    EXPECT_DOUBLE_EQ(core0[0].dur, 0.001);
    EXPECT_DOUBLE_EQ(core0[0].args->get("complete_us")->num(), 5.0);
    // the swait: from its issue to its completion, before the next issue
    EXPECT_EQ(core0[1].name, "swait");
    EXPECT_DOUBLE_EQ(core0[1].ts, 0.002);
    EXPECT_DOUBLE_EQ(core0[1].dur, 4.999);
}

TEST_F(Timeline, TouchingSlicesStayOnOneLaneAtNsResolution) {
    // chip1 core0: [1.5 ns, 2.5 ns) then [2.5 ns, ...): Perfetto would end the first at
    // round(1.5) + round(1.0) = 3 ns > round(2.5); the second begins at the first ps that
    // rounds to 3 ns instead, its exact times in its args
    std::vector<Slice> core;
    for (const auto& [k, n] : trace_.thread_names)
        if (trace_.process_names.at(k.first) == "chip 1" && n.rfind("core0 instructions", 0) == 0) {
            EXPECT_EQ(n, "core0 instructions");
            core = trace_.slices.at(k);
        }
    ASSERT_EQ(core.size(), 4u);
    EXPECT_DOUBLE_EQ(core[1].ts, 0.002501);
    ASSERT_TRUE(core[1].args->get("exact_ts"));
    EXPECT_DOUBLE_EQ(core[1].args->get("exact_ts")->num(), 0.0025);
    EXPECT_DOUBLE_EQ(core[1].args->get("exact_dur")->num(), 8.998);
    EXPECT_DOUBLE_EQ(core[1].ts + core[1].dur, 0.0025 + 8.998);
    EXPECT_FALSE(core[0].args->get("exact_ts"));
    EXPECT_GE(trace_.metadata().get("nudged_slices")->num(), 1);
}

TEST_F(Timeline, TimesAreMicrosecondsWithPsResolution) {
    const std::string text = slurp(path_);
    // chip1 core0's first instruction: issue 1500 ps, complete 2500 ps
    EXPECT_NE(text.find("\"ts\":0.001500,\"dur\":0.001000,\"cat\":\"instr\",\"name\":\"layer1/allreduce/send\""), std::string::npos);
    // the second matmul's unit op: 6.9 us to 7.9 us
    EXPECT_NE(text.find("\"ts\":6.900000,\"dur\":1.000000,\"cat\":\"unit\""), std::string::npos);
}

TEST_F(Timeline, SeriesAsCounters) {
    EXPECT_EQ(trace_.counters.size(), a_.series.size());
    const auto& hbm = trace_.counters.at("xpu.chip0.hbm bandwidth (GB/s)");
    EXPECT_EQ(hbm.size(), 50u);
    EXPECT_DOUBLE_EQ(hbm[1].first, 0.4);
}

TEST_F(Timeline, IsDeterministic) {
    const std::string again = temp_path("again.json");
    write_timeline_json(again, run_, a_);
    EXPECT_EQ(slurp(again), slurp(path_));
}

TEST(TimelineCap, UnderTheCapEverySliceIsShown) {
    const RunData run = sample::long_run(1000, 10);
    const Analysis a = sample::long_analysis(run);
    const std::string p = temp_path("t.json");
    TimelineOptions opt;
    opt.max_slices_per_track = 1000;
    write_timeline_json(p, run, a, opt);
    const Trace t = load_trace(p);
    expect_disjoint(t);
    EXPECT_EQ(t.by_thread_name("core0 instructions").size(), 1000u);
    EXPECT_EQ(t.by_thread_name("xpu.chip0.core0.vpu").size(), 1000u);
    EXPECT_EQ(t.by_thread_name("core0 stalls").size(), 99u);
    EXPECT_EQ(t.thread_names.size(), 3u) << "back-to-back slices share one lane";
}

TEST(TimelineCap, PastTheCapRunsOfOneAnnotationMerge) {
    const RunData run = sample::long_run(1000, 10);  // 100 runs of 10
    const Analysis a = sample::long_analysis(run);
    const std::string p = temp_path("t.json");
    TimelineOptions opt;
    opt.max_slices_per_track = 500;
    write_timeline_json(p, run, a, opt);
    const Trace t = load_trace(p);
    expect_disjoint(t);
    const auto core = t.by_thread_name("core0 instructions");
    ASSERT_EQ(core.size(), 100u);
    EXPECT_EQ(core[0].name, "layer0/a");
    EXPECT_EQ(core[1].name, "layer0/b");
    EXPECT_DOUBLE_EQ(core[1].ts, 0.011);
    EXPECT_DOUBLE_EQ(core[1].dur, 0.010);
    EXPECT_EQ(core[1].args->get("merged_items")->num(), 10);
    EXPECT_EQ(t.by_thread_name("xpu.chip0.core0.vpu").size(), 100u);
    const std::string merged = t.metadata().get("merged")->str();
    EXPECT_NE(merged.find("core0 instructions: 1000 slices, more than the cap of 500, merged into 100"), std::string::npos) << merged;
    EXPECT_EQ(t.metadata().get("slice_cap_per_track")->num(), 500);
}

TEST(TimelineCap, PastTheCapInRunsGroupsOfRunsMerge) {
    const RunData run = sample::long_run(1000, 10);
    const Analysis a = sample::long_analysis(run);
    const std::string p = temp_path("t.json");
    TimelineOptions opt;
    opt.max_slices_per_track = 30;  // 100 runs -> groups of 4 runs -> 25 slices
    write_timeline_json(p, run, a, opt);
    const Trace t = load_trace(p);
    expect_disjoint(t);
    const auto core = t.by_thread_name("core0 instructions");
    EXPECT_EQ(core.size(), 25u);
    double covered = 0;
    for (const auto& s : core) covered += s.args->get("merged_items")->num();
    EXPECT_EQ(covered, 1000);
    // stalls past the cap: the longest are kept (all 1 ns here: the first 30)
    EXPECT_EQ(t.by_thread_name("core0 stalls").size(), 30u);
    EXPECT_NE(t.metadata().get("merged")->str().find("core0 stalls: the 30 longest of 99 stalls are shown"), std::string::npos);
}

// --timeline summary: a budget of slices shared by the tracks (here 3: core0 stalls, core0
// instructions, the vector unit), so that the file stays the same size however long the trace;
// still valid trace-event JSON with disjoint slices, every instruction counted in a merged slice,
// and the file saying what it dropped. A full timeline of the same runs grows with them.
TEST(TimelineSummary, ABudgetSharedByTheTracksWhateverTheTraceLength) {
    std::map<std::size_t, std::size_t> summary_bytes, full_bytes;
    for (std::size_t n : {10000u, 100000u}) {
        const RunData run = sample::long_run(n, 10);
        const Analysis a = sample::long_analysis(run);
        TimelineOptions opt;
        opt.summary = true;
        opt.summary_slices = 300;
        opt.summary_min_per_track = 10;
        const std::string p = temp_path("summary-" + std::to_string(n) + ".json");
        write_timeline_json(p, run, a, opt);
        const Trace t = load_trace(p);
        expect_disjoint(t);
        std::size_t slices = 0;
        for (const auto& [k, v] : t.slices) slices += v.size();
        EXPECT_LE(slices, 300u) << n << " instructions";
        EXPECT_GE(slices, 250u) << "the budget is used";
        double items = 0;
        for (const auto& x : t.by_thread_name("core0 instructions")) items += x.args->get("merged_items")->num();
        EXPECT_EQ(items, static_cast<double>(n)) << "every instruction is in one merged slice";
        EXPECT_EQ(t.by_thread_name("core0 stalls").size(), 100u) << "the 100 longest stalls";
        EXPECT_EQ(t.metadata().get("timeline")->str(), "summary");
        EXPECT_EQ(t.metadata().get("slice_cap_per_track")->num(), 100);
        EXPECT_NE(t.metadata().get("summary")->str().find("at most 300 slices shared by the tracks, 100 per track"), std::string::npos)
            << t.metadata().get("summary")->str();
        summary_bytes[n] = slurp(p).size();
        TimelineOptions full;
        full.max_slices_per_track = 1000000;
        const std::string f = temp_path("full-" + std::to_string(n) + ".json");
        write_timeline_json(f, run, a, full);
        full_bytes[n] = slurp(f).size();
        EXPECT_FALSE(load_trace(f).metadata().get("timeline")) << "a full timeline is written as it always was";
    }
    std::printf("summary %zu -> %zu bytes, full %zu -> %zu bytes for 10x the instructions\n", summary_bytes[10000], summary_bytes[100000],
                full_bytes[10000], full_bytes[100000]);
    EXPECT_LE(summary_bytes[100000], summary_bytes[10000] * 11 / 10);
    EXPECT_GE(full_bytes[100000], full_bytes[10000] * 9);
}

// Below its share, a track of a summary shows every slice, as a full timeline does.
TEST(TimelineSummary, UnderTheShareEverySliceIsShown) {
    const RunData run = sample::long_run(1000, 10);
    const Analysis a = sample::long_analysis(run);
    TimelineOptions opt;
    opt.summary = true;
    opt.summary_slices = 3000;
    const std::string p = temp_path("t.json");
    write_timeline_json(p, run, a, opt);
    const Trace t = load_trace(p);
    EXPECT_EQ(t.by_thread_name("core0 instructions").size(), 1000u);
    EXPECT_EQ(t.metadata().get("merged")->str(), "none: every slice is shown");
}

TEST(TimelineSummary, ModesAndTheDefaultSwitch) {
    TimelineMode m = TimelineMode::Auto;
    EXPECT_TRUE(parse_timeline_mode("full", m));
    EXPECT_EQ(m, TimelineMode::Full);
    EXPECT_TRUE(parse_timeline_mode("summary", m));
    EXPECT_EQ(m, TimelineMode::Summary);
    EXPECT_TRUE(parse_timeline_mode("off", m));
    EXPECT_EQ(m, TimelineMode::Off);
    for (const char* bad : {"", "Full", "auto", "summary ", "of", "none"}) EXPECT_FALSE(parse_timeline_mode(bad, m)) << bad;
    // Events, counted by construction: 1000 instructions, their 1000 vector operations, and the
    // 99 one-ns gaps between runs of 10 (the core's stalls).
    const RunData run = sample::long_run(1000, 10);
    const Analysis a = sample::long_analysis(run);
    EXPECT_EQ(timeline_events(run, a), 2099u);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Auto, run, a, 2099), TimelineMode::Full);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Auto, run, a, 2098), TimelineMode::Summary);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Full, run, a, 0), TimelineMode::Full);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Summary, run, a), TimelineMode::Summary);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Off, run, a), TimelineMode::Off);
    EXPECT_EQ(resolve_timeline_mode(TimelineMode::Auto, run, a), TimelineMode::Full) << "2099 events: under the default threshold";
}

TEST(TimelineEdge, EmptyAnalysisIsValid) {
    RunData run;
    Analysis a;
    const std::string p = temp_path("empty.json");
    write_timeline_json(p, run, a);
    const Trace t = load_trace(p);
    EXPECT_EQ(t.events, 0u);
}

TEST(RenderUtil, Formatting) {
    using namespace render;
    EXPECT_EQ(duration(812), "812 ps");
    EXPECT_EQ(duration(12'345), "12.35 ns");
    EXPECT_EQ(duration(19'136'000), "19.14 us");
    EXPECT_EQ(duration(2'500'000'000ull), "2.500 ms");
    EXPECT_EQ(bytes(512), "512 B");
    EXPECT_EQ(bytes(8u << 20), "8.00 MiB");
    EXPECT_EQ(percent(1, 3), "33.3%");
    EXPECT_EQ(percent(1, 0), "0.0%");
    std::string s;
    micros_to(s, 1'234'567'891ull);
    EXPECT_EQ(s, "1234.567891");
    s.clear();
    json_escape_to(s, std::string("a\"b\\c\n\x01\xff\xE2\x82\xAC", 11));
    EXPECT_EQ(s, "\"a\\\"b\\\\c\\n\\u0001\\ufffd\xE2\x82\xAC\"");
    EXPECT_EQ(JsonWriter::escape(std::string("a\"b\\c\n\x01\xff\xE2\x82\xAC", 11)), s);  // stats.json, analysis.json: the same
    EXPECT_EQ(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
    EXPECT_EQ(html_escape(std::string("\xC0\xAF ok", 5)), "\xEF\xBF\xBD\xEF\xBF\xBD ok");  // overlong
    s.clear();
    json_number_to(s, std::nan(""));
    EXPECT_EQ(s, "0");
}

}  // namespace
}  // namespace xpu::analysis
