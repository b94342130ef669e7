// Timing checked against independent references. Each test says which reference and why it
// applies; none of the expected figures comes from the simulator itself.
#include <gtest/gtest.h>

#include <map>

#include "models/sim_time.h"
#include "tests/sim_fixture.h"
#include "traces/gen/gemm.h"
#include "traces/trace_writer.h"

using namespace xpu;
using namespace xpu::test;

namespace {

// F folds of one weight tile and one LHS stream of M rows each on mxu0.
std::string fold_trace(unsigned folds, unsigned m, unsigned k, unsigned n) {
    return write_trace("folds.bin", [&](gen::Emitter& e) {
        for (unsigned f = 0; f < folds; ++f) {
            e.mpush(0, gen::vreg(1 + f % 2), k, n, DType::Bf16);
            e.matmul(0, gen::mreg(0), gen::vreg(10), m, n, k, DType::Bf16);
        }
    });
}

struct Span {
    Tick first_start = ~Tick(0), last_complete = 0;
};
Span mxu_span(const Run& r) {
    Span s;
    for (const auto& i : r.rec.instructions) {
        if (unit_kind(i.in.op) != UnitKind::Matrix) continue;
        s.first_start = std::min(s.first_start, i.ev.issue);
        s.last_complete = std::max(s.last_complete, i.ev.complete);
    }
    return s;
}

}  // namespace

// Reference: the roofline compute bound. A GEMM of F FLOPs can never finish before
// F / (MXUs x 2 x rows x cols x clock); a compute-bound one (4096^3: arithmetic intensity far
// above the HBM ridge point) should get within 5% of it with double buffering.
TEST(TimingReference, ComputeBoundGemmWithinFivePercentOfMatrixPeak) {
    gen::GemmParams p;
    p.m = p.n = p.k = 4096;
    auto run = simulate(gemm_trace("gemm.bin", p).path, {}, "configs/xpu.yaml", false);
    const double flops = static_cast<double>(gen::gemm_expected(p).flops);
    // configs/xpu.yaml: 8 MXUs of 128 x 128 (checked here, so the bound cannot drift silently).
    const double mxus = 8, rows = 128, cols = 128;
    std::size_t mxu_modules = 0;
    for (const auto& m : run->cfg.modules) mxu_modules += m.type == "MatrixUnit";
    ASSERT_EQ(mxu_modules, 8u);
    ASSERT_EQ(p.mxus, 8u);
    const double peak_per_ns = mxus * 2 * rows * cols * 1000.0 / static_cast<double>(cycle_of(*run));
    const double bound_ns = flops / peak_per_ns;
    ASSERT_TRUE(run->result.completed);
    EXPECT_GE(run->result.simulated_ns, bound_ns);
    EXPECT_LE(run->result.simulated_ns, bound_ns * 1.05) << "simulated " << run->result.simulated_ns << " ns, bound " << bound_ns;
    EXPECT_DOUBLE_EQ(run->result.flops, flops);
}

// Reference: the classic fold model of a weight-stationary systolic array (as in SCALE-Sim):
// without weight double buffering each fold loads R weight rows (R cycles), then streams M
// rows and drains in M + R + C - 2 cycles, and folds do not overlap. Exact, in cycles.
TEST(TimingReference, MatrixUnitWithoutDoubleBufferMatchesFoldModel) {
    const unsigned folds = 6, m = 256, rows = 128, cols = 128;
    auto run = simulate(fold_trace(folds, m, rows, cols), {"chip.modules.core0.mxu0.double_buffer=false"});
    Span s = mxu_span(*run);
    const Tick cyc = cycle_of(*run);
    EXPECT_EQ(s.last_complete - s.first_start, Tick(folds) * (rows + (m + rows + cols - 2)) * cyc);
}

TEST(TimingReference, FoldModelHoldsForOtherArrayShapes) {
    const unsigned folds = 5, m = 100, rows = 32, cols = 64;
    auto run = simulate(fold_trace(folds, m, rows, cols),
                        {"chip.modules.core0.mxu0.double_buffer=false", "chip.modules.core0.mxu0.rows=32",
                         "chip.modules.core0.mxu0.cols=64"});
    Span s = mxu_span(*run);
    EXPECT_EQ(s.last_complete - s.first_start, Tick(folds) * (rows + (m + rows + cols - 2)) * cycle_of(*run));
}

