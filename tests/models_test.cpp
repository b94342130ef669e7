// Unit tests of the models, on small hand-written traces (text form) whose timing follows
// from the configuration by hand: each expected figure is derived in the test from the
// parameters, never read back from the simulator.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <vector>

#include "models/bandwidth_calendar.h"
#include "models/channel_groups.h"
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

namespace {

// The calendar as its header defines it, written the plainest way: buckets in a map, the first
// one with room found by scanning, the same floating-point steps per bucket (room, take, fill).
// BandwidthCalendar gets there with a ring, skip pointers, a frontier and a branch-free path
// for the usual request; none of that may change a single result.
class PlainCalendar {
public:
    PlainCalendar(double rate, Tick bucket) : rate_(rate) {
        unsigned shift = 0;  // rounded down to a power of two, lengthened to >= 16 bytes a bucket
        while ((Tick(2) << shift) <= bucket) ++shift;
        while (rate * static_cast<double>(Tick(1) << shift) < BandwidthCalendar::kMinBucketBytes && shift < 50) ++shift;
        len_ = Tick(1) << shift;
        cap_ = rate * static_cast<double>(len_);
    }
    Tick reserve(Tick t, std::uint64_t bytes, Tick now) {
        oldest_ = std::max(oldest_, now / len_);  // buckets before the kernel's time are gone
        fill_.erase(fill_.begin(), fill_.lower_bound(oldest_));
        bytes_ += bytes;
        if (bytes == 0) return t;
        double left = static_cast<double>(bytes);
        for (std::uint64_t b = std::max(t / len_, oldest_);; ++b) {
            double& used = fill_[b];
            if (cap_ - used <= 1e-6) continue;  // full
            const Tick start = b * len_;
            double room = cap_ - used;
            if (t > start) room = std::min(room, cap_ * static_cast<double>(start + len_ - t) * (1.0 / static_cast<double>(len_)));
            if (room > 1e-6) {
                const double take = std::min(room, left);
                used += take;
                left -= take;
            }
            if (left <= 1e-6)
                return std::max(start + static_cast<Tick>(used * (1.0 / rate_) + 0.5),
                                t + static_cast<Tick>(static_cast<double>(bytes) * (1.0 / rate_) + 0.5));
        }
    }
    Tick busy() const { return static_cast<Tick>(static_cast<double>(bytes_) / rate_ + 0.5); }

private:
    double rate_, cap_;
    Tick len_;
    std::map<std::uint64_t, double> fill_;
    std::uint64_t oldest_ = 0, bytes_ = 0;
};

}  // namespace

