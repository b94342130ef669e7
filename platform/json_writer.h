// A minimal streaming JSON writer: objects, arrays, strings, numbers. Output is deterministic
// (fixed number formatting, members in the order written), which stats.json relies on.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace xpu {

class JsonWriter {
public:
    explicit JsonWriter(std::ostream& os) : os_(os) {}
    JsonWriter& begin_object(const char* key = nullptr);
    JsonWriter& end_object();
    JsonWriter& begin_array(const char* key = nullptr);
    JsonWriter& end_array();
    JsonWriter& field(const char* key, const std::string& v);
    JsonWriter& field(const char* key, const char* v) { return field(key, std::string(v)); }
    JsonWriter& field(const char* key, double v);
    JsonWriter& field(const char* key, std::uint64_t v);
    JsonWriter& field(const char* key, bool v);
    JsonWriter& value(const std::string& v) { return field(nullptr, v); }
    static std::string escape(const std::string& s);
    static std::string number(double v);

private:
    void prefix(const char* key);
    std::ostream& os_;
    std::vector<bool> first_;  // per open container: no member written yet
};

}  // namespace xpu
