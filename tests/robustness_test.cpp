// Robustness of a run (platform/simulation.h): a trace checked against the platform before
// anything runs (every problem a TraceError or ConfigError naming stream, instruction and what
// was expected), deadlock diagnosis (who waits on what, and who could have raised the flag),
// the time limit, stop requests, and idle gaps longer than a run-loop slice. Each TEST is its
// own process (one SystemC elaboration each).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <unistd.h>

#include "models/sim_time.h"
#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "platform/simulation.h"
#include "platform/thread_stacks.h"
#include "tests/sim_fixture.h"
#include "traces/trace_text.h"

using namespace xpu;
using namespace xpu::platform;
using namespace xpu::test;

namespace {

// Assembles `text` (a whole .xtr file after the version line) into a binary trace.
std::string trace_of(const std::string& name, const std::string& text) {
    std::string src = temp_path(name + ".xtr"), bin = temp_path(name + ".bin");
    std::ofstream(src) << ".xtr 1.0\n" << text;
    trace::assemble(src, bin);
    return bin;
}

// One stream (chip 0, core 0).
std::string core0(const std::string& name, const std::string& body) {
    return trace_of(name, ".stream chip=0 core=0\n" + body + "halt\n");
}

::testing::AssertionResult contains(const std::string& s, const std::string& part) {
    if (s.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << s << "'\n  does not contain\n'" << part << "'";
}

const std::string kXpu = "configs/xpu.yaml";
const std::string kTwoCore = "tests/data/bad/two-core.yaml";

// The TraceError check_trace() throws for `trace` on `platform` ("" and a test failure if none).
std::string check_error(const std::string& trace, const std::string& platform = kXpu) {
    PlatformConfig cfg = load_platform(source_path(platform));
    Simulation sim(cfg, trace);
    try {
        sim.check_trace();
    } catch (const trace::TraceError& e) {
        return e.what();
    }
    ADD_FAILURE() << trace << " passed check_trace()";
    return "";
}

}  // namespace

// ---- the trace checked against the platform --------------------------------------------------

TEST(CheckTrace, AValidTraceOnItsPlatformPasses) {
    // The control for every other CheckTrace test: each is this trace with one change.
    std::string t = core0("ok", "dma src=hbm:0x0 dst=vmem:0x0 bytes=4096 flag=1\n"
                                "swait flag=1 cond=ge val=1\n"
                                "vld d=v1 src=vmem:0x0 bytes=4096\n"
                                "mpush u=7 s0=v1 shape=128x128x128 dtype=bf16\n"
                                "matmul u=7 d=m0 s0=v1 shape=128x128x128 dtype=bf16\n"
                                "mpop u=7 d=v2 s0=m0 shape=128x128x128\n"
                                "vst s0=v2 dst=vmem:0x1ff0000 bytes=65536\n"
                                "dma u=3 src=vmem:0x0 dst=hbm:0x7fffff000 bytes=4096 flag=1023\n"
                                "swait flag=1023 cond=ge val=1\n");
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    EXPECT_TRUE(sim.check_trace());
    RunResult r = sim.run();
    EXPECT_TRUE(r.completed) << r.diagnosis;
    EXPECT_EQ(r.stop, StopReason::Completed);
}

TEST(CheckTrace, RegisterIdOutOfRangeNamesStreamInstructionAndField) {
    std::string t = core0("reg", "salu d=s1\nvalu d=v1 s0=r200\n");
    EXPECT_EQ(check_error(t), t + ": stream 0 (chip 0, core 0), instruction 1 (valu d=v1 s0=r200): s0=r200 is not a "
                                  "register (expected s0..s63, v0..v63 or m0..m63, ids 0..191)");
}

TEST(CheckTrace, UnitIndexBeyondTheBoundUnits) {
    std::string m = check_error(core0("mxu8", "matmul u=8 d=m0 s0=v1 shape=8x128x128 dtype=bf16\n"));
    EXPECT_TRUE(contains(m, "instruction 0 (matmul u=8 "));
    EXPECT_TRUE(contains(m, "u=8: the core has 8 matrix units (mxu[0..7])"));
    EXPECT_TRUE(contains(check_error(core0("vpu1", "valu u=1 d=v1 s0=v2\n")), "u=1: the core has 1 vector unit (vpu[0..0])"));
}

TEST(CheckTrace, MatrixShapeTheArrayCannotTake) {
    EXPECT_TRUE(contains(check_error(core0("push", "mpush s0=v1 shape=128x128x256 dtype=bf16\n")),
                         "a 256x128 (k x n) weight tile does not fit the 128x128 array of mxu[0] "
                         "(expected k <= rows = 128, n <= cols = 128)"));
    EXPECT_TRUE(contains(check_error(core0("wide", "matmul d=m0 s0=v1 shape=8x256x128 dtype=bf16\n")),
                         "a 128x256 (k x n) weight tile does not fit the 128x128 array"));
    EXPECT_TRUE(contains(check_error(core0("m0", "matmul d=m0 s0=v1 shape=0x128x128 dtype=bf16\n")),
                         "shape m=0: a matmul streams at least one row"));
    EXPECT_TRUE(contains(check_error(core0("noshape", "matmul d=m0 s0=v1 dtype=bf16\n")), "a matmul needs shape=MxNxK"));
    // The platform decides: the same tile fits the two-core platform's 16x16 arrays only up to 16.
    EXPECT_TRUE(contains(check_error(core0("small", "mpush s0=v1 shape=1x17x16\n"), kTwoCore),
                         "a 16x17 (k x n) weight tile does not fit the 16x16 array of mxu[0]"));
}

TEST(CheckTrace, DmaOperands) {
    EXPECT_TRUE(contains(check_error(core0("zero", "dma src=hbm:0x0 dst=vmem:0x0 bytes=0\n")),
                         "instruction 0 (dma src=hbm:0x0 dst=vmem:0x0 bytes=0): bytes=0: a DMA moves at least one byte"));
    EXPECT_TRUE(contains(check_error(core0("nobytes", "dma src=hbm:0x0 dst=vmem:0x0\n")), "a DMA needs src=, dst= and bytes="));
    // 64 KiB into a 32 MiB VMEM, 16 KiB before its end: runs past it.
    EXPECT_TRUE(contains(check_error(core0("pastend", "dma src=hbm:0x0 dst=vmem:0x1ffc000 bytes=65536\n")),
                         "dst=vmem:0x1ffc000 bytes=65536: global range [0x100001ffc000, +65536) is outside the memory "
                         "map (expected inside core0.vmem [0x100000000000, +32MiB))"));
    // Larger than the whole HBM.
    EXPECT_TRUE(contains(check_error(core0("huge", "dma src=hbm:0x0 dst=hbm:0x0 bytes=0x1000000000\n")),
                         "src=hbm:0x0 bytes=68719476736: global range [0x0, +68719476736) is outside the memory map "
                         "(expected inside hbm [0x0, +32GiB))"));
    // An address whose global form would wrap around 2^64.
    EXPECT_TRUE(contains(check_error(core0("wrap", "dma src=vmem:0xffffffffffffff00 dst=hbm:0x0 bytes=4096\n")),
                         "is outside the memory map"));
    EXPECT_TRUE(contains(check_error(core0("chip7", "dma src=hbm:0x0 dst=vmem@7:0x0 bytes=64\n")),
                         "dst=vmem@7:0x0: chip 7 does not exist ("));
    EXPECT_TRUE(contains(check_error(core0("rsrc", "dma src=hbm@3:0x0 dst=vmem:0x0 bytes=64\n")),
                         "src=hbm@3:0x0: a DMA reads from its own chip only"));
    EXPECT_TRUE(contains(check_error(core0("dflag", "dma src=hbm:0x0 dst=vmem:0x0 bytes=64 flag=1024\n")),
                         "flag=1024 is out of range: the chip has 1024 sync flags (0..1023)"));
}

TEST(CheckTrace, VectorLoadsAndStoresStayInTheirVmem) {
    EXPECT_TRUE(contains(check_error(core0("vhbm", "vld d=v1 src=hbm:0x0 bytes=64\n")),
                         "src=hbm:0x0: a vld/vst addresses its own chip's vmem"));
    EXPECT_TRUE(contains(check_error(core0("vend", "vst s0=v1 dst=vmem:0x2000000 bytes=64\n")),
                         "dst=vmem:0x2000000 bytes=64: global range [0x100002000000, +64) is outside the memory map"));
    EXPECT_TRUE(contains(check_error(core0("vnob", "vld d=v1 src=vmem:0x0\n")), "a vld/vst needs bytes="));
    // On the two-core platform vmem: is an offset into the issuing core's own VMEM: core 1's
    // vmem:0x0 is byte 0 of core1.vmem (valid), and the end of its 1 MiB is the limit.
    PlatformConfig two = load_platform(source_path(kTwoCore));
    Simulation ok(two, trace_of("vown", ".stream chip=0 core=1\nvld d=v1 src=vmem:0x0 bytes=64\n"
                                        "vst s0=v1 dst=vmem:0xfffc0 bytes=64\nhalt\n"));
    EXPECT_TRUE(ok.check_trace());
    std::string t = trace_of("vpast", ".stream chip=0 core=1\nvld d=v1 src=vmem:0xfffc0 bytes=128\nhalt\n");
    EXPECT_TRUE(contains(check_error(t, kTwoCore), "stream 0 (chip 0, core 1), instruction 0 (vld d=v1 src=vmem:0xfffc0 "
                                                   "bytes=128): src=vmem:0xfffc0 bytes=128: global range [0x2000fffc0, "
                                                   "+128) is outside the memory map (expected inside core1.vmem "
                                                   "[0x200000000, +1MiB))"));
    // A DMA's vmem: operand too: core 1's range is checked against core1.vmem, not core0.vmem.
    std::string d = trace_of("dpast", ".stream chip=0 core=1\ndma src=hbm:0x0 dst=vmem:0xff000 bytes=8192\nhalt\n");
    EXPECT_TRUE(contains(check_error(d, kTwoCore), "dst=vmem:0xff000 bytes=8192: global range [0x2000ff000, +8192) is "
                                                   "outside the memory map (expected inside core1.vmem [0x200000000, +1MiB))"));
}

TEST(CheckTrace, SyncFlagOutOfRange) {
    EXPECT_TRUE(contains(check_error(core0("sset", "sset flag=5000 val=1\n")),
                         "instruction 0 (sset flag=5000 val=1): flag=5000 is out of range: the chip has 1024 sync "
                         "flags (0..1023)"));
    EXPECT_TRUE(contains(check_error(core0("bar", "barrier flag=16\n"), kTwoCore), "flag=16 is out of range: the chip has 16"));
}

TEST(CheckTrace, APlatformWithoutTheUnitsAStreamUsesIsAConfigError) {
    PlatformConfig cfg = load_platform(source_path("tests/data/bad/yaml-no-dma-engine.yaml"));
    std::string t = core0("nodma", "salu d=s1\ndma src=hbm:0x0 dst=vmem:0x0 bytes=64 flag=1\n");
    Simulation sim(cfg, t);
    try {
        sim.check_trace();
        FAIL() << "no ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  source_path("tests/data/bad/yaml-no-dma-engine.yaml") +
                      ": xpu.chip0.core0.scalar has no DMA engine bound to its dma socket (add one and a binding "
                      "'core0.scalar.dma[0] -> ...' to chip.bindings), but " + t +
                      ": stream 0 (chip 0, core 0), instruction 1 (dma src=hbm:0x0 dst=vmem:0x0 bytes=64 flag=1) needs it");
    }
}

