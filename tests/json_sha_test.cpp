// The small JSON reader (traces/json_reader.h) and SHA-256 (traces/sha256.h) that xpu_sweep and
// xpu_analyze --compare use to read runs back and tell their traces apart.
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