// Random request streams -- saturating streams of equal pieces (the DMA case, the calendar's
// fast path), pieces larger than a bucket, zero bytes, requests far ahead and behind (temporal
// decoupling), the kernel's time moving on -- on rates and bucket lengths the model was not
// tuned for: every answer equals the plain calendar's to the picosecond.
TEST(BandwidthCalendar, AnswersExactlyAsThePlainBucketByBucketCalendar) {
    std::mt19937_64 rng(20261124);
    auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    std::uint64_t requests = 0;
    for (int round = 0; round < 300; ++round) {
        const double rate = std::vector<double>{0.0375, 0.001, 0.5, 3.0, 0.0171, 1e-5}[pick(6)] * (0.5 + pick(1000) / 1000.0);
        const std::uint64_t piece = std::vector<std::uint64_t>{1024, 4096, 64, 1, 3000}[pick(5)];
        // A bucket carries from ~1/20 of a piece to ~20 pieces (the plain calendar scans
        // bucket by bucket: finer would only make it slow).
        const Tick bucket = 1 + static_cast<Tick>(static_cast<double>(piece) / rate * (0.05 + pick(2000) / 100.0));
        BandwidthCalendar cal(rate, bucket);
        PlainCalendar ref(rate, bucket);
        // Arrivals a little faster than the rate (saturation) or slower (gaps).
        const Tick gap = std::max<Tick>(1, static_cast<Tick>(static_cast<double>(piece) / rate * (0.5 + pick(100) / 100.0)));
        Tick t = pick(1'000'000), now = 0;
        for (int i = 0; i < 2000; ++i, ++requests) {
            std::uint64_t bytes = piece;
            Tick at = t;
            switch (pick(20)) {
                case 0: bytes = 1 + pick(20 * piece); break;       // now and then much larger
                case 1: bytes = 0; break;
                case 2: at = t + pick(50 * gap); break;            // far ahead
                case 3: at = at > now + gap ? at - pick(at - now) : at; break;  // behind, not before now
                case 4: now = std::max(now, at > 2 * gap ? at - 2 * gap : now); break;  // time moves on
                default: break;
            }
            const Tick got = cal.reserve(at, bytes, now), want = ref.reserve(at, bytes, now);
            ASSERT_EQ(got, want) << "round " << round << " request " << i << ": rate " << rate << " bytes/ps, bucket "
                                 << bucket << " ps, " << bytes << " bytes at " << at << " (now " << now << ")";
            t += gap;
        }
        EXPECT_EQ(cal.busy(), ref.busy());
    }
    EXPECT_EQ(requests, 600'000u);
}

// ChannelGroups shares one calendar between channels whose calendars are the same: against the
// reference of one BandwidthCalendar per channel (what HbmController had), on random streams of
// requests over runs of neighbouring channels -- aligned runs (a DMA chunk on its channels),
// runs straddling groups, single channels with partial pieces (which split groups), the kernel's
// time moving on and idle stretches (after which split groups may join again) -- every channel's
// answer and its busy time are the reference's to the picosecond. Channel counts and rates the
// shipped platforms do not use. It also requires that most answers came from a shared calendar
// although the partial pieces split groups all along (so groups were joined again).
TEST(ChannelGroups, AnswersAsOneCalendarPerChannel) {
    std::mt19937_64 rng(20261128);
    auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    std::uint64_t shared = 0, requests = 0;
    for (int round = 0; round < 60; ++round) {
        const unsigned nch = std::vector<unsigned>{32, 7, 96, 1, 64}[pick(5)];
        const double rate = std::vector<double>{0.0375, 0.0256, 0.05}[pick(3)] * (0.5 + pick(1000) / 1000.0);
        const Tick bucket = std::vector<Tick>{64'000, 16'000, 100'000}[pick(3)];
        ChannelGroups groups(nch, rate, bucket);
        std::vector<BandwidthCalendar> ref(nch, BandwidthCalendar(rate, bucket));
        Tick t = 0, now = 0;
        for (int i = 0; i < 4000; ++i, ++requests) {
            unsigned lo = static_cast<unsigned>(pick(nch)), n = 1;
            std::uint64_t bytes = 1024;
            switch (pick(10)) {
                case 0: bytes = 1 + pick(1024); break;                                   // a partial piece
                case 1: n = 1 + static_cast<unsigned>(pick(nch - lo)); break;           // any run
                case 2: t += 2'000'000 + pick(5'000'000); now = t - pick(1'000'000); break;  // idle, time moves on
                default: lo = lo / 4 * 4; n = std::min(4u, nch - lo); break;           // a 4 KiB chunk's run
            }
            if (pick(4) == 0) now = std::max(now, t > 1'000'000 ? t - 1'000'000 : now);
            const Tick at = t + pick(30'000);
            unsigned next = lo;
            groups.reserve(lo, n, at, bytes, now, [&](unsigned first, unsigned last, Tick moved) {
                ASSERT_EQ(first, next) << "groups in channel order";
                for (unsigned c = first; c < last; ++c)
                    ASSERT_EQ(moved, ref[c].reserve(at, bytes, now)) << "round " << round << " request " << i << " channel " << c;
                next = last;
                shared += last - first - 1;
            });
            ASSERT_EQ(next, lo + n);
            t += 3'000;
        }
        for (unsigned c = 0; c < nch; ++c) EXPECT_EQ(groups.busy(c), ref[c].busy()) << "channel " << c;
    }
    EXPECT_EQ(requests, 240'000u);
    EXPECT_GT(shared, requests / 2);  // most channel answers came from a shared calendar
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
