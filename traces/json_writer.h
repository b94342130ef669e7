// A minimal streaming JSON writer: objects, arrays, strings, numbers. Output is deterministic
// (fixed number formatting, members in the order written), which stats.json relies on.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace xpu {

// Length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 if the bytes there are not one
// (overlong forms, surrogates and code points past U+10FFFF are not).
std::size_t utf8_length(std::string_view s, std::size_t i);

// Appends the JSON string literal of `s` (quotes included): ", \ and control characters are
// escaped, invalid UTF-8 becomes \ufffd, so that the result is always valid JSON. What every
// JSON file the project writes uses (JsonWriter, timeline.json).
void json_escape_to(std::string& out, std::string_view s);

class JsonWriter {
public:
    // The stream has the text once the top-level value is complete (or the writer destroyed).
    explicit JsonWriter(std::ostream& os) : os_(os) {}
    ~JsonWriter();
    JsonWriter(const JsonWriter&) = delete;
    JsonWriter& operator=(const JsonWriter&) = delete;
    JsonWriter& begin_object(const char* key = nullptr);
    JsonWriter& end_object();
    JsonWriter& begin_array(const char* key = nullptr);
    JsonWriter& end_array();
    JsonWriter& field(const char* key, const std::string& v);
    JsonWriter& field(const char* key, const char* v) { return field(key, std::string(v)); }
    JsonWriter& field(const char* key, double v);
    JsonWriter& field(const char* key, std::uint64_t v);
    JsonWriter& field(const char* key, bool v);
    JsonWriter& null_field(const char* key);  // "key": null (a figure that was not measured)
    JsonWriter& value(const std::string& v) { return field(nullptr, v); }
    static std::string escape(const std::string& s);  // json_escape_to, as a string
    static std::string number(double v);
    static void append_number(std::string& out, double v);  // number(v), appended

private:
    void prefix(const char* key);  // starts out_ with the separator, indent and key
    void flush();                  // writes out_ to the stream if the top-level value is complete or out_ is large
    std::ostream& os_;
    std::string out_;
    std::vector<bool> first_;  // per open container: no member written yet
};

}  // namespace xpu