TEST(CheckTrace, StopRequestEndsTheCheckWithoutAnError) {
    std::string t = core0("stop", "salu d=r200\n");  // would be an error
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    EXPECT_FALSE(sim.check_trace([] { return true; }));
}

// ---- the check beside the run (sim_main's way: Simulation::start_check) -----------------------

// 20000 valid instructions, then one the check refuses (a register id past the scoreboard's).
// Whatever the timing of the two threads, the run must stop before it (the gate never passes
// it) and the error must be the check's own, as check_trace() names it.
TEST(CheckBesideTheRun, TheRunNeverExecutesWhatTheCheckRefused) {
    std::string body;
    for (int i = 0; i < 20000; ++i) body += "salu d=s1 s0=s1\n";
    std::string t = core0("late", body + "salu d=r200\n");
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    sim.start_check();
    bool run_failed = false;
    try {
        sim.run();
    } catch (const sc_core::sc_report& e) {
        run_failed = true;
        EXPECT_EQ(std::string(e.get_msg_type()), "xpusim/trace");
    }
    EXPECT_TRUE(run_failed) << "the run went past an instruction the check refused";
    try {
        sim.finish_check();
        FAIL() << "finish_check() did not rethrow the check's TraceError";
    } catch (const trace::TraceError& e) {
        EXPECT_EQ(std::string(e.what()), t + ": stream 0 (chip 0, core 0), instruction 20000 (salu d=r200): "
                                             "d=r200 is not a register (expected s0..s63, v0..v63 or m0..m63, ids 0..191)");
    }
}

