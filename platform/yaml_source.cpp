#include "platform/yaml_source.h"

#include <fstream>
#include <sstream>

namespace xpu::platform {

YamlSource YamlSource::load(const std::string& file) {
    std::ifstream f(file);
    if (!f) throw ConfigError(file + ": cannot open the platform description");
    YamlSource s;
    s.file_ = file;
    try {
        s.root_ = YAML::Load(f);
    } catch (const YAML::ParserException& e) {
        std::ostringstream os;
        os << file << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": YAML syntax error: " << e.msg;
        throw ConfigError(os.str());
    }
    if (!s.root_.IsMap())
        throw ConfigError(file + ":1:1: expected a YAML mapping at the top level (a platform description)");
    return s;
}

bool YamlSource::from_set(const YAML::Node& n) const {
    for (const auto& sn : set_nodes_)
        if (sn.first.is(n)) return true;
    return false;
}

std::string YamlSource::where(const YAML::Node& n) const {
    for (const auto& [node, arg] : set_nodes_)
        if (node.is(n)) return "--set '" + arg + "'";
    std::ostringstream os;
    os << file_;
    if (n.IsDefined() && n.Mark().line >= 0) os << ":" << n.Mark().line + 1 << ":" << n.Mark().column + 1;
    return os.str();
}

void YamlSource::fail(const YAML::Node& n, const std::string& path, const std::string& what) const {
    throw ConfigError(where(n) + ": " + path + ": " + what);
}

void YamlSource::apply_set(const std::string& assignment) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError("--set '" + assignment + "': expected KEY.PATH=VALUE");
    std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
    YAML::Node v;
    try {
        v = YAML::Load(value);
    } catch (const YAML::Exception& e) {
        throw ConfigError("--set '" + assignment + "': the value is not valid YAML: " + e.msg);
    }
    if (!v.IsDefined() || v.IsNull()) v = YAML::Node(value);
    // Walk the path with node references (yaml-cpp nodes are handles).
    YAML::Node cur = root_;
    std::string done;
    std::size_t pos = 0;
    while (true) {
        std::size_t dot = path.find('.', pos);
        std::string key = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
        if (key.empty()) throw ConfigError("--set '" + assignment + "': empty key in the path");
        int index = -1;
        auto br = key.find('[');
        if (br != std::string::npos && key.back() == ']') {
            try {
                index = std::stoi(key.substr(br + 1, key.size() - br - 2));
            } catch (...) {
                throw ConfigError("--set '" + assignment + "': bad list index in '" + key + "'");
            }
            key = key.substr(0, br);
        }
        bool last = dot == std::string::npos;
        std::string here = done.empty() ? key : done + "." + key;
        if (!cur.IsMap()) throw ConfigError("--set '" + assignment + "': '" + done + "' is not a mapping");
        if (index < 0 && last) {
            cur[key] = v;
            set_nodes_.emplace_back(cur[key], assignment);
            return;
        }
        YAML::Node next = cur[key];
        if (!next.IsDefined()) throw ConfigError("--set '" + assignment + "': no key '" + here + "' in " + file_);
        if (index >= 0) {
            if (!next.IsSequence() || index >= static_cast<int>(next.size()))
                throw ConfigError("--set '" + assignment + "': '" + here + "' has no element [" + std::to_string(index) + "]");
            if (last) {
                next[index] = v;
                set_nodes_.emplace_back(next[index], assignment);
                return;
            }
            next = next[index];
        }
        cur.reset(next);
        done = here;
        pos = dot + 1;
    }
}

}  // namespace xpu::platform
