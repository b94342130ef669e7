// A small JSON reader: the whole document into a tree of values. For the project's own files
// (stats.json, analysis.json) read back by tools that need no SystemC (xpu_sweep's results,
// xpu_analyze --compare); not a streaming parser, so not for the transaction log or timeline.json.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace xpu {

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct JsonValue {
    enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<JsonValue> items;                          // Array
    std::vector<std::pair<std::string, JsonValue>> members;  // Object, in file order

    bool is_object() const { return type == Type::Object; }
    bool is_array() const { return type == Type::Array; }
    bool is_number() const { return type == Type::Number; }
    bool is_string() const { return type == Type::String; }
    // The member `key` of an object, or nullptr (also when this is not an object).
    const JsonValue* get(const std::string& key) const;
    // Dotted path of object members ("hbm.achieved_gbps"), or nullptr.
    const JsonValue* at_path(const std::string& dotted) const;
    double number_or(double fallback) const { return type == Type::Number ? num : fallback; }
};

// Parses `text`; throws JsonError "WHAT: line L, column C: expected ..." naming `what`.
JsonValue parse_json(const std::string& text, const std::string& what = "JSON");
// Reads and parses a file; throws JsonError naming it (also when it cannot be read).
JsonValue read_json_file(const std::string& path);

}  // namespace xpu