TEST(CheckBesideTheRun, AValidTraceRunsToTheEndAndTheCheckPasses) {
    std::string body;
    for (int i = 0; i < 20000; ++i) body += "salu d=s1 s0=s1\n";
    std::string t = core0("fine", body);
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    sim.start_check();
    RunResult r = sim.run();
    EXPECT_TRUE(sim.finish_check());
    EXPECT_EQ(r.stop, StopReason::Completed) << r.diagnosis;
    EXPECT_EQ(r.instructions, 20001u);  // and the halt
}

TEST(CheckBesideTheRun, AStopRequestEndsTheCheckAndTheRunWithoutAnError) {
    std::string t = core0("stopped", "salu d=s1\nsalu d=r200\n");  // would be an error
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    sim.start_check([] { return true; });
    try {
        sim.run();
    } catch (const sc_core::sc_report&) {
        // the gate closed: the run stops at its first batch
    }
    EXPECT_FALSE(sim.finish_check());
}

// Beside the run, the check hands the run the instructions it decoded (traces/checked_feed.h),
// filling the streams in turn in pieces smaller than the 4096 instructions it always decoded
// before checking any. Reference: check_trace(), the check before the run, whose messages the
// bad-input corpus pins: the check beside the run must name the same problem whatever the
// pieces and the order it fills the streams in.
namespace {

// The problem the check names, before the run (check_trace) or beside it (start_check, a run,
// finish_check); "" if none.
std::string problem_named(const std::string& trace, bool beside) {
    PlatformConfig cfg = load_platform(source_path(kTwoCore));
    Simulation sim(cfg, trace);
    try {
        if (!beside) {
            sim.check_trace();
            return "";
        }
        sim.start_check();
        try {
            sim.run();
        } catch (const sc_core::sc_report&) {
            // the run stopped where the check had not passed anything more
        }
        sim.finish_check();
    } catch (const trace::TraceError& e) {
        return e.what();
    }
    return "";
}

// Two streams (chip 0, cores 0 and 1) of `n0` and `n1` scalar instructions, `bad0` / `bad1`
// (if below n) replaced by one with a register id past the scoreboard's (the same size).
std::string two_streams(const std::string& name, int n0, int bad0, int n1, int bad1) {
    std::string t;
    for (int c = 0; c < 2; ++c) {
        t += ".stream chip=0 core=" + std::to_string(c) + "\n";
        const int n = c ? n1 : n0, bad = c ? bad1 : bad0;
        for (int i = 0; i < n; ++i) t += i == bad ? "salu d=r200 s0=s1\n" : "salu d=s2 s0=s1\n";
        t += "halt\n";
    }
    return trace_of(name, t);
}

// The trace's blocks: (file offset, stream, instruction count), in file order.
struct BlockAt {
    std::uint64_t offset;
    std::uint32_t stream, count;
};
std::vector<BlockAt> blocks_of(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const trace::TraceFile tf = trace::TraceFile::open(path);
    auto u32 = [&](std::uint64_t at) {
        std::uint32_t v = 0;
        for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
        return v;
    };
    std::vector<BlockAt> out;
    for (std::uint64_t off = trace::kHeaderSize; off < tf.block_area_end();) {
        out.push_back({off, u32(off + 4), u32(off + 8)});
        off += trace::kBlockHeaderSize + u32(off + 12);
    }
    return out;
}

// Flips a payload byte of the block at `offset` (its CRC no longer matches).
void corrupt_block(const std::string& path, std::uint64_t offset) {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(static_cast<std::streamoff>(offset + trace::kBlockHeaderSize + 1));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(static_cast<std::streamoff>(offset + trace::kBlockHeaderSize + 1));
    f.write(&c, 1);
}

// Stream 0's second block corrupt, and a refused instruction at the first instruction of the
// 4096-instruction window holding the block's start (`in_window`), or at the last one before it:
// the trace, and where that block starts in the stream.
std::pair<std::string, std::uint64_t> refused_then_corrupt(const std::string& name, bool in_window) {
    const std::string probe = two_streams(name + "-probe", 30000, -1, 5, -1);
    const auto blocks = blocks_of(probe);
    std::uint64_t first = 0, second_offset = 0;
    int seen = 0;
    for (const auto& b : blocks) {
        if (b.stream != 0) continue;
        if (++seen == 1) first = b.count;
        if (seen == 2) second_offset = b.offset;
    }
    const std::uint64_t window = first / 4096 * 4096;
    const std::string t = two_streams(name, 30000, static_cast<int>(in_window ? window : window - 1), 5, -1);
    EXPECT_EQ(blocks_of(t).size(), blocks.size());  // the refused instruction has the same size
    for (const auto& b : blocks_of(t)) {
        if (b.offset == second_offset) {
            EXPECT_EQ(b.stream, 0u);
        }
    }
    corrupt_block(t, second_offset);
    return {t, first};
}

}  // namespace

