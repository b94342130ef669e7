// The ONNX front end and the SCALE-Sim reader of xpu_tracegen (no SystemC): small graphs built
// here with ONNX's protobuf API, lowered, and the trace read back. References are closed forms
// computed in the test from the graph's dimensions (2 x MACs of a convolution: N Ho Wo O C/G kh kw).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

#include "tests/onnx_graph.h"
#include "traces/gen/emit.h"
#include "traces/gen/scalesim.h"
#include "traces/onnx/onnx_frontend.h"
#include "traces/trace_reader.h"
#include "traces/trace_validate.h"
#include "traces/trace_writer.h"

using namespace xpu;
using xpu::test::Graph;

namespace {

std::string tmp(const std::string& name) { return xpu::test::onnx_tmp(name, "onnxfe_"); }

struct Lowered {
    onnxfe::OnnxSummary sum;
    std::uint64_t flops_in_trace = 0;
    std::map<std::string, unsigned> ann;  // annotation -> instructions
    unsigned max_k = 0, max_n = 0;
    std::vector<std::uint64_t> chip_flops;  // per stream (chip)
    unsigned remote_dmas = 0;
};

Lowered lower(const std::string& model, onnxfe::OnnxParams p = {}) {
    p.path = model;
    const std::string out = tmp("t.bin");
    Lowered r;
    {
        trace::TraceWriter w(out);
        r.sum = onnxfe::emit_onnx(w, p);
        w.close();
    }
    EXPECT_TRUE(trace::validate(out).empty());
    const auto tf = trace::TraceFile::open(out);
    for (std::size_t stream = 0; stream < tf.streams().size(); ++stream) {
        trace::StreamReader s(tf, stream);
        Instruction in;
        std::uint64_t flops = 0;
        while (s.read(&in, 1)) {
            if (in.op == Opcode::MatMul) {
                flops += 2ull * in.m * in.n * in.k;
                r.max_k = std::max(r.max_k, in.k);
                r.max_n = std::max(r.max_n, in.n);
            }
            if (in.op == Opcode::Dma && in.mem_dst.chip != kLocalChip) ++r.remote_dmas;
            if (in.has(kAnn)) ++r.ann[tf.strings().at(in.ann)];
        }
        r.flops_in_trace += flops;
        r.chip_flops.push_back(flops);
    }
    return r;
}

bool has_prefix(const std::map<std::string, unsigned>& ann, const std::string& p) {
    for (const auto& kv : ann)
        if (kv.first.rfind(p, 0) == 0) return true;
    return false;
}

// x[N,3,32,32] -> Conv 3x3 s1 p1 (16) -> BatchNormalization -> Relu -> Conv 3x3 s2 depthwise
// (16 groups) -> Conv 1x1 (32) -> GlobalAveragePool -> Flatten -> Gemm (32 -> 10).
Graph small_cnn() {
    Graph G;
    G.input("x", {1, 3, 32, 32}, "batch");
    G.input("w1", {16, 3, 3, 3});
    G.input("w2", {16, 1, 3, 3});
    G.input("w3", {32, 16, 1, 1});
    G.input("fc", {10, 32});
    for (const char* bn : {"s", "b", "mean", "var"}) G.input(bn, {16});
    auto& c1 = G.node("Conv", "/stem/conv", {"x", "w1"}, {"c1"});
    Graph::ints(c1, "kernel_shape", {3, 3});
    Graph::ints(c1, "pads", {1, 1, 1, 1});
    G.node("BatchNormalization", "/stem/bn", {"c1", "s", "b", "mean", "var"}, {"bn"});
    G.node("Relu", "/stem/relu", {"bn"}, {"r"});
    auto& c2 = G.node("Conv", "/dw/conv", {"r", "w2"}, {"c2"});
    Graph::ints(c2, "kernel_shape", {3, 3});
    Graph::ints(c2, "pads", {1, 1, 1, 1});
    Graph::ints(c2, "strides", {2, 2});
    Graph::integer(c2, "group", 16);
    G.node("Conv", "/pw/conv", {"c2", "w3"}, {"c3"});
    G.node("GlobalAveragePool", "/pool", {"c3"}, {"p"});
    G.node("Flatten", "/flat", {"p"}, {"f"});
    auto& fc = G.node("Gemm", "/fc", {"f", "fc"}, {"y"});
    Graph::integer(fc, "transB", 1);
    G.output("y");
    return G;
}

// 2 x MACs: the closed form of each layer, from the dimensions above.
std::uint64_t small_cnn_flops(std::uint64_t n) {
    const std::uint64_t conv1 = n * 32 * 32 * 16 * 3 * 3 * 3;   // 3x3, pad 1: 32x32 out
    const std::uint64_t dw = n * 16 * 16 * 16 * 1 * 3 * 3;      // stride 2: 16x16 out, 1 input channel per group
    const std::uint64_t pw = n * 16 * 16 * 32 * 16;
    const std::uint64_t fc = n * 10 * 32;
    return 2 * (conv1 + dw + pw + fc);
}

}  // namespace

