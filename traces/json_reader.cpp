#include "traces/json_reader.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace xpu {

const JsonValue* JsonValue::get(const std::string& key) const {
    if (type != Type::Object) return nullptr;
    for (const auto& [k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

const JsonValue* JsonValue::at_path(const std::string& dotted) const {
    const JsonValue* v = this;
    std::size_t i = 0;
    while (v && i <= dotted.size()) {
        const std::size_t dot = dotted.find('.', i);
        v = v->get(dotted.substr(i, dot == std::string::npos ? std::string::npos : dot - i));
        if (dot == std::string::npos) break;
        i = dot + 1;
    }
    return v;
}

namespace {
class Parser {
public:
    Parser(const std::string& s, const std::string& what) : s_(s), what_(what) {}

    JsonValue document() {
        JsonValue v = value(0);
        skip_ws();
        if (i_ != s_.size()) error("expected the end of the document after the top-level value");
        return v;
    }

private:
    [[noreturn]] void error(const std::string& msg) const {
        std::size_t line = 1, col = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            if (s_[k] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw JsonError(what_ + ": line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg);
    }
    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool literal(const char* word) {
        std::size_t n = std::char_traits<char>::length(word);
        if (s_.compare(i_, n, word) != 0) return false;
        i_ += n;
        return true;
    }
    JsonValue value(int depth) {
        // Deep nesting is not something the project writes; refuse it rather than overflow the stack.
        if (depth > 200) error("nesting deeper than 200 levels");
        skip_ws();
        if (i_ >= s_.size()) error("expected a value, found the end of the document");
        JsonValue v;
        const char c = s_[i_];
        if (c == '{') {
            v.type = JsonValue::Type::Object;
            ++i_;
            skip_ws();
            if (i_ < s_.size() && s_[i_] == '}') {
                ++i_;
                return v;
            }
            for (;;) {
                skip_ws();
                if (i_ >= s_.size() || s_[i_] != '"') error("expected a member name in double quotes");
                std::string key = string();
                skip_ws();
                if (i_ >= s_.size() || s_[i_] != ':') error("expected ':' after member name \"" + key + "\"");
                ++i_;
                v.members.emplace_back(std::move(key), value(depth + 1));
                skip_ws();
                if (i_ < s_.size() && s_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (i_ < s_.size() && s_[i_] == '}') {
                    ++i_;
                    return v;
                }
                error("expected ',' or '}' in an object");
            }
        }
        if (c == '[') {
            v.type = JsonValue::Type::Array;
            ++i_;
            skip_ws();
            if (i_ < s_.size() && s_[i_] == ']') {
                ++i_;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                skip_ws();
                if (i_ < s_.size() && s_[i_] == ',') {
                    ++i_;
                    continue;
                }
                if (i_ < s_.size() && s_[i_] == ']') {
                    ++i_;
                    return v;
                }
                error("expected ',' or ']' in an array");
            }
        }
        if (c == '"') {
            v.type = JsonValue::Type::String;
            v.str = string();
            return v;
        }
        if (literal("true")) {
            v.type = JsonValue::Type::Bool;
            v.b = true;
            return v;
        }
        if (literal("false")) {
            v.type = JsonValue::Type::Bool;
            return v;
        }
        if (literal("null")) return v;
        if (c == '-' || (c >= '0' && c <= '9')) {
            const char* begin = s_.c_str() + i_;
            char* end = nullptr;
            v.type = JsonValue::Type::Number;
            v.num = std::strtod(begin, &end);
            if (end == begin) error("expected a number");
            i_ += static_cast<std::size_t>(end - begin);
            return v;
        }
        error(std::string("expected a value (object, array, string, number, true, false or null), found '") + c + "'");
    }
    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    unsigned hex4() {
        if (i_ + 4 > s_.size()) error("expected 4 hex digits after \\u");
        unsigned cp = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
            else error("expected 4 hex digits after \\u");
        }
        return cp;
    }
    std::string string() {
        ++i_;  // the opening quote
        std::string out;
        while (i_ < s_.size()) {
            const char c = s_[i_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) break;
            const char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
                        i_ += 2;
                        const unsigned lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: error(std::string("unknown escape '\\") + e + "' in a string");
            }
        }
        error("expected the closing '\"' of a string");
    }

    const std::string& s_;
    const std::string& what_;
    std::size_t i_ = 0;
};
}  // namespace

JsonValue parse_json(const std::string& text, const std::string& what) { return Parser(text, what).document(); }

JsonValue read_json_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw JsonError(path + ": cannot open the file");
    std::ostringstream ss;
    ss << f.rdbuf();
    return parse_json(ss.str(), path);
}

}  // namespace xpu