// What decoding stream 0 of `trace` throws (no SystemC: a plain reader).
std::string decode_problem(const std::string& trace) {
    try {
        trace::StreamReader r(trace::TraceFile::open(trace), 0);
        std::vector<Instruction> buf(4096);
        while (r.read(buf.data(), buf.size())) {
        }
    } catch (const trace::TraceError& e) {
        return e.what();
    }
    return "";
}

const std::string kNotARegister = " (salu d=r200 s0=s1): d=r200 is not a register (expected s0..s63, v0..v63 or m0..m63, ids 0..191)";

// A problem in each stream: the first in stream order is named (stream 0's, far into it), not
// the one the check beside the run meets first (stream 1's, at its start). One Simulation per
// process: the check before the run and beside it are two tests with the same expectation.
void first_in_stream_order(bool beside) {
    const std::string t = two_streams("order", 20000, 15000, 100, 3);
    EXPECT_EQ(problem_named(t, beside), t + ": stream 0 (chip 0, core 0), instruction 15000" + kNotARegister);
}
TEST(CheckBeforeTheRun, NamesTheFirstProblemInStreamOrder) { first_in_stream_order(false); }
TEST(CheckBesideTheRun, NamesTheFirstProblemInStreamOrder) { first_in_stream_order(true); }

// A refused instruction and, later in the same 4096-instruction window, a corrupt block: the
// check decoded the window before checking it, so the corrupt block is named; a window earlier,
// the refused instruction. Two streams: the check beside the run cuts them into pieces of
// fewer than 4096 instructions, which must not change that.
void decode_problem_first_within_its_window(bool beside) {
    const auto [t, block_start] = refused_then_corrupt("window", true);
    // Two streams: pieces of at most 2048 instructions. The block starts in the window's second
    // half, the refused instruction is the window's first: the piece that holds it ends before
    // the corrupt block is read.
    ASSERT_GE(block_start % 4096, 2048u);
    const std::string expected = decode_problem(t);
    EXPECT_TRUE(contains(expected, "block 1 at offset")) << expected;
    EXPECT_TRUE(contains(expected, "payload CRC mismatch")) << expected;
    EXPECT_EQ(problem_named(t, beside), expected);
}
TEST(CheckBeforeTheRun, NamesADecodeProblemFirstWithinItsWindow) { decode_problem_first_within_its_window(false); }
TEST(CheckBesideTheRun, NamesADecodeProblemFirstWithinItsWindow) { decode_problem_first_within_its_window(true); }