TEST(OnnxFrontend, FlopsAreTheGraphsMacsWhateverTheTiling) {
    Graph G = small_cnn();
    const std::string m = G.save("cnn");
    for (std::uint64_t batch : {1, 3}) {
        onnxfe::OnnxParams p;
        p.batch = batch;
        Lowered r = lower(m, p);
        EXPECT_EQ(r.sum.flops, small_cnn_flops(batch)) << "batch " << batch;
        EXPECT_EQ(r.flops_in_trace, small_cnn_flops(batch));
        // Every instruction of the array stays within it.
        EXPECT_LE(r.max_k, 128u);
        EXPECT_LE(r.max_n, 128u);
    }
}

TEST(OnnxFrontend, EveryNodeIsAnnotatedAndBatchNormIsFolded) {
    Graph G = small_cnn();
    Lowered r = lower(G.save("cnn2"));
    for (const char* node : {"model/stem/conv/", "model/stem/relu/", "model/dw/conv/", "model/pw/conv/", "model/pool/", "model/fc/"})
        EXPECT_TRUE(has_prefix(r.ann, node)) << node;
    EXPECT_FALSE(has_prefix(r.ann, "model/stem/bn")) << "a BatchNormalization after a Conv is folded into it";
    std::map<std::string, std::string> how;
    for (const auto& n : r.sum.nodes) how[n.name] = n.how;
    EXPECT_EQ(how["stem/bn"], "folded");
    EXPECT_EQ(how["stem/conv"], "mxu");
    EXPECT_EQ(how["dw/conv"], "mxu");
    EXPECT_EQ(how["flat"], "free");
    for (const auto& kv : r.ann) EXPECT_EQ(kv.first.rfind("model/", 0), 0u) << kv.first;
}

TEST(OnnxFrontend, DepthwisePacksGroupsIntoOneTile) {
    // 16 groups of 9 taps: 14 fit one 128-row tile (126 rows), so two packed problems; the
    // matmuls record the useful shape (n = groups x 1 output, k = 9).
    Graph G = small_cnn();
    Lowered r = lower(G.save("cnn3"));
    unsigned dw_matmuls = 0;
    const auto tf = trace::TraceFile::open(tmp("t.bin"));
    trace::StreamReader s(tf, 0);
    Instruction in;
    while (s.read(&in, 1))
        if (in.op == Opcode::MatMul && tf.strings().at(in.ann) == "model/dw/conv/matmul") {
            ++dw_matmuls;
            EXPECT_EQ(in.k, 9u);
            EXPECT_TRUE(in.n == 14u || in.n == 2u) << in.n;
        }
    EXPECT_EQ(dw_matmuls, 2u * (16 * 16 / 8));  // 2 packed problems x 256 output rows / 8 rows a matmul
}

