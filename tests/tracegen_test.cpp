// xpu_tracegen's workloads: every trace validates, FLOPs and HBM bytes equal the analytic
// counts of the documented lowering (computed here from the model's dimensions, not by the
// generator), and the simulated time of a memory-bound decode and a compute-bound prefill
// GEMM sits just above the roofline bound that applies to each.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "models/sim_time.h"
#include "tests/sim_fixture.h"
#include "traces/gen/collective.h"
#include "traces/gen/gemm.h"
#include "traces/gen/transformer.h"
#include "traces/trace_reader.h"
#include "traces/trace_validate.h"

using namespace xpu;
using namespace xpu::test;

namespace {

// The tiling of docs/tracegen.md, as configs/xpu.yaml is built: 8 MXUs of 128, 1024-row blocks.
constexpr std::uint64_t kDim = 128, kMxus = 8, kTileM = 1024, kBlockCols = kMxus * kDim, kEb = 2;
std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

struct Traffic {
    std::uint64_t flops = 0, read = 0, written = 0;
    // A wide matmul: A once per column block, B once per row block, C once.
    void matmul(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
        flops += 2 * m * n * k;
        read += m * k * kEb * cdiv(n, kBlockCols) + k * n * kEb * cdiv(m, kTileM);
        written += m * n * kEb;
    }
    // A narrow matmul (n <= 128) of a batch: each MXU its own problem: A once, B once per row block.
    void narrow(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
        flops += 2 * m * n * k;
        read += m * k * kEb + k * n * kEb * cdiv(m, kTileM);
        written += m * n * kEb;
    }
    void vector(std::uint64_t elements, unsigned inputs) {
        read += inputs * elements * kEb;
        written += elements * kEb;
    }
    void copy(std::uint64_t bytes) {
        read += bytes;
        written += bytes;
    }
};

// Counts of one decode layer (batch B, S cached tokens), straight from the model's shape.
Traffic decode_layer(const gen::ModelShape& m, std::uint64_t B, std::uint64_t S) {
    const std::uint64_t hd = m.hidden / m.heads, group = m.heads / m.kv_heads, Sk = S + 1, h = m.hidden;
    Traffic t;
    t.vector(B * h, 1);                                   // attention RMSNorm
    t.matmul(B, (m.heads + 2 * m.kv_heads) * hd, h);      // QKV projection
    t.vector(B * (m.heads + m.kv_heads) * hd, 1);         // RoPE on q and k
    t.copy(B * 2 * m.kv_heads * hd * kEb);                // append k, v to the cache
    for (std::uint64_t i = 0; i < B * m.kv_heads; ++i) t.matmul(group, Sk, hd);  // Q K^T
    t.vector(B * m.heads * Sk, 1);                        // softmax
    for (std::uint64_t i = 0; i < B * m.kv_heads; ++i) t.narrow(group, hd, Sk);  // P V
    t.matmul(B, h, m.heads * hd);                         // output projection
    t.vector(B * h, 2);                                   // residual
    t.vector(B * h, 1);                                   // MLP RMSNorm
    t.matmul(B, m.ffn, h);                                // gate
    t.matmul(B, m.ffn, h);                                // up
    t.vector(B * m.ffn, 2);                               // SiLU(gate) * up
    t.matmul(B, h, m.ffn);                                // down
    t.vector(B * h, 2);                                   // residual
    return t;
}

void expect_valid(const std::string& path) {
    auto problems = trace::validate(path);
    std::string all;
    for (const auto& p : problems) all += p.message + "\n";
    EXPECT_TRUE(problems.empty()) << path << ":\n" << all;
}

}  // namespace

TEST(Tracegen, GemmCountsMatchTheAnalyticTiling) {
    for (auto [m, n, k] : {std::tuple{1024ull, 1024ull, 1024ull}, std::tuple{1000ull, 1500ull, 700ull},
                           std::tuple{3000ull, 256ull, 4096ull}}) {
        gen::GemmParams p;
        p.m = m;
        p.n = n;
        p.k = k;
        GemmTrace g = gemm_trace("g.bin", p);
        expect_valid(g.path);
        Traffic t;
        t.matmul(m, n, k);
        EXPECT_EQ(g.flops, t.flops) << m << "x" << n << "x" << k;
        EXPECT_EQ(g.hbm_read, t.read) << m << "x" << n << "x" << k;
        EXPECT_EQ(g.hbm_written, t.written) << m << "x" << n << "x" << k;
    }
}

TEST(Tracegen, DecodeLayerCountsMatchWeightsKvCacheAndActivations) {
    gen::TransformerParams p;
    ASSERT_TRUE(gen::model_preset("llama2-7b", p.model));
    p.decode = true;
    p.batch = 2;
    p.seq = 300;
    p.layers = 1;
    gen::TransformerSummary s;
    std::string path = transformer_trace("decode.bin", p, &s);
    expect_valid(path);
    Traffic t = decode_layer(p.model, 2, 300);
    EXPECT_EQ(s.flops, t.flops);
    EXPECT_EQ(s.hbm_bytes_read, t.read);
    EXPECT_EQ(s.hbm_bytes_written, t.written);
    // The weights dominate: every one of the layer's ~202 M parameters is read exactly once.
    const std::uint64_t weights = (4096ull * 3 * 4096 + 4096ull * 4096 + 3ull * 4096 * 11008) * 2;
    EXPECT_GT(s.hbm_bytes_read, weights);
    EXPECT_LT(s.hbm_bytes_read, weights + (weights / 10));
}