void refused_instruction_of_an_earlier_window(bool beside) {
    const auto [t, block_start] = refused_then_corrupt("earlier", false);
    EXPECT_EQ(problem_named(t, beside),
              t + ": stream 0 (chip 0, core 0), instruction " + std::to_string(block_start / 4096 * 4096 - 1) + kNotARegister);
}
TEST(CheckBeforeTheRun, NamesARefusedInstructionOfAnEarlierWindow) { refused_instruction_of_an_earlier_window(false); }
TEST(CheckBesideTheRun, NamesARefusedInstructionOfAnEarlierWindow) { refused_instruction_of_an_earlier_window(true); }

// A run that ends long before the trace does (a core waits on a flag nobody raises, with
// 30000 instructions after the wait): the check, whose queues the run no longer drains, goes
// on alone and passes the rest.
TEST(CheckBesideTheRun, ARunThatEndsEarlyLeavesTheCheckToFinishAlone) {
    std::string body = "swait flag=5 cond=ge val=1\n";
    for (int i = 0; i < 30000; ++i) body += "salu d=s2 s0=s1\n";
    const std::string t = trace_of("early", ".stream chip=0 core=0\n" + body + "halt\n.stream chip=0 core=1\n" + body + "halt\n");
    PlatformConfig cfg = load_platform(source_path(kTwoCore));
    Simulation sim(cfg, t);
    sim.start_check();
    RunResult r = sim.run();
    EXPECT_EQ(r.stop, StopReason::Deadlock);
    EXPECT_TRUE(sim.finish_check());
}

// ---- how runs end ----------------------------------------------------------------------------

// An event further away than a run-loop slice (100 us): a 2^24-row matmul keeps the core
// draining for ~16 ms with no event in between. The run must reach it (it used to spin for
// ever without advancing the time); ctest's timeout catches a regression.
// ---- The host's limit on memory mappings (platform/thread_stacks.h) -----------------------------
// Reference: the count the model says (one SystemC thread per ScalarCore and per DmaEngine, and
// one per chip for its DmaArbiter; a stack and a guard page each) against what the kernel shows: /proc/self/maps grows by two
// mappings per thread once the simulation has started.

TEST(ThreadStacks, TheElaboratedThreadsAreTheCoresDmaEnginesAndArbiters) {
    PlatformConfig cfg = load_platform(source_path(kTwoCore));
    Simulation sim(cfg, core0("ts", "nop\n"));
    std::size_t cores = 0, engines = 0;
    for (const auto& m : cfg.modules) {
        if (m.spec->core_id()) ++cores;
        if (m.type == "DmaEngine") ++engines;
    }
    ASSERT_GT(cores, 1u);
    ASSERT_GT(engines, 0u);
    EXPECT_EQ(count_thread_processes(), cfg.chips * (cores + engines + 1));
}

