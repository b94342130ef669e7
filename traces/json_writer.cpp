#include "traces/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace xpu {

std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const std::size_t left = s.size() - i;
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    auto cont = [&](std::size_t k) { return k < left && (b(k) & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || !cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(1) > 0x9F) return 0;  // surrogates
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
        if (c == 0xF4 && b(1) > 0x8F) return 0;  // beyond U+10FFFF
        return 4;
    }
    return 0;
}

// Printable ASCII other than " and \ goes through as it is.
static bool plain_json_char(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

void json_escape_to(std::string& out, std::string_view s) {
    static const char* hex = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        // Runs of plain characters in one append: keys and names are nearly all plain, and a
        // 256-chip stats.json escapes ~60k of them.
        std::size_t plain = i;
        while (plain < s.size() && plain_json_char(static_cast<unsigned char>(s[plain]))) ++plain;
        if (plain > i) {
            out.append(s.data() + i, plain - i);
            i = plain;
            continue;
        }
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\t': out += "\\t"; break;
                case '\r': out += "\\r"; break;
                default:  // the other control characters and DEL
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
            }
            ++i;
            continue;
        }
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            out += "\\ufffd";
            ++i;
        } else {
            out.append(s.data() + i, n);
            i += n;
        }
    }
    out += '"';
}

std::string JsonWriter::escape(const std::string& s) {
    std::string o;
    json_escape_to(o, s);
    return o;
}

// "%.0f" for an integral value below 1e15 and "%.9g" otherwise, written with std::to_chars,
// which the standard defines as printf's conversion with the same precision in the "C" locale
// (byte for byte: tests/json_writer_test.cpp compares the two on a million values); snprintf
// was ~2,000 instructions a number, most of a 256-chip stats.json.
void JsonWriter::append_number(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out += "null";
        return;
    }
    char b[32];
    std::to_chars_result r;
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        if (v == 0 && std::signbit(v)) {  // "%.0f" keeps the sign of negative zero
            out += "-0";
            return;
        }
        r = std::to_chars(b, b + sizeof b, static_cast<long long>(v));
    } else {
        r = std::to_chars(b, b + sizeof b, v, std::chars_format::general, 9);
    }
    out.append(b, r.ptr);
}

std::string JsonWriter::number(double v) {
    std::string o;
    append_number(o, v);
    return o;
}

// The text collects in `out_` and goes to the stream in blocks of 64 KiB and when the
// top-level value is complete (flush): no stream operation per member, no temporary strings
// (the writer was most of the cost of stats.json for a 256-chip platform).
JsonWriter::~JsonWriter() {
    if (!out_.empty()) os_.write(out_.data(), static_cast<std::streamsize>(out_.size()));
}

void JsonWriter::prefix(const char* key) {
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
        out_ += '\n';
        out_.append(first_.size() * 2, ' ');
    }
    if (key) {
        json_escape_to(out_, key);
        out_ += ": ";
    }
}

void JsonWriter::flush() {
    if (!first_.empty() && out_.size() < (std::size_t{1} << 16)) return;
    os_.write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
}

JsonWriter& JsonWriter::begin_object(const char* key) {
    prefix(key);
    out_ += '{';
    flush();
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_object() {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) {
        out_ += '\n';
        out_.append(first_.size() * 2, ' ');
    }
    out_ += '}';
    if (first_.empty()) out_ += '\n';
    flush();
    return *this;
}
JsonWriter& JsonWriter::begin_array(const char* key) {
    prefix(key);
    out_ += '[';
    flush();
    first_.push_back(true);
    return *this;
}
JsonWriter& JsonWriter::end_array() {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) {
        out_ += '\n';
        out_.append(first_.size() * 2, ' ');
    }
    out_ += ']';
    flush();
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, const std::string& v) {
    prefix(key);
    json_escape_to(out_, v);
    flush();
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, double v) {
    prefix(key);
    append_number(out_, v);
    flush();
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, std::uint64_t v) {
    prefix(key);
    char b[24];
    const auto r = std::to_chars(b, b + sizeof b, v);
    out_.append(b, r.ptr);
    flush();
    return *this;
}
JsonWriter& JsonWriter::field(const char* key, bool v) {
    prefix(key);
    out_ += v ? "true" : "false";
    flush();
    return *this;
}

JsonWriter& JsonWriter::null_field(const char* key) {
    prefix(key);
    out_ += "null";
    flush();
    return *this;
}

}  // namespace xpu
