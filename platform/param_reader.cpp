#include "platform/param_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "models/sim_time.h"

namespace xpu::platform {

bool parse_u64(const std::string& raw, std::uint64_t& out) {
    std::string s;
    for (char c : raw)
        if (c != '_') s += c;
    if (s.empty()) return false;
    int base = 10;
    std::size_t i = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    }
    std::uint64_t v = 0;
    for (; i < s.size(); ++i) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9') d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return false;
        if (v > (UINT64_MAX - d) / base) return false;  // overflow
        v = v * base + d;
    }
    out = v;
    return true;
}

bool parse_real(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end && *end == '\0' && std::isfinite(out);
}

bool parse_bytes(const std::string& s, std::uint64_t& out, std::string& why) {
    if (parse_u64(s, out)) return true;
    std::size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '_')) ++i;
    std::string num = s.substr(0, i), unit = s.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
    static const std::pair<const char*, double> units[] = {
        {"B", 1.0},           {"KiB", 1024.0},     {"MiB", 1048576.0},  {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}, {"KB", 1e3},     {"MB", 1e6},         {"GB", 1e9},  {"TB", 1e12}};
    double mult = 0;
    for (auto& [u, m] : units)
        if (unit == u) mult = m;
    double n;
    if (num.empty() || !parse_real(num, n)) {
        why = "expected a byte count such as 4096, \"64KiB\" or \"32MiB\"";
        return false;
    }
    if (mult == 0 && unit.empty()) {  // all digits, yet not a 64-bit count
        why = "a byte count beyond 2^64 - 1";
        return false;
    }
    if (mult == 0) {
        why = "unknown size unit '" + unit + "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)";
        return false;
    }
    double b = n * mult;
    if (b > 1.8e19) {
        why = "a byte count beyond 2^64 - 1";
        return false;
    }
    if (b != std::floor(b)) {
        why = "expected a whole number of bytes";
        return false;
    }
    out = static_cast<std::uint64_t>(b);
    return true;
}

// The shortest text that reads back as exactly v (0.8, not yaml-cpp's 0.80000000000000004): the
// effective configuration must round-trip, and should read as it was written.
static std::string shortest_number_text(double v) {
    char buf[40];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

std::string param_number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

std::string param_size_text(std::uint64_t b) {
    static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (i < 4 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        ++i;
    }
    return std::to_string(b) + u[i];
}

ParamReader::ParamReader(const YamlSource* src, YAML::Node node, std::string path)
    : src_(src), node_(node), path_(std::move(path)), effective_(YAML::NodeType::Map) {
    if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
        if (src_) src_->fail(node_, path_, "expected a mapping of parameters");
        throw ConfigError(path_ + ": expected a mapping of parameters");
    }
}

YAML::Node ParamReader::node(const char* key) const {
    if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    for (auto it = node_.begin(); it != node_.end(); ++it)
        if (it->first.Scalar() == key) return it->second;
    return YAML::Node(YAML::NodeType::Undefined);
}

void ParamReader::fail(const char* key, const std::string& what) const {
    std::string p = path_.empty() ? key : path_ + "." + key;
    YAML::Node n = node(key);
    if (src_) src_->fail(n.IsDefined() ? n : node_, p, what);
    throw ConfigError(p + ": " + what);
}

YAML::Node ParamReader::take(const char* key) {
    seen_.emplace_back(key);
    YAML::Node n = node(key);
    if (n.IsDefined() && !n.IsScalar()) fail(key, "expected a single value, not a list or mapping");
    return n;
}

void ParamReader::u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char*,
                      const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) {
        std::uint64_t x;
        if (!parse_u64(n.Scalar(), x)) fail(key, "expected a non-negative integer, got '" + n.Scalar() + "'");
        if (x < lo || x > hi)
            fail(key, "expected a value in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(x));
        v = x;
    }
    effective_[key] = v;
}

void ParamReader::u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* unit, const char* doc) {
    std::uint64_t x = v;
    u64(key, x, lo, hi, unit, doc);
    v = static_cast<unsigned>(x);
}

void ParamReader::u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* unit, const char* doc) {
    std::uint64_t x = v;
    u64(key, x, lo, hi, unit, doc);
    v = static_cast<std::uint16_t>(x);
}

void ParamReader::bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) {
        std::uint64_t x;
        std::string why;
        if (!parse_bytes(n.Scalar(), x, why)) fail(key, why + ", got '" + n.Scalar() + "'");
        if (x < lo || x > hi)
            fail(key, "expected a size in " + param_size_text(lo) + ".." + param_size_text(hi) + ", got " + n.Scalar());
        v = x;
    }
    effective_[key] = param_size_text(v);
}

void ParamReader::real(const char* key, double& v, double lo, double hi, const char*, const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) {
        double x;
        if (!parse_real(n.Scalar(), x)) fail(key, "expected a number, got '" + n.Scalar() + "'");
        if (x < lo || x > hi)
            fail(key, "expected a value in " + param_number_text(lo) + ".." + param_number_text(hi) + ", got " + n.Scalar());
        v = x;
    }
    effective_[key] = shortest_number_text(v);
}

void ParamReader::ticks_ns(const char* key, Tick& v, double lo_ns, double hi_ns, const char* doc, Dump dump) {
    if (dump == Dump::WhenSet && !node(key).IsDefined()) {
        seen_.emplace_back(key);
        return;
    }
    double ns = ticks_to_ns(v);
    real(key, ns, lo_ns, hi_ns, "ns", doc);
    v = ns_to_ticks(ns);
}

void ParamReader::boolean(const char* key, bool& v, const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) {
        const std::string& s = n.Scalar();
        if (s == "true") v = true;
        else if (s == "false") v = false;
        else fail(key, "expected true or false, got '" + s + "'");
    }
    effective_[key] = v;
}

void ParamReader::text(const char* key, std::string& v, const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) v = n.Scalar();
    effective_[key] = v;
}

void ParamReader::choice(const char* key, std::string& v, const std::vector<std::string>& options, const char*) {
    YAML::Node n = take(key);
    if (n.IsDefined()) {
        if (!n.IsScalar() || std::find(options.begin(), options.end(), n.Scalar()) == options.end()) {
            std::string list;
            for (const auto& o : options) list += (list.empty() ? "" : ", ") + o;
            fail(key, "expected one of " + list + (n.IsScalar() ? ", got '" + n.Scalar() + "'" : ""));
        }
        v = n.Scalar();
    }
    effective_[key] = v;
}

void ParamReader::section(const char* key, const char*, const char*) { seen_.emplace_back(key); }

void ParamReader::skip(const char* key) { seen_.emplace_back(key); }

void ParamReader::finish() {
    if (!node_.IsDefined() || !node_.IsMap()) return;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
        const std::string& k = it->first.Scalar();
        if (std::find(seen_.begin(), seen_.end(), k) != seen_.end()) continue;
        std::string known;
        for (const auto& s : seen_) known += (known.empty() ? "" : ", ") + s;
        std::string p = path_.empty() ? k : path_ + "." + k;
        // The key's own position, unless a --set put it there (then name the argument).
        if (src_) src_->fail(src_->from_set(it->second) ? it->second : it->first, p, "unknown key (known here: " + known + ")");
        throw ConfigError(p + ": unknown key (known here: " + known + ")");
    }
}

}  // namespace xpu::platform