TEST(ThreadStacks, EachThreadAddsTwoMappingsWhenTheRunStarts) {
    PlatformConfig cfg = load_platform(source_path(kTwoCore));
    Simulation sim(cfg, core0("tm", "nop\n"));
    const std::size_t threads = count_thread_processes();
    const auto before = memory_mappings_held();
    ASSERT_TRUE(before.has_value());
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // the stacks are made here
    const auto after = memory_mappings_held();
    // Adjacent mappings with equal permissions may merge, and malloc may map more: the stacks
    // add at most two each and, with their guard pages between them, at least one each.
    EXPECT_GE(*after - *before, threads);
    EXPECT_LE(*after - *before, threads * kMappingsPerThread + 64);
}

TEST(ThreadStacks, ThreadsOverTheLimitAreAProblemThatSaysHowManyChipsFit) {
    ThreadStackDemand d;
    d.chips = 4096;
    d.threads = 4096 * 9;  // a core and four engines with two threads each: the platform before
    d.mappings_held = 60;
    d.max_map_count = 65530;
    const auto p = thread_stack_problem(d);
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(contains(*p, "4096 chips elaborate 36864 SystemC threads"));
    EXPECT_TRUE(contains(*p, "need 73728 memory mappings"));
    EXPECT_TRUE(contains(*p, "that is 74812, over this machine's limit of 65530"));
    // (65530 - 60 - 1024) / 18 per chip = 3580 chips
    EXPECT_TRUE(contains(*p, "expected at most 3580 chips of this kind"));
    EXPECT_TRUE(contains(*p, "sysctl -w vm.max_map_count=131072"));
    d.threads = 4096 * 5;  // one thread per engine: fits
    EXPECT_FALSE(thread_stack_problem(d).has_value());
    d.max_map_count = 0;  // unknown limit: nothing to check
    d.threads = 1u << 30;
    EXPECT_FALSE(thread_stack_problem(d).has_value());
}

// The address space (ulimit -v): each thread's stack is SystemC's default size and a guard page
// on top of what the process has mapped, and 64 MiB are kept for the run (thread_stacks.cpp).
TEST(ThreadStacks, StacksOverTheAddressSpaceLimitAreAProblemThatSaysTheLimitNeeded) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t per = static_cast<std::size_t>(sc_core::SC_DEFAULT_STACK_SIZE) + page, mapped = 700u << 20;
    const std::size_t threads = 24576, limit = 3000000ull * 1024;
    const auto p = address_space_problem(4096, threads, mapped, limit);
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(contains(*p, "4096 chips elaborate 24576 SystemC threads"));
    EXPECT_TRUE(contains(*p, "on top of the 700 MiB the process has mapped: over its limit of 2930 MiB (ulimit -v)"));
    // Chips of 6 threads each that fit: (limit - mapped - 64 MiB) / per thread / 6.
    const std::size_t fit = (limit - mapped - (64u << 20)) / per * 4096 / threads;
    EXPECT_TRUE(contains(*p, "expected at most " + std::to_string(fit) + " chips")) << *p;
    EXPECT_FALSE(address_space_problem(4096, threads, mapped, 0).has_value());  // no limit
    EXPECT_FALSE(address_space_problem(4096, threads, mapped, mapped + threads * per + (64u << 20)).has_value());  // just fits
    EXPECT_TRUE(address_space_problem(4096, threads, mapped, mapped + threads * per + (64u << 20) - 1).has_value());
}

