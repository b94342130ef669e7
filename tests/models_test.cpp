// Unit tests of the models, on small hand-written traces (text form) whose timing follows
// from the configuration by hand: each expected figure is derived in the test from the
// parameters, never read back from the simulator.
#include <gtest/gtest.h>

#include <fstream>

#include "models/bandwidth_calendar.h"
#include "models/quantum.h"
#include "models/sim_time.h"
#include "tests/sim_fixture.h"
#include "traces/trace_text.h"

using namespace xpu;
using namespace xpu::test;

namespace {

std::string xtr(const std::string& name, const std::string& body) {
    std::string src = temp_path(name + ".xtr"), bin = temp_path(name + ".bin");
    std::ofstream(src) << ".xtr 1.0\n.stream chip=0 core=0\n" << body << "halt\n";
    trace::assemble(src, bin);
    return bin;
}

const Recording::Instr& nth(const Run& r, std::size_t i) { return r.rec.instructions.at(i); }

}  // namespace

// Issue width: 8 independent scalar ops leave 4 per cycle (fetch and issue width 4), or one
// per cycle with issue_width 1.
TEST(ScalarCore, IssuesUpToIssueWidthPerCycle) {
    std::string t = xtr("w", "salu d=s1\nsalu d=s2\nsalu d=s3\nsalu d=s4\nsalu d=s5\nsalu d=s6\nsalu d=s7\nsalu d=s8\n");
    auto run = simulate(t);
    const Tick c = cycle_of(*run);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(nth(*run, i).ev.issue, (i / 4) * c) << i;
}

TEST(ScalarCore, SingleIssueTakesOneCyclePerInstruction) {
    auto run = simulate(xtr("w1", "salu d=s1\nsalu d=s2\nsalu d=s3\nsalu d=s4\n"),
                        {"chip.modules.core0.scalar.issue_width=1"});
    const Tick c = cycle_of(*run);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(nth(*run, i).ev.issue, i * c);
}

// RAW: each op of a dependence chain issues when its producer completes (salu latency 1,
// branch latency 2 cycles in the default config).
TEST(ScalarCore, DependentOpsWaitForTheirProducer) {
    auto run = simulate(xtr("raw", "salu d=s1\nsalu d=s2 s0=s1\nbranch s0=s2\nsalu d=s3 s0=s2\n"));
    const Tick c = cycle_of(*run);
    EXPECT_EQ(nth(*run, 0).ev.issue, 0u);
    EXPECT_EQ(nth(*run, 1).ev.issue, 1 * c);
    EXPECT_EQ(nth(*run, 2).ev.issue, 2 * c);
    EXPECT_EQ(nth(*run, 2).ev.complete, 4 * c);
    EXPECT_EQ(nth(*run, 3).ev.issue, 2 * c);  // needs s2 only: issues beside the branch (width 4)
}

// Vector ALU: occupancy = vregs x 1 cycle, result after alu_latency more cycles; a
// transcendental takes trans_cycles_per_vreg per vreg plus trans_latency.
TEST(VectorUnit, OccupancyAndLatencyFollowTheConfig) {
    auto run = simulate(xtr("v", "valu d=v1 s0=v0 count=4096\nvtrans d=v2 s0=v0 count=2048\nvalu d=v3 s0=v1 count=1024\n"));
    const Tick c = cycle_of(*run);
    EXPECT_EQ(nth(*run, 0).ev.complete - nth(*run, 0).ev.issue, (4 + 2) * c);
    EXPECT_EQ(nth(*run, 1).ev.complete - nth(*run, 1).ev.issue, (2 * 4 + 12) * c);
    // v3 = f(v1): waits for v1.
    EXPECT_EQ(nth(*run, 2).ev.issue, nth(*run, 0).ev.complete);
}

// A vector load moves through one VMEM port: ceil(bytes / port width) cycles + VMEM latency.
TEST(VectorUnit, LoadTimeIsSetByTheVmemPort) {
    auto run = simulate(xtr("vld", "vld d=v1 src=vmem:0x0 bytes=65536\n"));
    const Tick c = cycle_of(*run);
    EXPECT_EQ(nth(*run, 0).ev.complete - nth(*run, 0).ev.issue, (65536 / 1024 + 2) * c);
}

// A wait on a DMA's completion flag is satisfied exactly when the DMA's last byte lands.
TEST(SyncFlags, WaitEndsWhenTheDmaRaisesTheFlag) {
    auto run = simulate(xtr("dw", "dma src=hbm:0x0 dst=vmem:0x0 bytes=262144 flag=7 val=2\nswait flag=7 cond=ge val=2\n"));
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    EXPECT_EQ(nth(*run, 1).ev.issue, run->rec.dmas[0].complete);
    ASSERT_FALSE(run->rec.flags.empty());
    EXPECT_EQ(run->rec.flags.back().new_value, 2);
}

// Deadlock: nothing will ever raise flag 5; the run ends (no hang) and says who waits on what.
TEST(SyncFlags, UnsatisfiableWaitIsDiagnosedNotHung) {
    auto run = simulate(xtr("dead", "salu d=s1\nswait flag=5 cond=ge val=1\nsalu d=s2\n"));
    EXPECT_FALSE(run->result.completed);
    EXPECT_NE(run->result.diagnosis.find("flag 5"), std::string::npos) << run->result.diagnosis;
    EXPECT_NE(run->result.diagnosis.find("swait flag=5"), std::string::npos) << run->result.diagnosis;
    EXPECT_NE(run->result.diagnosis.find("instruction 1"), std::string::npos) << run->result.diagnosis;
    EXPECT_EQ(run->result.instructions, 1u);
}

