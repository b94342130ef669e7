// The DRAM protocol model (models/dram.h, HbmController model: dram) against closed forms of
// its own timing rules: each test says which rule and why the figure follows from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "models/dram.h"
#include "models/sim_time.h"
#include "tests/sim_fixture.h"
#include "traces/gen/emit.h"
#include "traces/trace_writer.h"

using namespace xpu;
using namespace xpu::test;

namespace {

DramParams params(const std::string& standard = "HBM2", const std::string& policy = "open", bool refresh = false) {
    DramParams p;
    p.standard = standard;
    p.page_policy = policy;
    p.refresh = refresh;
    return p;
}

// Bytes of one row of one pseudo-channel, and the stride that stays in one pseudo-channel and
// bank but changes the row (RoBaRaCoCh: Ch lowest, then Co, Ba, Ro).
struct Geometry {
    std::uint64_t acc, pcs, row_bytes, bank_stride, row_stride;
};
Geometry geometry(const DramTiming& t, unsigned channels) {
    Geometry g;
    g.acc = t.access_bytes;
    g.pcs = std::uint64_t(channels) * t.pseudo_channels;
    g.row_bytes = t.columns * g.acc * g.pcs;  // one row in every pseudo-channel
    g.bank_stride = g.row_bytes;
    g.row_stride = g.row_bytes * t.bank_groups * t.banks_per_group;
    return g;
}

}  // namespace

// Low-load latency, one access at a time on an idle device: a closed bank costs ACT then
// RD (tRCD + tCL + tBL); a hit on the open row tCL + tBL; another row of that bank PRE, ACT, RD
// (tRP + tRCD + tCL + tBL, the PRE no earlier than tRAS after the ACT).
TEST(Dram, LowLoadLatencyIsTheCommandSequence) {
    for (const char* std : {"HBM2", "HBM2E", "HBM3"}) {
        DramModel m(params(std), 8);
        const DramTiming& t = dram_timing(std);
        const Tick ck = m.tck();
        const Geometry g = geometry(t, 8);
        const Tick t0 = 1'000'000;
        EXPECT_EQ(m.access(0, false, t0, nullptr, nullptr) - t0, Tick(t.RCD + t.CL + t.BL) * ck) << std;
        const Tick t1 = 2'000'000;
        EXPECT_EQ(m.access(g.acc * g.pcs, false, t1, nullptr, nullptr) - t1, Tick(t.CL + t.BL) * ck) << std << " hit";
        const Tick t2 = 3'000'000;
        EXPECT_EQ(m.access(g.row_stride, false, t2, nullptr, nullptr) - t2, Tick(t.RP + t.RCD + t.CL + t.BL) * ck)
            << std << " conflict";
        EXPECT_EQ(m.stats().hits, 1u);
        EXPECT_EQ(m.stats().misses, 1u);
        EXPECT_EQ(m.stats().conflicts, 1u);
    }
}

// Streaming reads (sequential addresses, all offered at once): the data buses are the limit:
// one burst of access_bytes per tBL per pseudo-channel, so the achieved bandwidth approaches the
// peak (within the first activation and the row changes, which other banks overlap) and never
// exceeds it. Refresh off here: the next test takes it.
TEST(Dram, SequentialReadsRunAtThePeakAndNeverAbove) {
    for (const char* std : {"HBM2", "HBM2E", "HBM3"}) {
        DramModel m(params(std), 8);
        const std::uint64_t bytes = 8 << 20;
        Tick end = 0;
        for (std::uint64_t off = 0; off < bytes; off += m.access_bytes()) end = std::max(end, m.access(off, false, 0, nullptr, nullptr));
        const double gbps = static_cast<double>(bytes) / ticks_to_ns(end);
        EXPECT_LE(gbps, m.peak_gbps() * (1 + 1e-9)) << std;
        EXPECT_GE(gbps, m.peak_gbps() * 0.97) << std << ": " << gbps << " of " << m.peak_gbps();
    }
    DramModel hbm2(params("HBM2"), 8);
    EXPECT_DOUBLE_EQ(hbm2.peak_gbps(), 256.0);  // 16 pseudo-channels x 64 B / 4 ns
}

// Refresh: every tREFI a pseudo-channel stops for tRFC (all banks), so a stream loses at least
// tRFC / tREFI of its time; and no more than that plus the reopened rows.
TEST(Dram, RefreshCostsItsShareOfTime) {
    DramModel m(params("HBM2", "open", true), 8);
    const DramTiming& t = dram_timing("HBM2");
    const std::uint64_t bytes = 64 << 20;  // ~260 us at 256 GB/s: ~67 refreshes per pseudo-channel
    Tick end = 0;
    for (std::uint64_t off = 0; off < bytes; off += m.access_bytes()) end = std::max(end, m.access(off, false, 0, nullptr, nullptr));
    const double share = 1.0 - (static_cast<double>(bytes) / ticks_to_ns(end)) / m.peak_gbps();
    const double rfc = static_cast<double>(t.RFC) / t.REFI;  // 4.1%
    EXPECT_GE(share, rfc * 0.9) << share;
    EXPECT_LE(share, rfc * 1.5 + 0.01) << share;
    EXPECT_GT(m.stats().refreshes, 16u * 60);
}