TEST(RunEnd, IdleGapLongerThanASliceIsCrossed) {
    alarm(120);  // a hang fails the test (SIGALRM) instead of waiting for ctest's timeout
    auto run = simulate(core0("gap", "matmul d=m0 s0=v1 shape=16777216x128x128 dtype=bf16\n"), {}, kXpu, false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    const Tick cycle = cycle_of(*run);
    EXPECT_GE(run->result.simulated_ns, ticks_to_ns(Tick(16777216) * cycle));
}

TEST(RunEnd, TimeLimitStopsAtTheLimitAndSaysWhereEachCoreWas) {
    std::string t = core0("limit", "salu d=s1\nmatmul d=m0 s0=v1 shape=16777216x128x128 dtype=bf16\n"
                                   "mpop d=v2 s0=m0 shape=16777216x128x128\nswait flag=3 cond=ge val=1\n");
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    RunOptions o;
    o.max_sim_time = ns_to_ticks(1000);
    RunResult r = sim.run(o);
    EXPECT_EQ(r.stop, StopReason::MaxSimTime);
    EXPECT_FALSE(r.completed);
    EXPECT_DOUBLE_EQ(r.simulated_ns, 1000.0);
    EXPECT_TRUE(contains(r.diagnosis, "time limit (--max-sim-time 1 us) reached at 1 us simulated; where each core was:\n"));
    EXPECT_TRUE(contains(r.diagnosis, "  xpu.chip0.core0.scalar (chip 0, core 0): "));
    EXPECT_TRUE(contains(r.diagnosis, "of 5 instructions retired"));
    for (const auto& u : r.units) EXPECT_LE(u.utilization, 1.0) << u.name;
}

TEST(RunEnd, ARunThatFitsTheLimitCompletes) {
    std::string t = core0("fits", "salu d=s1\n");
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    RunOptions o;
    o.max_sim_time = ns_to_ticks(1e6);
    RunResult r = sim.run(o);
    EXPECT_EQ(r.stop, StopReason::Completed);
    EXPECT_TRUE(r.completed);
    EXPECT_LT(r.simulated_ns, 1e6);
}

TEST(RunEnd, StopRequestInterruptsBetweenSlices) {
    // A chain of dependent long ops: the core waits (an event) for each result in turn.
    std::string body;
    for (int i = 0; i < 6; ++i)
        body += "matmul d=m" + std::to_string(i) + " s0=v" + std::to_string(i) + " shape=1048576x128x128 dtype=bf16\n"
                "mpop d=v" + std::to_string(i + 1) + " s0=m" + std::to_string(i) + " shape=8x128x128\n";
    std::string t = core0("intr", body);
    PlatformConfig cfg = load_platform(source_path(kXpu));
    Simulation sim(cfg, t);
    RunOptions o;
    int polls = 0;
    o.stop_requested = [&] { return ++polls > 3; };
    RunResult r = sim.run(o);
    EXPECT_EQ(r.stop, StopReason::Interrupted);
    EXPECT_FALSE(r.completed);
    EXPECT_EQ(polls, 4);
    EXPECT_TRUE(contains(r.diagnosis, "interrupted at "));
    EXPECT_TRUE(contains(r.diagnosis, "xpu.chip0.core0.scalar (chip 0, core 0)"));
}

TEST(RunEnd, StopReasonNames) {
    EXPECT_STREQ(stop_reason_name(StopReason::Completed), "completed");
    EXPECT_STREQ(stop_reason_name(StopReason::Deadlock), "deadlock");
    EXPECT_STREQ(stop_reason_name(StopReason::MaxSimTime), "max-sim-time");
    EXPECT_STREQ(stop_reason_name(StopReason::Interrupted), "interrupted");
}

// ---- deadlock diagnosis ----------------------------------------------------------------------

TEST(Deadlock, AFlagNothingRaisesSaysSo) {
    auto run = simulate(core0("none", "sset flag=4 val=1\nswait flag=5 cond=ge val=1\n"), {}, kXpu, false);
    EXPECT_EQ(run->result.stop, StopReason::Deadlock);
    const std::string& d = run->result.diagnosis;
    EXPECT_TRUE(contains(d, "xpu.chip0.core0.scalar (chip 0, core 0) blocked at instruction 1: swait flag=5 val=1 cond=ge\n"));
    EXPECT_TRUE(contains(d, "waits until flag 5 of xpu.chip0.flags is >= 1; its value is 0"));
    EXPECT_TRUE(contains(d, "no instruction in the trace sets or adds flag 5 on chip 0"));
}

TEST(Deadlock, ACycleNamesWhoCouldRaiseTheFlagAndWhyTheyDidNot) {
    std::string t = trace_of("cycle", ".stream chip=0 core=0\n"
                                      "swait flag=3 cond=ge val=1\n"
                                      "sadd flag=4 val=1\n"
                                      "halt\n"
                                      ".stream chip=0 core=1\n"
                                      "sset flag=3 val=0\n"
                                      "swait flag=4 cond=ge val=1\n"
                                      "sadd flag=3 val=1\n"
                                      "halt\n");
    auto run = simulate(t, {}, kTwoCore, false);
    EXPECT_EQ(run->result.stop, StopReason::Deadlock);
    const std::string& d = run->result.diagnosis;
    EXPECT_TRUE(contains(d, "instructions of the trace that target flag 3 on chip 0 (2 in all):\n"
                            "      stream 1 (chip 0, core 1), instruction 0: sset flag=3 val=0 (executed)\n"
                            "      stream 1 (chip 0, core 1), instruction 2: sadd flag=3 val=1 (not reached: "
                            "xpu.chip0.core1.scalar is blocked at instruction 1)\n"));
    EXPECT_TRUE(contains(d, "stream 0 (chip 0, core 0), instruction 1: sadd flag=4 val=1 (not reached: "
                            "xpu.chip0.core0.scalar is blocked at instruction 0)"));
}

TEST(Deadlock, ACompletedDmaThatRaisedTooLittleIsListedAsExecuted) {
    auto run = simulate(core0("dma", "dma src=hbm:0x0 dst=vmem:0x0 bytes=4096 flag=6 val=1\n"
                                     "swait flag=6 cond=ge val=2\n"),
                        {}, kXpu, false);
    EXPECT_EQ(run->result.stop, StopReason::Deadlock);
    EXPECT_TRUE(contains(run->result.diagnosis, "its value is 1 and nothing pending will change it"));
    EXPECT_TRUE(contains(run->result.diagnosis,
                         "stream 0 (chip 0, core 0), instruction 0: dma src=hbm:0x0 dst=vmem:0x0 bytes=4096 flag=6 val=1 (executed)"));
}

TEST(Deadlock, ABarrierNamesTheCoresThatNeverArrive) {
    std::string t = trace_of("barrier", ".stream chip=0 core=0\nnop\nhalt\n.stream chip=0 core=1\nbarrier\nhalt\n");
    auto run = simulate(t, {}, kTwoCore, false);
    EXPECT_EQ(run->result.stop, StopReason::Deadlock);
    EXPECT_TRUE(contains(run->result.diagnosis,
                         "xpu.chip0.core1.scalar (chip 0, core 1) blocked at instruction 0: barrier\n"
                         "    waits at a barrier of xpu.chip0.flags (1 core(s) of chip 0 arrived); the others:\n"
                         "      xpu.chip0.core0.scalar: finished its stream without reaching this barrier\n"));
}

// ---- platform descriptions: only ConfigError, whatever the YAML ---------------------------------

namespace {
// The ConfigError loading `text` (written to a temp file) throws; "" and a test failure if none.
std::string yaml_error(const std::string& name, const std::string& text, const std::vector<std::string>& sets = {}) {
    std::string path = temp_path(name);
    std::ofstream(path) << text;
    try {
        load_platform(path, sets);
    } catch (const ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << name << " loaded";
    return "";
}
}  // namespace

TEST(YamlStructure, AKeyGivenTwiceNamesBothPlaces) {
    std::string m = yaml_error("dup.yaml", "xpusim: 1\nname: a\nname: b\n");
    EXPECT_EQ(m, temp_path("dup.yaml") + ":3:1: name: key given twice in one mapping (first at 2:1); expected each key once");
}

TEST(YamlStructure, AnAliasInsideItsOwnNodeIsAnErrorNotARecursion) {
    EXPECT_TRUE(contains(yaml_error("cycle.yaml", "xpusim: 1\nchip: &c\n  modules: *c\n"),
                         ":3:12: chip.modules: this alias names a node that contains it (a cycle)"));
    EXPECT_TRUE(contains(yaml_error("setcycle.yaml", "xpusim: 1\n", {"chip=&a {m: *a}"}),
                         "--set 'chip=&a {m: *a}': chip.m: this alias names a node that contains it"));
}

TEST(YamlStructure, AliasesExpandingToAHugeTreeAreRefused) {
    // Each level names the previous one twice: 2^24 modules from 30 lines.
    std::string y = "xpusim: 1\nchip:\n  modules:\n    l0: &l0 {m: {type: TraceInjector}}\n";
    for (int i = 1; i <= 24; ++i)
        y += "    l" + std::to_string(i) + ": &l" + std::to_string(i) + " {a: *l" + std::to_string(i - 1) + ", b: *l" +
             std::to_string(i - 1) + "}\n";
    alarm(120);
    // Refused while parsing, before anything expands it (it once took seconds and 0.5 GB).
    EXPECT_TRUE(contains(yaml_error("laughs.yaml", y), "with its aliases expanded the description holds more than 200000 nodes"));
}

TEST(YamlStructure, AliasesBelowTheBoundStillLoad) {
    // 2^6 = 64 copies of a module container: a legitimate (if odd) use of aliases.
    std::string y = "xpusim: 1\nx:\n  l0: &l0 {m: 1}\n";
    for (int i = 1; i <= 6; ++i)
        y += "  l" + std::to_string(i) + ": &l" + std::to_string(i) + " {a: *l" + std::to_string(i - 1) + ", b: *l" +
             std::to_string(i - 1) + "}\n";
    // Fails later (no chip, unknown key x), not on the aliases.
    EXPECT_FALSE(contains(yaml_error("fine.yaml", y), "aliases expanded"));
}

TEST(YamlStructure, DepthAndDocumentsAreBounded) {
    EXPECT_TRUE(contains(yaml_error("deep.yaml", "xpusim: 1\nname: " + std::string(200, '[') + std::string(200, ']') + "\n"),
                         "nested more than 64 levels deep"));
    EXPECT_TRUE(contains(yaml_error("two.yaml", "xpusim: 1\n---\nxpusim: 1\n"), "more than one YAML document"));
    EXPECT_TRUE(contains(yaml_error("binary.yaml", std::string("\x00\xff\xfe:\x01[", 6)), "binary.yaml"));
}
