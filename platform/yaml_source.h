// The YAML document of a platform description together with where each value came from, so
// that every error can name file:line:column, or the --set argument that put the value there.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "platform/config_error.h"

namespace xpu::platform {

class YamlSource {
public:
    // Parses the file; throws ConfigError naming file:line:col on a syntax error.
    static YamlSource load(const std::string& file);
    // Applies `key.path=value` (value parsed as YAML). Maps along the path must exist (a missing
    // final key is created, so that optional parameters can be set); lists are indexed [N].
    void apply_set(const std::string& assignment);

    const std::string& file() const { return file_; }
    YAML::Node& root() { return root_; }
    // "file:line:col" for a node of the document, or "--set 'a.b=c'" for one that came from
    // the command line.
    std::string where(const YAML::Node& n) const;
    // True when the node's value came from a --set argument.
    bool from_set(const YAML::Node& n) const;
    [[noreturn]] void fail(const YAML::Node& n, const std::string& path, const std::string& what) const;

private:
    std::string file_;
    YAML::Node root_;
    std::vector<std::pair<YAML::Node, std::string>> set_nodes_;
};

}  // namespace xpu::platform
