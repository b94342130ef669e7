// Strict, typed reading of one YAML mapping of parameters: the ParamVisitor that a params
// struct's declare() (models/params.h) walks to read the platform description. A value present
// in the mapping is checked for type and range and stored, an absent one keeps the struct's
// default, and either way the effective value is recorded (what --dump-config prints).
// finish() rejects any key that was not declared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/params.h"
#include "platform/yaml_source.h"

namespace xpu::platform {

class ParamReader : public ParamVisitor {
public:
    // `node` may be undefined or null (an absent mapping: every parameter keeps its default).
    ParamReader(const YamlSource* src, YAML::Node node, std::string path);

    void u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* unit, const char* doc) override;
    void u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* unit, const char* doc) override;
    void u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* unit,
             const char* doc) override;
    // A byte count: an integer, or a string with a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.
    void bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc) override;
    void real(const char* key, double& v, double lo, double hi, const char* unit, const char* doc) override;
    void ticks_ns(const char* key, Tick& v, double lo_ns, double hi_ns, const char* doc, Dump dump) override;
    void boolean(const char* key, bool& v, const char* doc) override;
    void text(const char* key, std::string& v, const char* doc) override;
    void choice(const char* key, std::string& v, const std::vector<std::string>& options, const char* doc) override;
    // Its owner reads it: only marked as known.
    void section(const char* key, const char* kind, const char* doc) override;
    // A key handled elsewhere (a module's `type`) that must not count as unknown.
    void skip(const char* key);
    void finish();

    const std::string& path() const { return path_; }
    YAML::Node effective() const { return effective_; }
    // The node of a key (undefined when absent), for error locations.
    YAML::Node node(const char* key) const;
    [[noreturn]] void fail(const char* key, const std::string& what) const;

private:
    YAML::Node take(const char* key);

    const YamlSource* src_;
    YAML::Node node_;
    std::string path_;
    std::vector<std::string> seen_;
    YAML::Node effective_;
};

// Parsers shared with the rest of the platform loader.
bool parse_u64(const std::string& s, std::uint64_t& out);  // decimal or 0x hex, '_' allowed
bool parse_bytes(const std::string& s, std::uint64_t& out, std::string& why);
bool parse_real(const std::string& s, double& out);
// The inverse of parse_bytes as the effective configuration writes sizes: 33554432 -> "32MiB".
std::string param_size_text(std::uint64_t bytes);
// A number as the reference and messages write it (ostream's default: 1e+06, 37.5).
std::string param_number_text(double v);

}  // namespace xpu::platform