// x[2,16,64] -> LayerNormalization -> MatMul (64 -> 256) -> Relu -> MatMul (256 -> 64) -> Add x:
// a transformer's MLP.
Graph mlp() {
    Graph G;
    G.input("x", {2, 16, 64}, "batch");  // symbolic: the other inputs are weights (--batch 2 below)
    G.input("ln_s", {64});
    G.input("w1", {64, 256});
    G.input("w2", {256, 64});
    G.node("LayerNormalization", "/ln", {"x", "ln_s"}, {"n"});
    G.node("MatMul", "/fc1", {"n", "w1"}, {"h"});
    G.node("Relu", "/act", {"h"}, {"a"});
    G.node("MatMul", "/fc2", {"a", "w2"}, {"o"});
    G.node("Add", "/residual", {"x", "o"}, {"y"});
    G.output("y");
    return G;
}

TEST(OnnxFrontend, TensorParallelMlpIsAMegatronPair) {
    Graph G = mlp();
    const std::string m = G.save("mlp");
    const std::uint64_t macs = 2 * 16 * 64 * 256 * 2;  // rows x 64 x 256, twice
    for (unsigned tp : {1u, 2u, 4u, 3u}) {
        SCOPED_TRACE("tp " + std::to_string(tp));
        onnxfe::OnnxParams p;
        p.batch = 2;
        p.tp = tp;
        Lowered r = lower(m, p);
        EXPECT_EQ(r.sum.flops, 2 * macs);
        EXPECT_EQ(r.flops_in_trace, 2 * macs);
        ASSERT_EQ(r.chip_flops.size(), tp);
        for (unsigned c = 0; c < tp; ++c) {  // 256 columns / tp each (85 or 86 of them at tp 3)
            const std::uint64_t cols = 256 * (c + 1) / tp - 256 * c / tp;
            EXPECT_EQ(r.chip_flops[c], 2ull * 2 * 2 * 16 * 64 * cols) << "chip " << c;
        }
        if (tp == 1) {
            EXPECT_EQ(r.remote_dmas, 0u);
            continue;
        }
        std::map<std::string, std::string> split;
        for (const auto& n : r.sum.nodes) split[n.name] = n.split;
        EXPECT_EQ(split["fc1"], "column-parallel");
        EXPECT_EQ(split["fc2"], "row-parallel (all-reduce)");
        EXPECT_EQ(r.sum.all_reduces, 1u) << "one all-reduce for the pair";
        EXPECT_EQ(r.sum.all_gathers, 0u);
        EXPECT_GT(r.remote_dmas, 0u);
        EXPECT_TRUE(has_prefix(r.ann, "model/fc2/all_reduce/"));
        EXPECT_EQ(r.sum.uneven.empty(), 256 % tp == 0) << "tp 3 splits the 256 columns unevenly, with a warning";
    }
}

TEST(OnnxFrontend, TensorParallelConvolutionsSplitByRowsOrBatch) {
    Graph G = small_cnn();
    const std::string m = G.save("cnn_tp");
    for (std::uint64_t batch : {1u, 2u}) {
        for (unsigned tp : {2u, 4u, 16u}) {
            SCOPED_TRACE("batch " + std::to_string(batch) + " tp " + std::to_string(tp));
            onnxfe::OnnxParams p;
            p.batch = batch;
            p.tp = tp;
            Lowered r = lower(m, p);
            EXPECT_EQ(r.sum.flops, small_cnn_flops(batch));
            EXPECT_EQ(r.flops_in_trace, small_cnn_flops(batch)) << "no node computed twice or dropped";
            std::map<std::string, std::string> split;
            for (const auto& n : r.sum.nodes) split[n.name] = n.split;
            if (batch % tp == 0) {
                EXPECT_EQ(split["stem/conv"], "by batch");
                EXPECT_EQ(r.remote_dmas, 0u) << "split by batch: no communication";
            } else {
                // 32 output rows of the stem: by rows, its 3x3 halo from the neighbours.
                EXPECT_EQ(split["stem/conv"], "by output rows (halo exchange)");
                EXPECT_GT(r.sum.halo_exchanges, 0u);
                EXPECT_TRUE(has_prefix(r.ann, "model/stem/conv/halo/send"));
            }
        }
    }
}

