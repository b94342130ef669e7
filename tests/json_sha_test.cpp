// The small JSON reader (traces/json_reader.h) and SHA-256 (traces/sha256.h) that xpu_sweep and
// xpu_analyze --compare use to read runs back and tell their traces apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "traces/json_reader.h"
#include "traces/json_writer.h"
#include "traces/sha256.h"

namespace {

std::string sha(const std::string& s) {
    xpu::Sha256 h;
    h.update(s.data(), s.size());
    return h.hex();
}

TEST(Sha256, KnownVectors) {
    // FIPS 180-4 examples, and a message whose padding spills into a second block.
    EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesEqualWhole) {
    std::string s;
    for (int i = 0; i < 1000; ++i) s += static_cast<char>(i * 7);
    xpu::Sha256 h;
    for (std::size_t i = 0; i < s.size(); i += 13) h.update(s.data() + i, std::min<std::size_t>(13, s.size() - i));
    EXPECT_EQ(h.hex(), sha(s));
}

// The CPU's SHA extensions (used when present) against the portable code (the FIPS 180-4
// reference above, KnownVectors checks both through sha() and here): random contents of every
// length up to 300 bytes and some long ones, fed in random pieces (so that whole blocks go
// straight from the caller's bytes and partial ones through the buffer).
TEST(Sha256, HardwareEqualsPortable) {
    EXPECT_EQ([] { xpu::Sha256 h(false); h.update("abc", 3); return h.hex(); }(),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    if (!xpu::Sha256::hardware_available()) GTEST_SKIP() << "this CPU has no SHA extensions: one implementation only";
    std::mt19937 rng(3);
    for (std::size_t len = 0; len < 300 + 20; ++len) {
        const std::size_t n = len < 300 ? len : 1000 + rng() % 200000;
        std::string s(n, '\0');
        for (char& c : s) c = static_cast<char>(rng());
        xpu::Sha256 hw(true), sw(false);
        for (std::size_t i = 0; i < n;) {
            const std::size_t take = std::min<std::size_t>(n - i, 1 + rng() % 200);
            hw.update(s.data() + i, take);
            sw.update(s.data() + i, take);
            i += take;
        }
        ASSERT_EQ(hw.hex(), sw.hex()) << n << " bytes";
    }
}

TEST(JsonReader, ReadsWhatTheWriterWrites) {
    std::ostringstream os;
    xpu::JsonWriter j(os);
    j.begin_object();
    j.field("name", "a \"quoted\"\n\xc3\xa9");
    j.field("n", 12.5);
    j.field("big", std::uint64_t{1} << 53);
    j.field("yes", true);
    j.null_field("none");
    j.begin_object("hbm");
    j.field("achieved_gbps", 548.25);
    j.end_object();
    j.begin_array("list");
    j.value("x");
    j.value("y");
    j.end_array();
    j.end_object();
    const xpu::JsonValue v = xpu::parse_json(os.str());
    EXPECT_EQ(v.get("name")->str, "a \"quoted\"\n\xc3\xa9");
    EXPECT_EQ(v.get("n")->num, 12.5);
    EXPECT_EQ(v.get("big")->num, 9007199254740992.0);
    EXPECT_TRUE(v.get("yes")->b);
    EXPECT_EQ(v.get("none")->type, xpu::JsonValue::Type::Null);
    EXPECT_EQ(v.at_path("hbm.achieved_gbps")->num, 548.25);
    EXPECT_EQ(v.at_path("hbm.nothing"), nullptr);
    ASSERT_EQ(v.get("list")->items.size(), 2u);
    EXPECT_EQ(v.get("list")->items[1].str, "y");
    EXPECT_EQ(xpu::parse_json("\"\\u00e9\\ud83d\\ude00\"").str, "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(JsonReader, ErrorsNameThePlace) {
    try {
        xpu::parse_json("{\n  \"a\": 1,\n  \"b\" 2\n}", "x.json");
        FAIL() << "accepted a member without ':'";
    } catch (const xpu::JsonError& e) {
        EXPECT_EQ(std::string(e.what()), "x.json: line 3, column 7: expected ':' after member name \"b\"");
    }
    EXPECT_THROW(xpu::parse_json("[1, 2"), xpu::JsonError);
    EXPECT_THROW(xpu::parse_json("{} x"), xpu::JsonError);
    EXPECT_THROW(xpu::parse_json(std::string(300, '[')), xpu::JsonError);  // too deep, not a crash
    EXPECT_THROW(xpu::read_json_file("/nonexistent/stats.json"), xpu::JsonError);
}

// The writer's numbers against the printf conversions they replaced (the reference: "%.0f" for
// an integral value below 1e15, "%.9g" otherwise; std::to_chars is specified as printf's
// conversion, and this checks that the library keeps it, byte for byte).
std::string printf_number(double v) {
    if (!std::isfinite(v)) return "null";
    char b[64];
    const int n = v == std::floor(v) && std::fabs(v) < 1e15 ? std::snprintf(b, sizeof b, "%.0f", v) : std::snprintf(b, sizeof b, "%.9g", v);
    return std::string(b, static_cast<std::size_t>(n));
}

TEST(JsonWriter, NumbersAreWhatPrintfWrites) {
    std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 0.1, 1e-5, 1e-7, 123456789.5, 1e15, -1e15,
                                  1e15 - 1, -(1e15 - 1), 999999999999999.5, 1e16, 1.5e300, 5e-324, 2.2250738585072014e-308,
                                  std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                                  std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                                  0.999999999, 0.9999999995, 99999999.95, 1234567.0, 548.25, 1.0 / 3, 2.0 / 3};
    std::mt19937_64 rng(7);
    for (int i = 0; i < 300000; ++i) {  // any bit pattern: every exponent, subnormals, NaNs
        const std::uint64_t bits = rng();
        double v;
        std::memcpy(&v, &bits, sizeof v);
        values.push_back(v);
    }
    std::uniform_real_distribution<double> frac(-1e6, 1e6);
    std::uniform_int_distribution<std::int64_t> whole(-999999999999999, 999999999999999);
    std::uniform_int_distribution<int> exp10(-12, 18);
    for (int i = 0; i < 300000; ++i) {
        values.push_back(static_cast<double>(whole(rng)));                 // integral, below 1e15
        values.push_back(frac(rng));                                        // simulator-like magnitudes
        values.push_back(std::round(frac(rng)) * std::pow(10.0, exp10(rng)));  // round figures at any scale
    }
    std::size_t differ = 0;
    for (double v : values) {
        std::string ours;
        xpu::JsonWriter::append_number(ours, v);
        if (ours != printf_number(v) && ++differ <= 5) ADD_FAILURE() << std::hexfloat << v << ": " << ours << " vs " << printf_number(v);
    }
    EXPECT_EQ(differ, 0u) << "of " << values.size() << " values";
}

// The escape against the character-by-character loop it replaced (runs of plain characters are
// now appended whole): every byte alone, and random strings of every byte and of UTF-8 pieces.
std::string escape_by_character(const std::string& s) {
    static const char* hex = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c == '"') out += "\\\"";
            else if (c == '\\') out += "\\\\";
            else if (c == '\n') out += "\\n";
            else if (c == '\t') out += "\\t";
            else if (c == '\r') out += "\\r";
            else if (c < 0x20 || c == 0x7F) out += std::string("\\u00") + hex[c >> 4] + hex[c & 15];
            else out += static_cast<char>(c);
            ++i;
            continue;
        }
        const std::size_t n = xpu::utf8_length(s, i);
        if (n == 0) {
            out += "\\ufffd";
            ++i;
        } else {
            out.append(s, i, n);
            i += n;
        }
    }
    return out + "\"";
}

TEST(JsonWriter, EscapesAsTheCharacterLoop) {
    std::vector<std::string> cases = {"", "chip0.core0.dma0", "a\"b\\c\n\t\r\x01\x7f", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                      "\xff\xc3", "plain then \x02 control"};
    for (int c = 0; c < 256; ++c) cases.push_back(std::string(1, static_cast<char>(c)));
    std::mt19937 rng(11);
    const std::vector<std::string> pieces = {"a", "Z", " ", ".", "\"", "\\", "\n", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\x80"};
    for (int i = 0; i < 20000; ++i) {
        std::string s;
        const int n = static_cast<int>(rng() % 24);
        for (int k = 0; k < n; ++k) s += rng() % 3 ? pieces[rng() % pieces.size()] : std::string(1, static_cast<char>(rng()));
        cases.push_back(s);
    }
    for (const auto& s : cases) {
        std::string ours;
        xpu::json_escape_to(ours, s);
        ASSERT_EQ(ours, escape_by_character(s)) << "input of " << s.size() << " bytes";
    }
}

}  // namespace