// A full descriptor queue back-pressures the core: with room for 1 descriptor, the third DMA
// on an engine cannot be accepted before the first has started.
TEST(DmaEngine, FullQueueBackPressuresTheCore) {
    auto run = simulate(xtr("dq", "dma src=hbm:0x0 dst=vmem:0x0 bytes=1048576 flag=1\n"
                                  "dma src=hbm:0x100000 dst=vmem:0x100000 bytes=1048576 flag=1\n"
                                  "dma src=hbm:0x200000 dst=vmem:0x200000 bytes=1048576 flag=1\n"
                                  "swait flag=1 cond=ge val=3\n"),
                        {"chip.modules.dma0.queue_depth=1"});
    ASSERT_EQ(run->rec.dmas.size(), 3u);
    EXPECT_EQ(nth(*run, 0).ev.issue, 0u);
    // Waited for room: descriptor 2 left the queue when the engine took it, setup_latency
    // (16 cycles by default) before its first chunk.
    const Tick taken = run->rec.dmas[1].start - 16 * cycle_of(*run);
    EXPECT_EQ(nth(*run, 2).ev.issue, taken);
    EXPECT_GT(taken, 0u);
    EXPECT_GT(nth(*run, 2).ev.issue, nth(*run, 1).ev.issue);
    // One engine: descriptors stream back to back, never overlapping their starts.
    EXPECT_LE(run->rec.dmas[0].start, run->rec.dmas[1].start);
    EXPECT_LE(run->rec.dmas[1].start, run->rec.dmas[2].start);
}

// An address outside every memory is an error naming the instruction, not a crash.
TEST(Interconnect, AddressOutsideTheMapIsAClearError) {
    std::string t = xtr("bad", "dma src=hbm:0x7fffffff0000 dst=vmem:0x0 bytes=4096 flag=1\nswait flag=1 cond=ge val=1\n");
    try {
        simulate(t);
        FAIL() << "expected an error";
    } catch (const sc_core::sc_report& e) {
        std::string m = e.get_msg();
        EXPECT_NE(m.find("instruction 0"), std::string::npos) << m;
        EXPECT_NE(m.find("no memory"), std::string::npos) << m;
    }
}

// HBM channels: bandwidth is a ceiling per channel. 16 DMAs of 1 KiB at a stride of
// interleave x channels (32 KiB) all land on channel 0: 16 KiB at one channel's 37.5 GB/s
// cannot take less than 16384 / 37.5 ns.
TEST(HbmController, OneChannelCapsConflictingTraffic) {
    std::string same;
    for (int i = 0; i < 16; ++i) {
        char b[160];
        std::snprintf(b, sizeof b, "dma src=hbm:0x%x dst=vmem:0x%x bytes=1024 flag=1\n", i * 32768, i * 1024);
        same += b;
    }
    auto run = simulate(xtr("same", same + "swait flag=1 cond=ge val=16\n"));
    Tick end = 0;
    for (const auto& d : run->rec.dmas) end = std::max(end, d.complete);
    EXPECT_GE(ticks_to_ns(end), 16384 / 37.5);
}

// The same 16 KiB, contiguous, spreads over 16 channels: well under half that time.
TEST(HbmController, InterleavingSpreadsContiguousTraffic) {
    auto run = simulate(xtr("spread", "dma src=hbm:0x0 dst=vmem:0x0 bytes=16384 flag=1\nswait flag=1 cond=ge val=1\n"));
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    EXPECT_LT(ticks_to_ns(run->rec.dmas[0].complete), 16384 / 37.5 / 2);
}

// The calendar never carries more than its rate, and a late request for an earlier idle
// moment fills the gap instead of queueing behind future reservations.
TEST(BandwidthCalendar, NeverExceedsItsRateAndFillsGaps) {
    BandwidthCalendar cal(1.0, 1000);  // 1 byte per ps, buckets of 512 ps (rounded to 2^9)
    Tick end = 0;
    for (int i = 0; i < 100; ++i) end = std::max(end, cal.reserve(0, 1000, 0));
    EXPECT_GE(end, 100000u);  // 100 000 bytes at 1 byte/ps
    BandwidthCalendar gap(1.0, 1000);
    Tick future = gap.reserve(1'000'000, 5000, 0);
    Tick early = gap.reserve(0, 5000, 0);
    EXPECT_GE(future, 1'005'000u);
    EXPECT_LE(early, 6000u);  // not behind the future reservation
    EXPECT_EQ(gap.busy(), 10000u);
}

// A register id past the scoreboard is a clear error naming the instruction, not a write past
// the end of an array (sim_main rejects it before the run; this is the model's own guard).
TEST(ScalarCore, RegisterIdOutOfRangeIsAClearError) {
    std::string t = xtr("badreg", "salu d=s1\nsalu d=r200 s0=s1\n");
    try {
        simulate(t);
        FAIL() << "expected an error";
    } catch (const sc_core::sc_report& e) {
        std::string m = e.get_msg();
        EXPECT_NE(m.find("instruction 1"), std::string::npos) << m;
        EXPECT_NE(m.find("register id out of range"), std::string::npos) << m;
    }
}

// Temporal decoupling from one place: the platform sets the TLM-2.0 global quantum once from
// sim.quantum_ns, and that is what every initiator's QuantumKeeper reads (models/quantum.h).
TEST(Platform, SetsTheTlmGlobalQuantumFromSimQuantumNs) {
    auto run = simulate(xtr("q", "salu d=s1\n"), {"sim.quantum_ns=250"});
    EXPECT_EQ(QuantumKeeper::global_quantum_ticks(), 250'000u);
    EXPECT_EQ(tlm::tlm_global_quantum::instance().get(), sc_core::sc_time(250, sc_core::SC_NS));
}