// Self-attention with 6 heads of 16 over hidden 96: x[1,16,96] -> Q, K, V projections ->
// reshape to heads -> Q K^T -> Softmax -> P V -> back to 96 -> output projection.
Graph attention6() {
    Graph G;
    G.input("x", {1, 16, 96}, "batch");
    for (const char* w : {"wq", "wk", "wv", "wo"}) G.input(w, {96, 96});
    auto* shape = G.g().add_initializer();
    shape->set_name("heads_shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(4);
    for (std::int64_t d : {1, 16, 6, 16}) shape->add_int64_data(d);
    auto* back = G.g().add_initializer();
    back->set_name("hidden_shape");
    back->set_data_type(onnx::TensorProto::INT64);
    back->add_dims(3);
    for (std::int64_t d : {1, 16, 96}) back->add_int64_data(d);
    for (const char* t : {"q", "k", "v"}) {
        const std::string w = std::string("w") + t;
        G.node("MatMul", std::string("/") + t + "_proj", {"x", w}, {t});
        G.node("Reshape", std::string("/") + t + "_heads", {t, "heads_shape"}, {std::string(t) + "h"});
    }
    Graph::ints(G.node("Transpose", "/q_t", {"qh"}, {"qt"}), "perm", {0, 2, 1, 3});
    Graph::ints(G.node("Transpose", "/k_t", {"kh"}, {"kt"}), "perm", {0, 2, 3, 1});
    Graph::ints(G.node("Transpose", "/v_t", {"vh"}, {"vt"}), "perm", {0, 2, 1, 3});
    G.node("MatMul", "/scores", {"qt", "kt"}, {"s"});
    G.node("Softmax", "/softmax", {"s"}, {"p"});
    G.node("MatMul", "/context", {"p", "vt"}, {"c"});
    Graph::ints(G.node("Transpose", "/c_t", {"c"}, {"ct"}), "perm", {0, 2, 1, 3});
    G.node("Reshape", "/c_hidden", {"ct", "hidden_shape"}, {"ch"});
    G.node("MatMul", "/out_proj", {"ch", "wo"}, {"y"});
    G.output("y");
    return G;
}

TEST(OnnxFrontend, TensorParallelAttentionSplitsHeadsOrRows) {
    Graph G = attention6();
    const std::string m = G.save("attn");
    const std::uint64_t macs = 4 * 16 * 96 * 96 + 2 * 6 * 16 * 16 * 16;  // 4 projections, Q K^T and P V
    for (unsigned tp : {2u, 3u, 4u}) {
        SCOPED_TRACE("tp " + std::to_string(tp));
        onnxfe::OnnxParams p;
        p.tp = tp;
        Lowered r = lower(m, p);
        EXPECT_EQ(r.flops_in_trace, 2 * macs);
        std::map<std::string, std::string> split;
        for (const auto& n : r.sum.nodes) split[n.name] = n.split;
        if (6 % tp == 0) {  // Megatron: heads over the chips, one all-reduce after the output projection
            EXPECT_EQ(split["q_proj"], "column-parallel");
            EXPECT_EQ(split["scores"], "split by batch (heads)");
            EXPECT_EQ(split["out_proj"], "row-parallel (all-reduce)");
            EXPECT_EQ(r.sum.all_reduces, 1u);
            EXPECT_EQ(r.sum.all_gathers, 0u);
        } else {  // 6 heads over 4 chips: sequence-parallel, K and V all-gathered for the scores
            EXPECT_EQ(split["q_proj"], "rows split (weights whole)");
            EXPECT_EQ(split["scores"], "split by rows");
            EXPECT_EQ(r.sum.all_reduces, 0u);
            EXPECT_EQ(r.sum.all_gathers, 2u);
        }
    }
}

TEST(OnnxFrontend, MatMulBatchedAndBroadcast) {
    Graph G;
    G.input("a", {2, 4, 64, 32}, "batch");
    G.input("b", {2, 4, 32, 48}, "batch");
    G.input("w", {48, 16});
    G.node("MatMul", "bmm", {"a", "b"}, {"c"});
    G.node("MatMul", "proj", {"c", "w"}, {"y"});
    G.node("Softmax", "sm", {"y"}, {"z"});
    G.output("z");
    onnxfe::OnnxParams p;
    p.batch = 2;
    Lowered r = lower(G.save("mm"), p);
    EXPECT_EQ(r.sum.flops, 2ull * (2 * 4 * 64 * 48 * 32 + 2 * 4 * 64 * 16 * 48));
    EXPECT_TRUE(has_prefix(r.ann, "model/sm/vector"));
}

TEST(OnnxFrontend, UnsupportedOpIsAClearErrorOrSkipped) {
    Graph G;
    G.input("x", {1, 8, 16});
    G.node("Relu", "ok", {"x"}, {"a"});
    G.node("FancyNorm", "/det/nms", {"a"}, {"b"}).set_domain("com.example");
    G.node("Relu", "after", {"b"}, {"c"});
    G.output("c");
    const std::string m = G.save("bad_op");
    try {
        lower(m);
        FAIL() << "no error";
    } catch (const onnxfe::OnnxError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(m), std::string::npos) << msg;
        EXPECT_NE(msg.find("FancyNorm"), std::string::npos) << msg;
        EXPECT_NE(msg.find("det/nms"), std::string::npos) << msg;
        EXPECT_NE(msg.find("Conv"), std::string::npos) << "lists the supported ops: " << msg;
    }
    onnxfe::OnnxParams p;
    p.skip_unsupported = true;
    Lowered r = lower(m, p);
    EXPECT_EQ(r.sum.skipped.at("FancyNorm"), 1u);
    EXPECT_TRUE(has_prefix(r.ann, "model/after/"));
}