TEST(Tracegen, EveryWorkloadAndPlantedVariantValidates) {
    gen::TransformerParams t;
    t.model = {512, 8, 2, 1024, 2};  // custom, grouped-query attention
    t.batch = 2;
    t.seq = 64;
    for (bool decode : {true, false})
        for (unsigned tp : {1u, 2u}) {
            t.decode = decode;
            t.tp = tp;
            expect_valid(transformer_trace("t.bin", t));
        }
    gen::GemmParams g;
    g.m = 512;
    g.n = 1024;
    g.k = 512;
    for (int planted = 0; planted < 4; ++planted) {
        gen::GemmParams q = g;
        q.double_buffer = planted != 0;
        q.late_dma = planted == 1;
        q.false_dep = planted == 2;
        q.bad_order = planted == 3;
        expect_valid(gemm_trace("p.bin", q).path);
    }
    for (std::string op : {"all-gather", "reduce-scatter", "all-reduce"})
        for (std::string algo : {"ring", "bidir-ring", "torus2d"}) {
            gen::CollectiveParams c;
            c.op = op;
            c.algo = algo;
            c.chips = 4;
            c.dims_x = c.dims_y = 2;
            c.bytes = 1 << 20;
            c.chunks = 2;
            std::string path = temp_path("c.bin");
            trace::TraceWriter w(path);
            auto s = gen::emit_collective(w, c);  // (the summary is checked below)
            w.close();
            expect_valid(path);
            EXPECT_EQ(trace::TraceFile::open(path).streams().size(), 4u);
            // Ring algorithms move (N-1)/N of the data per phase off each chip.
            if (algo != "torus2d") {
                const std::uint64_t phase = 4 * (1u << 20) / 4 * 3;
                EXPECT_EQ(s.remote_bytes, op == "all-reduce" ? 2 * phase : phase) << op << " " << algo;
            }
        }
}

TEST(Tracegen, OutputIsDeterministic) {
    gen::TransformerParams t;
    t.model = {512, 8, 8, 1024, 1};
    t.batch = 1;
    t.seq = 128;
    std::string a = file_bytes(transformer_trace("a.bin", t)), b = file_bytes(transformer_trace("b.bin", t));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, b);
}

// Reference: the HBM roofline. Decode of one token streams every weight and the KV cache from
// HBM once and does ~2 FLOPs per weight byte, far below the ridge point, so it is memory-bound:
// it cannot beat bytes / peak bandwidth, and should stay within 15% of it.
TEST(TracegenTiming, Llama2_7bDecodeWithinFifteenPercentOfTheHbmBound) {
    gen::TransformerParams p;
    ASSERT_TRUE(gen::model_preset("llama2-7b", p.model));
    p.decode = true;
    p.batch = 1;
    p.seq = 2048;
    gen::TransformerSummary s;
    auto run = simulate(transformer_trace("llama-decode.bin", p, &s), {}, "configs/xpu.yaml", false);
    ASSERT_TRUE(run->result.completed);
    const double peak_gbps = 32 * 37.5;  // configs/xpu.yaml: 32 channels x 37.5 GB/s
    ASSERT_DOUBLE_EQ(run->result.hbm_peak_gbps, peak_gbps);
    const double bound_ns = static_cast<double>(s.hbm_bytes_read + s.hbm_bytes_written) / peak_gbps;
    EXPECT_GE(run->result.simulated_ns, bound_ns);
    EXPECT_LE(run->result.simulated_ns, 1.15 * bound_ns) << run->result.simulated_ns << " ns vs bound " << bound_ns;
}

// Reference: the compute roofline. The MLP gate projection of a 2048-token llama2-7b prefill
// (2048 x 11008 x 4096) has ~1000 FLOPs per HBM byte, far above the ridge point: it cannot
// beat FLOPs / peak, and should stay within 10% of it.
TEST(TracegenTiming, LargePrefillGemmWithinTenPercentOfTheComputeBound) {
    gen::GemmParams p;
    p.m = 2048;
    p.n = 11008;
    p.k = 4096;
    auto run = simulate(gemm_trace("prefill.bin", p).path, {}, "configs/xpu.yaml", false);
    const double peak = 8 * 2.0 * 128 * 128 / 952.0 * 1e12;  // 8 MXUs x 2 x 128 x 128 per 952 ps cycle
    const double bound_ns = 2.0 * 2048 * 11008 * 4096 / peak * 1e9;
    EXPECT_GE(run->result.simulated_ns, bound_ns);
    EXPECT_LE(run->result.simulated_ns, 1.10 * bound_ns) << run->result.simulated_ns << " ns vs bound " << bound_ns;
}