// Reference: the same fold model with the weight load of fold f+1 hidden behind the stream of
// fold f (double buffering): folds start max(M, R) cycles apart, the last one still drains.
TEST(TimingReference, DoubleBufferedFoldsOverlapWeightLoads) {
    const unsigned folds = 6, m = 256, rows = 128, cols = 128;
    auto run = simulate(fold_trace(folds, m, rows, cols));
    Span s = mxu_span(*run);
    EXPECT_EQ(s.last_complete - s.first_start,
              (rows + Tick(folds - 1) * std::max(m, rows) + (m + rows + cols - 2)) * cycle_of(*run));
}

// Reference: bandwidth is a hard ceiling (conservation: bytes moved / time <= peak), and a
// long sequential stream with enough requests in flight (64 x 4 KiB > bandwidth x latency,
// Little's law) reaches at least 90% of it.
TEST(TimingReference, LargeSequentialDmaNearButNeverAboveHbmPeak) {
    const std::uint64_t bytes = 16ull << 20;
    auto run = simulate(write_trace("dma.bin", [&](gen::Emitter& e) {
        e.dma(0, Space::Hbm, 0, Space::Vmem, 0, bytes, 1);
        e.swait(1, Cond::Ge, 1);
    }));
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    const auto& d = run->rec.dmas[0];
    const double gbps = static_cast<double>(bytes) / ticks_to_ns(d.complete - d.issue);
    const double peak = run->result.hbm_peak_gbps;
    EXPECT_DOUBLE_EQ(peak, 32 * 37.5);
    EXPECT_LE(gbps, peak);
    EXPECT_GE(gbps, 0.9 * peak) << gbps << " GB/s";
    EXPECT_LE(run->result.achieved_gbps(), peak);
}

// Reference: conservation of bytes. Every byte a DMA moves is read at its source and written
// at its destination; every vld/vst byte is a VMEM read/write. Counted independently by the
// DMA engines, the HBM controller and VMEM.
TEST(TimingReference, DmaBytesEqualBytesCountedAtHbmAndVmem) {
    gen::GemmParams p;
    p.m = 1024;
    p.n = 640;  // a partial N block
    p.k = 384;
    auto run = simulate(gemm_trace("gemm-small.bin", p).path);
    std::uint64_t from_hbm = 0, to_hbm = 0, to_vmem = 0, from_vmem = 0, vld = 0, vst = 0;
    for (const auto& i : run->rec.instructions) {
        if (i.in.op == Opcode::Dma) {
            (i.in.mem_src.space == Space::Hbm ? from_hbm : from_vmem) += i.in.bytes;
            (i.in.mem_dst.space == Space::Hbm ? to_hbm : to_vmem) += i.in.bytes;
        }
        if (i.in.op == Opcode::VLoad) vld += i.in.bytes;
        if (i.in.op == Opcode::VStore) vst += i.in.bytes;
    }
    std::uint64_t dma_total = 0;
    for (const auto& d : run->rec.dmas) dma_total += d.bytes;
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_target;  // read, written
    for (const auto& m : run->rec.mems) (m.write ? by_target[m.target].second : by_target[m.target].first) += m.bytes;
    EXPECT_EQ(dma_total, from_hbm + from_vmem);
    EXPECT_EQ(run->result.hbm_bytes_read, from_hbm);
    EXPECT_EQ(run->result.hbm_bytes_written, to_hbm);
    EXPECT_EQ(by_target["xpu.chip0.hbm"].first, from_hbm);
    EXPECT_EQ(by_target["xpu.chip0.core0.vmem"].second, to_vmem + vst);
    EXPECT_EQ(by_target["xpu.chip0.core0.vmem"].first, from_vmem + vld);
    auto x = gen::gemm_expected(p);
    EXPECT_EQ(from_hbm, x.hbm_bytes_read);
    EXPECT_EQ(to_hbm, x.hbm_bytes_written);
}

// Reference: program semantics. No instruction may issue before every earlier writer of
// each register it reads has completed (RAW), checked over a whole GEMM's recorded events.
TEST(TimingReference, NoInstructionIssuesBeforeItsProducersComplete) {
    gen::GemmParams p;
    p.m = 512;
    p.n = 512;
    p.k = 512;
    auto run = simulate(gemm_trace("gemm-raw.bin", p).path);
    std::map<unsigned, Tick> written;  // register -> latest completion of a writer so far
    std::size_t checked = 0;
    ASSERT_GT(run->rec.instructions.size(), 1000u);
    for (const auto& i : run->rec.instructions) {
        const Field srcs[3] = {kSrc0, kSrc1, kSrc2};
        for (int k = 0; k < 3; ++k)
            if (i.in.has(srcs[k])) {
                auto it = written.find(i.in.src[k]);
                if (it == written.end()) continue;
                ASSERT_GE(i.ev.issue, it->second) << "instruction " << i.ev.index;
                ++checked;
            }
        if (i.in.has(kDst)) written[i.in.dst] = std::max(written[i.in.dst], i.ev.complete);
    }
    EXPECT_GT(checked, 1000u);
}

