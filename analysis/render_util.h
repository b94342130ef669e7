// Helpers shared by the renderers (report_html.cpp, timeline_json.cpp): HTML escaping (invalid
// UTF-8 replaced; JSON strings are traces/json_writer.h's), locale-independent number
// formatting, times and sizes with units, the colour of each stall cause, and a buffered file
// writer that reports errors.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "analysis/analysis.h"

namespace xpu::analysis::render {

// Appends `s` to `out` with &, <, >, " and ' escaped; control characters other than tab and
// newline are dropped and invalid UTF-8 becomes U+FFFD, so that any data string is safe in
// text and in attribute values.
void html_escape_to(std::string& out, std::string_view s);
std::string html_escape(std::string_view s);


// A JSON number (shortest round-trip form; NaN and infinities, which JSON lacks, become 0).
void json_number_to(std::string& out, double v);

// ps as microseconds with 6 decimals, exactly ("12.345678"): the trace-event format's unit.
void micros_to(std::string& out, Tick ps);

// `v` with `decimals` decimals, whatever the C locale says.
std::string fixed(double v, int decimals);
// 3 to 4 significant digits: 0.1234, 1.234, 12.34, 123.4, 1234.
std::string number(double v);
// A duration with its unit: "812 ps", "12.35 ns", "19.14 us", "1.234 ms", "2.500 s".
std::string duration(Tick ps);
// "512 B", "4.00 KiB", "8.00 MiB", "1.50 GiB".
std::string bytes(std::uint64_t b);
// share of total as a percentage, "45.7%" ("0.0%" when total is 0).
std::string percent(double part, double total);

// The colour of a cause in every chart (#rrggbb); distinct, and none of them grey-on-white
// text colours, so that a screenshot shows which causes were drawn.
const char* cause_color(Cause c);

// Writes a file through a 1 MiB buffer; any failure (open, write, close) throws
// std::runtime_error naming the path and the reason.
class FileOut {
public:
    explicit FileOut(const std::string& path);
    ~FileOut();
    FileOut(const FileOut&) = delete;
    FileOut& operator=(const FileOut&) = delete;
    std::string& buf() { return buf_; }  // append freely, then call maybe_flush()
    void maybe_flush() {
        if (buf_.size() >= kFlushAt) flush();
    }
    void write(std::string_view s) {
        buf_.append(s.data(), s.size());
        maybe_flush();
    }
    void close();  // flushes and closes; throws on failure

private:
    static constexpr std::size_t kFlushAt = 1u << 20;
    void flush();
    [[noreturn]] void fail(const char* what, int err);
    std::string path_;
    std::FILE* f_ = nullptr;
    std::string buf_;
};

}  // namespace xpu::analysis::render
