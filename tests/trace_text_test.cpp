// Text form (.xtr): format/parse, error positions, assembler/disassembler round trip.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "traces/instruction.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"
#include "traces/trace_validate.h"
#include "traces/trace_writer.h"

namespace fs = std::filesystem;

namespace xpu::trace::test {
// Defined in trace_format_test.cpp.
Instruction random_instruction(std::mt19937_64& rng, std::uint32_t strings);
}  // namespace xpu::trace::test

using namespace xpu;
using namespace xpu::trace;

namespace {

class TextTest : public ::testing::Test {
 protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("xpu_xtr_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    std::string write_text(const std::string& name, const std::string& text) const {
        const std::string p = file(name);
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
    // The TraceError message of assembling `text`, or "" if it assembles.
    std::string asm_error(const std::string& text) const {
        const std::string in = write_text("e.xtr", text), out = file("e.bin");
        try {
            assemble(in, out);
        } catch (const TraceError& e) {
            EXPECT_FALSE(fs::exists(out)) << "no output after an error";
            EXPECT_FALSE(fs::exists(out + ".tmp"));
            return e.what();
        }
        return "";
    }
    fs::path dir_;
};

std::vector<std::uint8_t> read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string parse_error(std::string_view line) {
    try {
        parse_instruction(line, "f.xtr", 7);
    } catch (const TraceError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(TextForm, EachOpcodeFormatsAndParsesCanonically) {
    // Canonical lines (as dis prints them), one or more per opcode.
    const std::vector<std::string> lines = {
        "salu d=s1 s0=s0 s1=s63",
        "branch s0=s4",
        "nop",
        "halt ts=18446744073709551615",
        "vld d=v1 src=vmem:0x0 bytes=4096",
        "vst u=2 s0=v63 dst=vmem:0xfffc bytes=4096 ann=3",
        "valu d=v6 s0=v4 s1=v5 s2=v0 count=16384",
        "vtrans d=v4 s0=v3 count=128",
        "vreduce d=v5 s0=v4",
        "vperm d=v7 s0=v6 count=1",
        "mpush s0=v1 shape=0x128x256 dtype=int8",
        "matmul d=m0 s0=v2 s1=m0 shape=128x128x128 dtype=bf16 ann=0 ts=123456",
        "mpop d=v3 s0=m63 shape=8x128x0",
        "dma u=1 src=hbm@3:0x1000 dst=vmem:0x40 bytes=65536 flag=2 val=1 ann=0",
        "dma src=vmem:0x0 dst=hbm@65534:0xffffffffffffffff bytes=1",
        "swait flag=2 val=-9223372036854775808 cond=ge",
        "sset flag=65535 val=9223372036854775807",
        "sadd flag=3 val=-1",
        "barrier flag=0",
        "barrier u=255",
        "nop d=r200",  // raw id of an invalid register (dis prints it so; it must parse back)
    };
    for (const auto& line : lines) {
        const Instruction in = parse_instruction(line, "t.xtr", 1);
        EXPECT_EQ(format_instruction(in), line);
        EXPECT_EQ(parse_instruction(format_instruction(in), "t.xtr", 1), in) << line;
    }
    const Instruction mm = parse_instruction(lines[11], "t.xtr", 1);
    EXPECT_EQ(mm.op, Opcode::MatMul);
    EXPECT_EQ(mm.present, kDst | kSrc0 | kSrc1 | kShape | kDtype | kAnn | kTimestamp);
    EXPECT_EQ(mm.dst, kMatrixRegBase);
    EXPECT_EQ(mm.src[0], kVectorRegBase + 2);
    EXPECT_EQ(mm.k, 128u);
    EXPECT_EQ(mm.timestamp, 123456u);
    const Instruction dma = parse_instruction(lines[13], "t.xtr", 1);
    EXPECT_EQ(dma.unit, 1);
    EXPECT_EQ(dma.mem_src.space, Space::Hbm);
    EXPECT_EQ(dma.mem_src.chip, 3);
    EXPECT_EQ(dma.mem_src.addr, 0x1000u);
    EXPECT_EQ(dma.mem_dst.chip, kLocalChip);
    EXPECT_EQ(dma.bytes, 65536u);
    const Instruction sw = parse_instruction(lines[15], "t.xtr", 1);
    EXPECT_EQ(sw.cond, Cond::Ge);
    EXPECT_EQ(sw.value, INT64_MIN);
    EXPECT_EQ(parse_instruction("nop d=r200", "t.xtr", 1).dst, 200);
}

TEST(TextForm, KeysInAnyOrderCommentsAndWhitespace) {
    const Instruction in =
        parse_instruction("  \tdma bytes=0x1000   flag=2 dst=vmem:64 src=hbm:0x10 u=0  # trailing comment", "t", 1);
    EXPECT_EQ(format_instruction(in), "dma src=hbm:0x10 dst=vmem:0x40 bytes=4096 flag=2");
    EXPECT_EQ(in.unit, 0);
    EXPECT_FALSE(in.has(kValue));
    EXPECT_EQ(format_instruction(parse_instruction("halt#c", "t", 1)), "halt");
}

TEST(TextForm, ErrorsNameFileLineAndColumn) {
    EXPECT_EQ(parse_error("foo d=s1").rfind("f.xtr:7:1: unknown mnemonic 'foo'", 0), 0u) << parse_error("foo d=s1");
    EXPECT_EQ(parse_error("salu d=s1 zz=3").rfind("f.xtr:7:11: unknown key 'zz'", 0), 0u);
    EXPECT_EQ(parse_error("salu d=s1 d=s2").rfind("f.xtr:7:11: key 'd' given twice (first at column 6)", 0), 0u)
        << parse_error("salu d=s1 d=s2");
    EXPECT_EQ(parse_error("salu d=x1").rfind("f.xtr:7:8: expected a register", 0), 0u);
    EXPECT_EQ(parse_error("salu d=s64").rfind("f.xtr:7:8: register number out of range", 0), 0u);
    EXPECT_EQ(parse_error("sset flag=65536").rfind("f.xtr:7:11: number out of range for flag", 0), 0u);
    EXPECT_EQ(parse_error("sset val=9223372036854775808").rfind("f.xtr:7:10: number out of range for val", 0), 0u);
    EXPECT_EQ(parse_error("vld bytes=12k").rfind("f.xtr:7:11: expected a number", 0), 0u);
    EXPECT_EQ(parse_error("matmul dtype=f64").rfind("f.xtr:7:14: unknown dtype 'f64'", 0), 0u);
    EXPECT_EQ(parse_error("swait cond=always").rfind("f.xtr:7:12: unknown cond 'always'", 0), 0u);
    EXPECT_EQ(parse_error("dma src=dram:0x0").rfind("f.xtr:7:9: unknown memory space 'dram'", 0), 0u);
    EXPECT_EQ(parse_error("dma src=hbm@65535:0x0").rfind("f.xtr:7:13: number out of range for chip", 0), 0u);
    EXPECT_EQ(parse_error("dma src=hbm").rfind("f.xtr:7:9: expected a memory operand", 0), 0u);
    EXPECT_EQ(parse_error("mpush shape=1x2").rfind("f.xtr:7:13: expected shape=MxNxK", 0), 0u);
    EXPECT_EQ(parse_error("nop u=256").rfind("f.xtr:7:7: number out of range for u", 0), 0u);
    EXPECT_EQ(parse_error("nop flag").rfind("f.xtr:7:5: expected key=value", 0), 0u);
    EXPECT_EQ(parse_error("nop flag=").rfind("f.xtr:7:10: expected a value", 0), 0u);
    EXPECT_EQ(parse_error("   # only a comment").rfind("f.xtr:7:4: expected an instruction mnemonic", 0), 0u);
}

TEST_F(TextTest, AssemblerErrorsNameLineAndColumn) {
    std::string e = asm_error("halt\n");
    EXPECT_NE(e.find("e.xtr:1:1: expected the version line '.xtr 1.0'"), std::string::npos) << e;
    e = asm_error("# nothing\n");
    EXPECT_NE(e.find("e.xtr:2:1: expected the version line"), std::string::npos) << e;
    e = asm_error(".xtr 2.0\n");
    EXPECT_NE(e.find("e.xtr:1:6: expected text format version 1.0"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\nhalt\n");
    EXPECT_NE(e.find("e.xtr:2:1: expected a '.stream"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.string 1 \"x\"\n");
    EXPECT_NE(e.find("e.xtr:2:9: expected string id 0"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.string 0 \"abc\n");
    EXPECT_NE(e.find("e.xtr:2:11: unterminated string"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.string 0 \"a\\qb\"\n");
    EXPECT_NE(e.find("e.xtr:2:13: unknown escape"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.string 0 \"a\"\n.string 1 \"a\"\n");
    EXPECT_NE(e.find("e.xtr:3:11: duplicate string"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.stream chip=0\n");
    EXPECT_NE(e.find("e.xtr:2:"), std::string::npos) << e;
    EXPECT_NE(e.find("expected both chip=N and core=M"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.stream chip=0 core=0\nmatmul ann=0\n");
    EXPECT_NE(e.find("e.xtr:3:12: ann=0 names no string"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.stream chip=0 core=0\nnop\n  vld d=v1 bytes=1 bytes=2\n");
    EXPECT_NE(e.find("e.xtr:4:20: key 'bytes' given twice"), std::string::npos) << e;
    e = asm_error(".xtr 1.0\n.bogus\n");
    EXPECT_NE(e.find("e.xtr:2:1: unknown directive '.bogus'"), std::string::npos) << e;
    EXPECT_EQ(asm_error(".xtr 1.0\r\n.stream chip=0 core=0 # c\r\nhalt\r\n"), "");  // CRLF is fine
}

TEST_F(TextTest, StringEscapesRoundTrip) {
    const std::vector<std::string> strings = {"plain", "q\"uote", "back\\slash", "nl\nnl", "tab\t", "ctl\x01\x7f",
                                              "\xC3\xA9t\xC3\xA9", "bad utf8 \xFF\xFE", "# not a comment", ""};
    const std::string bin = file("s.bin");
    {
        TraceWriter w(bin);
        for (const auto& s : strings) w.add_string(s);
        w.close();
    }
    std::ostringstream text;
    disassemble(bin, text);
    EXPECT_NE(text.str().find(".string 1 \"q\\\"uote\""), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(".string 7 \"bad utf8 \\xFF\\xFE\""), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(".string 6 \"\xC3\xA9t\xC3\xA9\""), std::string::npos) << text.str();
    const std::string xtr = write_text("s.xtr", text.str());
    assemble(xtr, file("s2.bin"));
    EXPECT_EQ(TraceFile::open(file("s2.bin")).strings(), strings);
    EXPECT_EQ(quote_string("a\"b\\c\n\t\x02"), "\"a\\\"b\\\\c\\n\\t\\x02\"");
}

TEST_F(TextTest, AsmOfDisIsByteIdenticalOnRandomBinary) {
    const std::string bin = file("r.bin");
    std::mt19937_64 rng(2024);
    {
        TraceWriter w(bin);
        for (int i = 0; i < 20; ++i) w.add_string("layer" + std::to_string(i) + "/op\t\"" + std::to_string(i * 7));
        w.add_stream(0, 0);
        w.add_stream(0, 1);
        w.add_stream(3, 2);  // empty
        w.add_stream(1, 0);
        for (int i = 0; i < 60000; ++i) {
            const std::size_t s = std::vector<std::size_t>{0, 1, 3}[rng() % 3];
            w.append(s, test::random_instruction(rng, 20));
        }
        w.close();
    }
    ASSERT_GT(TraceFile::open(bin).block_count(), 6u);
    const std::string xtr = file("r.xtr");
    {
        std::ofstream out(xtr, std::ios::binary);
        disassemble(bin, out);
    }
    const std::string bin2 = file("r2.bin");
    assemble(xtr, bin2);
    EXPECT_EQ(read_bytes(bin), read_bytes(bin2));

    // ...and dis of the reassembled file is the same text.
    std::ostringstream again;
    disassemble(bin2, again);
    std::ifstream f(xtr, std::ios::binary);
    const std::string first((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(first, again.str());
}

TEST_F(TextTest, RepeatedStreamLineSwitchesBackToTheStream) {
    const std::string xtr = write_text("m.xtr",
                                       ".xtr 1.0\n.stream chip=0 core=0\nnop\n.stream chip=0 core=1\nhalt\n"
                                       ".stream chip=0 core=0\nhalt\n");
    assemble(xtr, file("m.bin"));
    const TraceFile tf = TraceFile::open(file("m.bin"));
    ASSERT_EQ(tf.streams().size(), 2u);
    EXPECT_EQ(tf.streams()[0].instructions, 2u);
    EXPECT_EQ(tf.streams()[1].instructions, 1u);
}

TEST_F(TextTest, TinySampleAssemblesAndValidates) {
    const std::string tiny = std::string(XPU_SOURCE_DIR) + "/traces/samples/tiny.xtr";
    const std::string bin = file("tiny.bin");
    assemble(tiny, bin);
    const auto problems = validate(bin);
    for (const auto& p : problems) ADD_FAILURE() << p.message;
    EXPECT_TRUE(problems.empty());
    const TraceSummary s = summarize(bin);
    ASSERT_EQ(s.streams.size(), 2u);
    EXPECT_EQ(s.total.instructions, 24u);
    EXPECT_EQ(s.strings, 3u);
    // every opcode appears at least once
    for (std::uint8_t op : {0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x30, 0x40,
                            0x41, 0x42, 0x43})
        EXPECT_GT(s.total.opcode_counts[op], 0u) << mnemonic(static_cast<Opcode>(op));
    EXPECT_EQ(s.total.count(Opcode::Dma), 3u);
    EXPECT_EQ(s.total.dma.hbm_to_vmem, 65536u);
    EXPECT_EQ(s.total.dma.vmem_to_hbm, 32768u);
    EXPECT_EQ(s.total.dma.remote, 4096u);
}