// Reference: sync semantics. A wait completes only at a time when its flag, as changed by
// the recorded flag events up to that time, satisfies the condition.
TEST(TimingReference, SyncWaitNeverCompletesBeforeItsConditionHolds) {
    gen::GemmParams p;
    p.m = 1024;
    p.n = 512;
    p.k = 1024;
    p.tile_m = 256;  // 4 row blocks x 8 K steps: many DMA waits and C write-backs
    auto run = simulate(gemm_trace("gemm-sync.bin", p).path);
    std::size_t waits = 0;
    for (const auto& i : run->rec.instructions) {
        if (i.in.op != Opcode::SWait) continue;
        std::int64_t v = 0;
        for (const auto& f : run->rec.flags)
            if (f.flag == i.in.flag && f.time <= i.ev.issue) v = f.new_value;
        EXPECT_TRUE(cond_holds(i.in.cond, v, i.in.value))
            << "swait #" << i.ev.index << " on flag " << i.in.flag << " done at " << i.ev.issue << " with value " << v;
        ++waits;
    }
    EXPECT_GT(waits, 10u);
}

// Every systolic dataflow against SCALE-Sim's fold model (scalesim/compute/systolic_compute_
// {ws,os,is}.py), double buffering off, on a 32-row x 16-column array (not square, so that a
// swapped R and C shows). For a GEMM of M x K x N (SCALE-Sim's Layer, M, N, K):
//   ws: ceil(K/R) x ceil(N/C) folds of M + 2R + C - 2 cycles (weights held; M rows streamed)
//   os: ceil(M/R) x ceil(N/C) folds of K + R + C - 2 (outputs held; K streamed)
//   is: ceil(K/R) x ceil(M/C) folds of N + 2R + C - 2 (inputs held; N streamed)
// The trace is tiled as a compiler would for each dataflow (ws: k <= R x n <= C weight tiles;
// os: n <= C columns with the whole K; is: k <= R with the whole N), one push and one matmul of
// all M rows per tile, and the MXU's span (first push issued to last matmul complete) must equal
// the closed form to the cycle. The `scalesim` column is SCALE-Sim v2's "Total Cycles" of a real
// run of these twelve shapes (scale.py -i gemm, ArrayHeight 32, ArrayWidth 16, Bandwidth 1000,
// no stalls; run outside this repository, docs/validation.md): it is the closed form minus one
// on all 36 rows (SCALE-Sim counts its last cycle from 0).
namespace {

struct FlowCase {
    const char* name;
    unsigned m, n, k;
    std::uint64_t scalesim_ws, scalesim_os, scalesim_is;
};

const FlowCase kFlowCases[] = {
    {"s1", 64, 16, 32, 141, 155, 375},      {"s2", 100, 16, 32, 177, 311, 657},   {"s3", 33, 40, 70, 998, 695, 1061},
    {"s4", 128, 48, 96, 1853, 1703, 3023},  {"s5", 7, 9, 5, 84, 50, 86},          {"s6", 256, 16, 64, 667, 879, 3007},
    {"s7", 50, 100, 20, 895, 923, 711},     {"s8", 16, 64, 128, 1503, 695, 567},  {"s9", 90, 30, 45, 671, 545, 1295},
    {"s10", 1, 50, 33, 631, 315, 255},      {"s11", 200, 20, 10, 555, 783, 1273}, {"s12", 64, 33, 65, 1277, 665, 1331},
};

struct Flow {
    std::string dataflow;
    FlowCase c;
};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

class SystolicDataflow : public ::testing::TestWithParam<Flow> {};

}  // namespace

