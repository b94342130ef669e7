// Strict, typed reading of one YAML mapping of parameters. Each call declares one parameter
// (key, destination, range, unit and meaning): a value present in the mapping is checked for
// type and range and stored, an absent one keeps the config struct's default, and either way
// the effective value is recorded, which is what --dump-config prints and --list-types shows.
// finish() rejects any key that was not declared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "platform/yaml_source.h"

namespace xpu::platform {

struct ParamDoc {
    std::string key, type, range, def, doc;
};

class ParamReader {
public:
    // `node` may be undefined (documentation mode: only defaults are recorded).
    ParamReader(const YamlSource* src, YAML::Node node, std::string path);

    void u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* doc);
    void u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* doc);
    void u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc);
    // A byte count: an integer, or a string with a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.
    void bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc);
    void real(const char* key, double& v, double lo, double hi, const char* doc);
    void boolean(const char* key, bool& v, const char* doc);
    void text(const char* key, std::string& v, const char* doc);
    // Keys that are handled elsewhere (e.g. `type`) and must not count as unknown.
    void skip(const char* key);
    void finish();

    const std::string& path() const { return path_; }
    YAML::Node effective() const { return effective_; }
    const std::vector<ParamDoc>& docs() const { return docs_; }
    // The node of a key (undefined when absent), for error locations.
    YAML::Node node(const char* key) const;
    [[noreturn]] void fail(const char* key, const std::string& what) const;

private:
    YAML::Node take(const char* key);
    void record(const char* key, const std::string& type, const std::string& range,
                const std::string& def, const char* doc);

    const YamlSource* src_;
    YAML::Node node_;
    std::string path_;
    std::vector<std::string> seen_;
    YAML::Node effective_;
    std::vector<ParamDoc> docs_;
};

// Parsers shared with the rest of the platform loader.
bool parse_u64(const std::string& s, std::uint64_t& out);  // decimal or 0x hex, '_' allowed
bool parse_bytes(const std::string& s, std::uint64_t& out, std::string& why);
bool parse_real(const std::string& s, double& out);

}  // namespace xpu::platform
