#include "analysis/render_util.h"

#include "traces/json_writer.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace xpu::analysis::render {

namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

void html_escape_to(std::string& out, std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '&': out += "&amp;"; break;
                case '<': out += "&lt;"; break;
                case '>': out += "&gt;"; break;
                case '"': out += "&quot;"; break;
                case '\'': out += "&#39;"; break;
                case '\t':
                case '\n': out += static_cast<char>(c); break;
                default:
                    if (c >= 0x20 && c != 0x7F) out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(s.data() + i, n);
            i += n;
        }
    }
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    html_escape_to(out, s);
    return out;
}

void json_number_to(std::string& out, double v) {
    if (!std::isfinite(v)) v = 0;
    if (v == 0) v = 0;  // no "-0"
    char b[64];
    const auto r = std::to_chars(b, b + sizeof b, v);
    out.append(b, r.ptr);
}

void micros_to(std::string& out, Tick ps) {
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, ps / 1000000);
    out.append(b, r.ptr);
    out += '.';
    const Tick frac = ps % 1000000;
    char f[6];
    Tick x = frac;
    for (int k = 5; k >= 0; --k) {
        f[k] = static_cast<char>('0' + x % 10);
        x /= 10;
    }
    out.append(f, 6);
}

std::string fixed(double v, int decimals) {
    if (!std::isfinite(v)) v = 0;
    char b[128];
    const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::fixed, decimals);
    std::string s(b, r.ptr);
    if (s.size() > 1 && s[0] == '-') {  // "-0.00" -> "0.00"
        bool zero = true;
        for (char c : s.substr(1))
            if (c >= '1' && c <= '9') zero = false;
        if (zero) s.erase(0, 1);
    }
    return s;
}

std::string number(double v) {
    if (v == 0) return "0";
    const double a = std::fabs(v);
    const int d = a < 1 ? 4 : a < 10 ? 3 : a < 100 ? 2 : a < 1000 ? 1 : 0;
    return fixed(v, d);
}

std::string duration(Tick ps) {
    const double v = static_cast<double>(ps);
    if (ps < 1000) return std::to_string(ps) + " ps";
    if (ps < 1000000) return number(v / 1e3) + " ns";
    if (ps < 1000000000ull) return number(v / 1e6) + " us";
    if (ps < 1000000000000ull) return fixed(v / 1e9, 3) + " ms";
    return fixed(v / 1e12, 3) + " s";
}

std::string bytes(std::uint64_t b) {
    if (b < 1024) return std::to_string(b) + " B";
    const double v = static_cast<double>(b);
    if (b < (1ull << 20)) return fixed(v / 1024, 2) + " KiB";
    if (b < (1ull << 30)) return fixed(v / (1 << 20), 2) + " MiB";
    return fixed(v / (1ull << 30), 2) + " GiB";
}

std::string percent(double part, double total) {
    if (!(total > 0)) return "0.0%";
    return fixed(100.0 * part / total, 1) + "%";
}

const char* cause_color(Cause c) {
    switch (c) {
        case Cause::Busy: return "#2ca02c";      // green
        case Cause::Supply: return "#9467bd";    // purple
        case Cause::DataDep: return "#ff7f0e";   // orange
        case Cause::UnitBusy: return "#8c564b";  // brown
        case Cause::SyncWait: return "#d62728";  // red
        case Cause::Hbm: return "#1f77b4";       // blue
        case Cause::Link: return "#17becf";      // cyan
        case Cause::Vmem: return "#e377c2";      // pink
        case Cause::Idle: return "#c7c7c7";      // light grey
    }
    return "#000000";
}

FileOut::FileOut(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) fail("cannot create the file", errno);
    buf_.reserve(kFlushAt + (64u << 10));
}

FileOut::~FileOut() {
    if (f_) std::fclose(f_);
}

void FileOut::flush() {
    if (buf_.empty()) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) fail("write failed", errno);
    buf_.clear();
}

void FileOut::close() {
    if (!f_) return;
    flush();
    std::FILE* f = f_;
    f_ = nullptr;
    const bool bad = std::ferror(f) != 0;
    const int err = errno;
    if (std::fclose(f) != 0 || bad) fail("write failed", err);
}

void FileOut::fail(const char* what, int err) {
    if (f_) {
        std::fclose(f_);
        f_ = nullptr;
    }
    std::string msg = path_ + ": " + what;
    if (err) msg += std::string(" (") + std::strerror(err) + ")";
    throw std::runtime_error(msg);
}

}  // namespace xpu::analysis::render