TEST_P(SystolicDataflow, MatchesScaleSimFoldModel) {
    const std::string df = GetParam().dataflow;
    const FlowCase& c = GetParam().c;
    const unsigned R = 32, C = 16;
    const std::string t = write_trace("flow.bin", [&](gen::Emitter& e) {
        unsigned i = 0;
        auto tile = [&](unsigned k, unsigned n) {
            e.mpush(0, gen::vreg(1 + i++ % 2), k, n, DType::Bf16);
            e.matmul(0, gen::mreg(0), gen::vreg(10), c.m, n, k, DType::Bf16);
        };
        if (df == "ws") {
            for (unsigned k0 = 0; k0 < c.k; k0 += R)
                for (unsigned n0 = 0; n0 < c.n; n0 += C) tile(std::min(R, c.k - k0), std::min(C, c.n - n0));
        } else if (df == "os") {
            for (unsigned n0 = 0; n0 < c.n; n0 += C) tile(c.k, std::min(C, c.n - n0));
        } else {
            for (unsigned k0 = 0; k0 < c.k; k0 += R) tile(std::min(R, c.k - k0), c.n);
        }
    });
    auto run = simulate(t, {"chip.modules.core0.mxu0.rows=32", "chip.modules.core0.mxu0.cols=16",
                            "chip.modules.core0.mxu0.dataflow=" + df, "chip.modules.core0.mxu0.double_buffer=false"});
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    std::uint64_t folds = 0, per_fold = 0, scalesim = 0;
    if (df == "ws") {
        folds = ceil_div(c.k, R) * ceil_div(c.n, C);
        per_fold = c.m + 2 * R + C - 2;
        scalesim = c.scalesim_ws;
    } else if (df == "os") {
        folds = ceil_div(c.m, R) * ceil_div(c.n, C);
        per_fold = c.k + R + C - 2;
        scalesim = c.scalesim_os;
    } else {
        folds = ceil_div(c.k, R) * ceil_div(c.m, C);
        per_fold = c.n + 2 * R + C - 2;
        scalesim = c.scalesim_is;
    }
    ASSERT_EQ(folds * per_fold, scalesim + 1) << "the closed form is SCALE-Sim's run plus its last cycle";
    const Span s = mxu_span(*run);
    EXPECT_EQ(s.last_complete - s.first_start, Tick(folds * per_fold) * cycle_of(*run))
        << df << " " << c.name << ": " << (s.last_complete - s.first_start) / cycle_of(*run) << " cycles, closed form "
        << folds * per_fold;
}

static std::vector<Flow> flow_cases() {
    std::vector<Flow> v;
    for (const char* df : {"ws", "os", "is"})
        for (const auto& c : kFlowCases) v.push_back({df, c});
    return v;
}

INSTANTIATE_TEST_SUITE_P(TimingReference, SystolicDataflow, ::testing::ValuesIn(flow_cases()),
                         [](const auto& info) { return info.param.dataflow + "_" + info.param.c.name; });

// A dataflow is a choice: anything else is an error naming the key.
TEST(TimingReference, UnknownDataflowIsRejected) {
    EXPECT_THROW(platform::load_platform(source_path("configs/xpu.yaml"), {"chip.modules.core0.mxu0.dataflow=rs"}),
                 platform::ConfigError);
}

// With double buffering, os and is overlap a fold's drain with the next fold's stream: folds
// start every k (os) or max(n, R) (is) cycles and the last one drains (models/matrix_unit.h).
// One matmul of M = 100 rows on a 32 x 16 array: os 4 folds of k = 40 (is: the next test).
TEST(TimingReference, DoubleBufferedOsOverlapsFolds) {
    const std::string t = write_trace("db.bin", [&](gen::Emitter& e) {
        e.mpush(0, gen::vreg(1), 40, 12, DType::Bf16);
        e.matmul(0, gen::mreg(0), gen::vreg(10), 100, 12, 40, DType::Bf16);
    });
    auto run = simulate(t, {"chip.modules.core0.mxu0.rows=32", "chip.modules.core0.mxu0.cols=16",
                            "chip.modules.core0.mxu0.dataflow=os"});
    const Span s = mxu_span(*run);
    EXPECT_EQ(s.last_complete - s.first_start, Tick(3 * 40 + (40 + 32 + 16 - 2)) * cycle_of(*run));
}

TEST(TimingReference, DoubleBufferedIsLoadsTheNextInputsWhileStreaming) {
    const std::string t = write_trace("db.bin", [&](gen::Emitter& e) {
        e.mpush(0, gen::vreg(1), 30, 12, DType::Bf16);
        e.matmul(0, gen::mreg(0), gen::vreg(10), 100, 12, 30, DType::Bf16);
    });
    auto run = simulate(t, {"chip.modules.core0.mxu0.rows=32", "chip.modules.core0.mxu0.cols=16",
                            "chip.modules.core0.mxu0.dataflow=is"});
    const Span s = mxu_span(*run);
    // ceil(100 / 16) = 7 folds, max(n = 12, R = 32) = 32 apart, the first loading its inputs (32)
    // first: the last starts streaming at 32 + 6 x 32 and takes 12 + 32 + 16 - 2 more.
    EXPECT_EQ(s.last_complete - s.first_start, Tick(6 * 32 + (32 + 12 + 32 + 16 - 2)) * cycle_of(*run));
}