TEST(OnnxFrontend, BadInputsNameTheFileAndWhatWasExpected) {
    const std::string junk = tmp("junk.onnx");
    std::ofstream(junk) << "this is not a protobuf";
    EXPECT_THROW(lower(junk), onnxfe::OnnxError);
    try {
        lower(junk);
    } catch (const onnxfe::OnnxError& e) {
        EXPECT_NE(std::string(e.what()).find(junk), std::string::npos);
    }
    Graph G;
    G.input("x", {1, 8, 16}, "seq_len");
    G.node("Relu", "r", {"x"}, {"y"});
    G.output("y");
    try {
        lower(G.save("seq"));
        FAIL() << "a symbolic sequence dim needs --seq";
    } catch (const onnxfe::OnnxError& e) {
        EXPECT_NE(std::string(e.what()).find("--seq"), std::string::npos) << e.what();
    }
    onnxfe::OnnxParams p;
    p.seq = 8;
    EXPECT_NO_THROW(lower(G.save("seq"), p));
}

TEST(OnnxFrontend, ShapeArithmeticIsFoldedAtCompileTime) {
    // The exporters' pattern for a dynamic reshape: Shape -> Gather -> Div -> Unsqueeze -> Concat -> Reshape.
    Graph G;
    G.input("x", {1, 64, 32}, "batch");
    G.input("w", {16, 32});
    auto c = [&](const std::string& name, std::int64_t v) {
        auto& n = G.node("Constant", name, {}, {name});
        auto* a = n.add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
        a->mutable_t()->add_int64_data(v);
    };
    G.node("Shape", "shape", {"x"}, {"s"});
    c("i1", 1);
    c("two", 2);
    c("minus1", -1);
    c("zero0", 0);
    G.node("Gather", "g", {"s", "i1"}, {"d1"});
    G.node("Div", "half", {"d1", "two"}, {"h"});
    auto& u1 = G.node("Unsqueeze", "u1", {"h", "zero0"}, {"hu"});
    (void)u1;
    G.node("Unsqueeze", "u2", {"minus1", "zero0"}, {"mu"});
    auto& cat = G.node("Concat", "cat", {"mu", "hu"}, {"shape2"});
    Graph::integer(cat, "axis", 0);
    G.node("Reshape", "rs", {"x", "shape2"}, {"y"});  // [-1, 32] -> [2 * 32, ...]: [64 * 32 / 32, 32]
    G.node("MatMul", "mm", {"y", "w"}, {"z"});
    G.output("z");
    // The w input is [16, 32]: the reshape gives [64, 32] x ... -> make w [32, 16] instead.
    G.g().mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(32);
    G.g().mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(16);
    onnxfe::OnnxParams p;
    p.batch = 2;
    Lowered r = lower(G.save("fold"), p);
    // x [2, 64, 32] reshaped to [-1, 32] = [128, 32]: 128 x 16 x 32.
    EXPECT_EQ(r.sum.flops, 2ull * 128 * 16 * 32);
}