// Random rows in one bank: every access is a conflict, so accesses are one row cycle apart:
// tRAS + tRP (tRC) at least, ACT to ACT.
TEST(Dram, ConflictsInOneBankAreOneRowCycleApart) {
    DramModel m(params("HBM2"), 8);
    const DramTiming& t = dram_timing("HBM2");
    const Geometry g = geometry(t, 8);
    Tick prev = 0, first = 0;
    const int n = 50;
    for (int i = 0; i < n; ++i) {
        const Tick e = m.access(std::uint64_t(i) * g.row_stride, false, 0, nullptr, nullptr);
        if (i == 0) first = e;
        EXPECT_GE(e - prev, i ? Tick(t.RAS + t.RP) * m.tck() : 0) << i;
        prev = e;
    }
    EXPECT_EQ(prev - first, Tick(n - 1) * Tick(t.RAS + t.RP) * m.tck());
    EXPECT_EQ(m.stats().conflicts, unsigned(n - 1));
}

// tFAW: no more than four activations in any tFAW window of a pseudo-channel, whatever the
// banks (here 16 rows in 16 different banks, one access each, all offered at once).
TEST(Dram, NoMoreThanFourActivationsPerFawWindow) {
    DramModel m(params("HBM2"), 1);
    const DramTiming& t = dram_timing("HBM2");
    const Geometry g = geometry(t, 1);
    std::vector<Tick> data;
    for (unsigned b = 0; b < 16; ++b) {
        Tick d = 0;
        unsigned pc = 0;
        m.access(b * g.bank_stride, false, 0, &pc, &d);
        ASSERT_EQ(pc, 0u);
        data.push_back(d);
    }
    // Each access's data comes tRCD + tCL after its ACT: ACT times are data - (tRCD + tCL).
    for (std::size_t i = 4; i < data.size(); ++i) EXPECT_GE(data[i] - data[i - 4], Tick(t.FAW) * m.tck()) << i;
}

// Closed page: every access activates (no hits, no conflicts); open page on a stream: hits.
TEST(Dram, PagePolicyDecidesHitsAndActivations) {
    DramModel closed(params("HBM2", "closed"), 8), open(params("HBM2", "open"), 8);
    for (std::uint64_t off = 0; off < (1 << 20); off += 64) {
        closed.access(off, false, 0, nullptr, nullptr);
        open.access(off, false, 0, nullptr, nullptr);
    }
    EXPECT_EQ(closed.stats().hits, 0u);
    EXPECT_EQ(closed.stats().conflicts, 0u);
    EXPECT_EQ(closed.stats().misses, closed.stats().accesses);
    EXPECT_GT(open.stats().hits, open.stats().accesses * 9 / 10);
}

// Write then read on one pseudo-channel: the read's command waits tWTR after the write's data.
TEST(Dram, ReadAfterWriteWaitsForTheTurnaround) {
    DramModel m(params("HBM2"), 1);
    const DramTiming& t = dram_timing("HBM2");
    const Tick w = m.access(0, true, 0, nullptr, nullptr);
    Tick d = 0;
    m.access(2 * 64, false, 0, nullptr, &d);  // the same pseudo-channel (1 channel, 2 pseudo-channels)
    EXPECT_GE(d, w + Tick(t.WTR_L + t.CL) * m.tck());
}

// The channel-XOR mapping spreads a power-of-two stride that RoBaRaCoCh puts on one
// pseudo-channel over all of them.
TEST(Dram, ChannelXorSpreadsAStrideOverThePseudoChannels) {
    DramParams x = params("HBM2");
    x.mapping = "RoBaRaCoCh-xor";
    DramModel plain(params("HBM2"), 8), xored(x, 8);
    const Geometry g = geometry(dram_timing("HBM2"), 8);
    std::set<unsigned> a, b;
    for (unsigned i = 0; i < 64; ++i) {
        unsigned pa = 0, pb = 0;
        plain.access(i * g.row_stride, false, 0, &pa, nullptr);
        xored.access(i * g.row_stride, false, 0, &pb, nullptr);
        a.insert(pa);
        b.insert(pb);
    }
    EXPECT_EQ(a.size(), 1u);
    EXPECT_EQ(b.size(), 16u);
}

// Through the platform: HbmController model: dram (HBM2: 32 channels x 2 pseudo-channels x 64 B
// per 4 ns = 1024 GB/s, below the DMA engine's 1200) on configs/xpu.yaml, a 4 MiB DMA HBM ->
// VMEM: never above the DRAM peak, and at least 80% of it (refresh on).
TEST(Dram, ALongDmaOnTheDramModelStaysUnderItsPeak) {
    const std::string t = write_trace("dma.bin", [](gen::Emitter& e) {
        e.dma(0, Space::Hbm, 0, Space::Vmem, 0, 4 << 20, 1);
        e.swait(1, Cond::Ge, 1);
    });
    auto run = simulate(t, {"chip.modules.hbm.model=dram", "chip.modules.hbm.standard=HBM2"}, "configs/xpu.yaml", true);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    const double ns = ticks_to_ns(run->rec.dmas[0].complete - run->rec.dmas[0].start);
    const double peak = 32 * 2 * 64 / 4.0;
    const double gbps = (4 << 20) / ns;
    EXPECT_LE(gbps, peak);
    EXPECT_GE(gbps, 0.8 * peak) << gbps;
}
