#include "analysis/names.h"

#include <algorithm>
#include <map>
#include <set>

namespace xpu::analysis {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The components of a path, split at '/'.
std::vector<std::string_view> components(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t b = 0;
    for (;;) {
        const std::size_t e = s.find('/', b);
        out.push_back(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
        if (e == std::string_view::npos) break;
        b = e + 1;
    }
    return out;
}

constexpr std::string_view kLayer = "layer";

// "layer<digits>": true, and the digits in `digits`.
bool layer_component(std::string_view c, std::string_view& digits) {
    if (c.size() <= kLayer.size() || c.substr(0, kLayer.size()) != kLayer) return false;
    digits = c.substr(kLayer.size());
    return std::all_of(digits.begin(), digits.end(), is_digit);
}

struct NaturalLess {
    bool operator()(const std::string& a, const std::string& b) const { return natural_less(a, b); }
};

}  // namespace

std::string step_of(const std::string& ann) {
    const auto p = ann.rfind('/');
    return p == std::string::npos ? ann : ann.substr(p + 1);
}

std::string op_of(const std::string& ann) {
    const auto p = ann.rfind('/');
    return p == std::string::npos ? ann : ann.substr(0, p);
}

bool natural_less(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (is_digit(a[i]) && is_digit(b[j])) {
            std::size_t ie = i, je = j;
            while (ie < a.size() && is_digit(a[ie])) ++ie;
            while (je < b.size() && is_digit(b[je])) ++je;
            std::size_t iz = i, jz = j;  // skip leading zeros: compare by value
            while (iz + 1 < ie && a[iz] == '0') ++iz;
            while (jz + 1 < je && b[jz] == '0') ++jz;
            const std::string_view x = a.substr(iz, ie - iz), y = b.substr(jz, je - jz);
            if (x.size() != y.size()) return x.size() < y.size();
            if (x != y) return x < y;
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
        ++i;
        ++j;
    }
    if ((i < a.size()) != (j < b.size())) return j < b.size();  // a prefix first
    return a < b;  // equal by value ("layer01" vs "layer1"): any total order
}

std::string layer_pattern(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    bool first = true;
    for (std::string_view c : components(name)) {
        if (!first) out += '/';
        first = false;
        std::string_view digits;
        if (layer_component(c, digits)) out += "layer*";
        else out.append(c.data(), c.size());
    }
    return out;
}

long layer_number(std::string_view name) {
    for (std::string_view c : components(name)) {
        std::string_view digits;
        if (!layer_component(c, digits)) continue;
        long v = 0;
        for (char d : digits) {
            v = v * 10 + (d - '0');
            if (v > 1'000'000'000L) return v;  // absurd, but no overflow
        }
        return v;
    }
    return -1;
}

std::string NameGroup::text() const {
    if (members.size() == 1) return members.front();
    return pattern + " x" + std::to_string(members.size());
}

std::vector<NameGroup> roll_up(std::vector<std::string> names) {
    std::map<std::string, std::set<std::string, NaturalLess>, NaturalLess> by;
    for (std::string& n : names) {
        std::string p = layer_pattern(n);
        by[std::move(p)].insert(std::move(n));
    }
    std::vector<NameGroup> out;
    out.reserve(by.size());
    for (auto& [p, m] : by) out.push_back({p, std::vector<std::string>(m.begin(), m.end())});
    return out;
}

std::string rolled_list(const std::vector<std::string>& names, std::size_t max_chars) {
    const std::vector<NameGroup> groups = roll_up(names);
    std::string out;
    std::size_t shown = 0;
    for (const NameGroup& g : groups) {
        std::string t = g.text();
        if (t.empty()) t = "(no annotation)";
        const std::size_t rest = groups.size() - shown - 1;
        const std::size_t more = rest ? 12 : 0;  // room for ", +N more"
        if (shown > 0 && out.size() + 2 + t.size() + more > max_chars) break;
        out += (shown ? ", " : "") + t;
        ++shown;
    }
    if (shown < groups.size()) out += ", +" + std::to_string(groups.size() - shown) + " more";
    return out;
}

std::vector<std::string> sorted_names(std::vector<std::string> names) {
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

std::size_t layer_count(const std::vector<std::string>& names) {
    std::set<long> layers;
    for (const std::string& n : names) {
        const long l = layer_number(n);
        if (l >= 0) layers.insert(l);
    }
    return layers.size();
}

std::string where_text(const std::vector<std::string>& ops) {
    std::map<std::string, std::vector<std::string>, NaturalLess> steps;
    for (const std::string& a : ops) steps[step_of(a)].push_back(a);
    std::string where;
    std::size_t rolled = 0;
    bool several = false;
    for (const auto& [step, in] : steps) {
        const std::vector<NameGroup> g = roll_up(in);
        rolled += g.size();
        std::string t;
        if (g.size() == 1) {
            t = g.front().text();
            if (t.empty()) t = "(no annotation)";
        } else {
            t = "*/" + step;
            several = true;
        }
        where += (where.empty() ? "" : ", ") + t;
    }
    if (several) {
        const std::size_t layers = layer_count(ops);
        where += " (" + std::to_string(rolled) + " ops" + (layers > 1 ? " in " + std::to_string(layers) + " layers" : "") + ")";
    }
    return where;
}

}  // namespace xpu::analysis