TEST(ScaleSimTopology, ReadsBothFormatsAndEmitsOneAnnotatedLayerPerRow) {
    const std::string conv = tmp("conv.csv"), gemm = tmp("gemm.csv");
    std::ofstream(conv) << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                           "Conv1,224,224,7,7,3,64,2,\n\nConv2,56,56,3,3,64,64,1,\n";
    std::ofstream(gemm) << "Layer,M,N,K,\nQKT,1024,1024,64,\nproj,100,300,200,\n";
    auto c = gen::read_scalesim_topology(conv);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].m, 110u * 110u);  // ceil((224 - 7 + 2) / 2), no padding (SCALE-Sim's topology_utils.py)
    EXPECT_EQ(c[0].n, 64u);
    EXPECT_EQ(c[0].k, 7u * 7u * 3u);
    auto g = gen::read_scalesim_topology(gemm);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[1].m, 100u);
    EXPECT_EQ(g[1].n, 300u);
    EXPECT_EQ(g[1].k, 200u);
    const std::string out = tmp("ss.bin");
    {
        trace::TraceWriter w(out);
        gen::Emitter e(w, w.add_stream(0, 0));
        gen::emit_topology(e, gen::TileConfig{}, g);
        e.halt();
        w.close();
        EXPECT_EQ(e.flops(), 2ull * (1024 * 1024 * 64 + 100 * 300 * 200));
    }
    const auto tf = trace::TraceFile::open(out);
    std::set<std::string> layers;
    trace::StreamReader s(tf, 0);
    Instruction in;
    while (s.read(&in, 1))
        if (in.has(kAnn)) {
            const std::string a = tf.strings().at(in.ann);
            layers.insert(a.substr(0, a.rfind('/')));
        }
    EXPECT_EQ(layers, (std::set<std::string>{"scalesim/QKT", "scalesim/proj"}));
}

TEST(ScaleSimTopology, BadRowsNameFileLineAndColumn) {
    const std::string bad = tmp("bad.csv");
    std::ofstream(bad) << "Layer,M,N,K,\nok,8,8,8,\nbroken,8,x,8,\n";
    try {
        gen::read_scalesim_topology(bad);
        FAIL() << "no error";
    } catch (const gen::TopologyError& e) {
        EXPECT_NE(std::string(e.what()).find(bad + ":3:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("column 3"), std::string::npos) << e.what();
    }
    std::ofstream(bad) << "name,a,b\n";
    EXPECT_THROW(gen::read_scalesim_topology(bad), gen::TopologyError);
}
