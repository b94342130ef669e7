#include "platform/json_writer.h"

#include <cmath>
#include <cstdio>

namespace xpu {

std::string JsonWriter::escape(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            case '\r': o += "\\r"; break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    o += b;
                } else {
                    o += static_cast<char>(c);
                }
        }
    }
    return o + "\"";
}

std::string JsonWriter::number(double v) {
    if (!std::isfinite(v)) return "null";
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        char b[32];
        std::snprintf(b, sizeof b, "%.0f", v);
        return b;
    }
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", v);
    return b;
}

void JsonWriter::prefix(const char* key) {
    if (!first_.empty()) {
        if (!first_.back()) os_ << ",";
        first_.back() = false;
        os_ << "\n" << std::string(first_.size() * 2, ' ');
    }
    if (key) os_ << escape(key) << ": ";
}

JsonWriter& JsonWriter::begin_object(const char* key) {
    prefix(key);
    os_ << "{";
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_object() {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) os_ << "\n" << std::string(first_.size() * 2, ' ');
    os_ << "}";
    if (first_.empty()) os_ << "\n";
    return *this;
}
JsonWriter& JsonWriter::begin_array(const char* key) {
    prefix(key);
    os_ << "[";
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_array() {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) os_ << "\n" << std::string(first_.size() * 2, ' ');
    os_ << "]";
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, const std::string& v) {
    prefix(key);
    os_ << escape(v);
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, double v) {
    prefix(key);
    os_ << number(v);
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, std::uint64_t v) {
    prefix(key);
    os_ << v;
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, bool v) {
    prefix(key);
    os_ << (v ? "true" : "false");
    return *this;
}

}  // namespace xpu
