// Convolutions read their input from HBM once per row block (gen::ConvInput): simulated on
// configs/xpu.yaml, the HBM bytes the run reports (RunResult, what stats.json's hbm.bytes_read
// and bytes_written are written from) equal the closed form below on shapes of every kind
// (1x1, 3x3, 7x7; stride 1 and 2; padding, asymmetric padding, dilation; depthwise and grouped;
// one image per block and blocks spanning images), and FLOPs stay 2 x MACs.
//
// The closed form, per convolution, with the lowering's row blocks of T = 1024 output pixels
// (pixels in image, row, column order; xpu.yaml's VMEM holds every band below, so T is not
// shrunk):
//   read    = sum over row blocks of sum over the images n the block touches of
//               (last_n - first_n + 1) x C x 2 bytes, where, with the block's first and last
//               output pixels (oh0, ow0) and (oh1, ow1) in image n and input positions
//               numbered h x W + w,
//               first_n = the first pixel's top-left tap (oh0 sh - pt, ow0 sw - pl clamped
//                         to the row), or 0 if that row is in the padding,
//               last_n  = the last pixel's bottom-right tap (oh1 sh - pt + (kh-1) d,
//                         ow1 sw - pl + (kw-1) d clamped), or H W - 1 if that row is padding;
//             (the halo between blocks is read again; padding is not read); when the windows
//             do not overlap (kernel extent <= stride, no padding: 1x1 stride 2), exactly
//             the block's pixels x kh x kw x C x 2 bytes
//           + weights (O x C/G x kh x kw x 2 bytes) once per row block
//   written = N x Ho x Wo x O x 2 bytes.
// It is derived here from the node's attributes, not from the lowering's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>

#include "tests/onnx_graph.h"
#include "tests/sim_fixture.h"
#include "traces/onnx/onnx_frontend.h"
#include "traces/trace_validate.h"
#include "traces/trace_writer.h"

using namespace xpu;
using xpu::test::Graph;

namespace {

struct ConvShape {
    const char* what;
    std::int64_t n, c, h, w, o, kh, kw, sh, sw;
    std::int64_t pt, pl, pb, pr;  // pads: top, left, bottom, right
    std::int64_t d = 1, group = 1;
};

void PrintTo(const ConvShape& s, std::ostream* os) { *os << s.what; }

struct Expected {
    std::uint64_t read = 0, written = 0, flops = 0, input = 0, weights = 0, output = 0;
};

Expected closed_form(const ConvShape& s) {
    const std::int64_t ho = (s.h + s.pt + s.pb - ((s.kh - 1) * s.d + 1)) / s.sh + 1;
    const std::int64_t wo = (s.w + s.pl + s.pr - ((s.kw - 1) * s.d + 1)) / s.sw + 1;
    const std::uint64_t M = static_cast<std::uint64_t>(s.n * ho * wo), T = 1024, eb = 2;
    Expected e;
    e.input = static_cast<std::uint64_t>(s.n * s.c * s.h * s.w) * eb;
    e.weights = static_cast<std::uint64_t>(s.o * (s.c / s.group) * s.kh * s.kw) * eb;
    e.output = M * static_cast<std::uint64_t>(s.o) * eb;
    for (std::uint64_t r0 = 0; r0 < M; r0 += T) {
        const std::uint64_t r1 = std::min(M, r0 + T);
        for (std::int64_t img = 0; img < s.n; ++img) {
            const std::int64_t p0 = std::max<std::int64_t>(static_cast<std::int64_t>(r0), img * ho * wo) - img * ho * wo;
            const std::int64_t p1 = std::min<std::int64_t>(static_cast<std::int64_t>(r1), (img + 1) * ho * wo) - img * ho * wo;
            if (p0 >= p1) continue;
            if ((s.kh - 1) * s.d + 1 <= s.sh && (s.kw - 1) * s.d + 1 <= s.sw && !s.pt && !s.pl && !s.pb && !s.pr) {
                // Windows that do not overlap: exactly the block's taps.
                e.read += static_cast<std::uint64_t>((p1 - p0) * s.kh * s.kw * s.c) * eb;
                continue;
            }
            const std::int64_t oh0 = p0 / wo, ow0 = p0 % wo, oh1 = (p1 - 1) / wo, ow1 = (p1 - 1) % wo;
            auto col = [&](std::int64_t c) { return std::min<std::int64_t>(s.w - 1, std::max<std::int64_t>(0, c)); };
            const std::int64_t top = oh0 * s.sh - s.pt, bottom = oh1 * s.sh - s.pt + (s.kh - 1) * s.d;
            const std::int64_t first = top >= 0 ? top * s.w + col(ow0 * s.sw - s.pl) : 0;
            const std::int64_t last = bottom < s.h ? bottom * s.w + col(ow1 * s.sw - s.pl + (s.kw - 1) * s.d) : s.h * s.w - 1;
            e.read += static_cast<std::uint64_t>((last - first + 1) * s.c) * eb;
        }
        e.read += e.weights;
    }
    e.written = e.output;
    e.flops = 2 * M * static_cast<std::uint64_t>(s.o * (s.c / s.group) * s.kh * s.kw);
    return e;
}

std::string conv_model(const ConvShape& s) {
    Graph G;
    G.input("x", {s.n, s.c, s.h, s.w});
    G.input("w", {s.o, s.c / s.group, s.kh, s.kw});
    auto& c = G.node("Conv", "/conv", {"x", "w"}, {"y"});
    Graph::ints(c, "kernel_shape", {s.kh, s.kw});
    Graph::ints(c, "strides", {s.sh, s.sw});
    Graph::ints(c, "pads", {s.pt, s.pl, s.pb, s.pr});
    Graph::ints(c, "dilations", {s.d, s.d});
    Graph::integer(c, "group", s.group);
    G.output("y");
    return G.save(s.what);
}

}  // namespace

// One simulation per process (SystemC elaborates once): one test per shape.
class OnnxConv : public ::testing::TestWithParam<ConvShape> {};

TEST_P(OnnxConv, HbmBytesAreTheInputBandsWeightsAndOutput) {
    const ConvShape& s = GetParam();
    const Expected e = closed_form(s);
    onnxfe::OnnxParams p;
    p.path = conv_model(s);
    const std::string trace = test::temp_path(std::string(s.what) + ".bin");
    {
        trace::TraceWriter w(trace);
        onnxfe::emit_onnx(w, p);
        w.close();
    }
    ASSERT_TRUE(trace::validate(trace).empty());
    auto run = test::simulate(trace, {}, "configs/xpu.yaml", false);
    EXPECT_EQ(run->result.hbm_bytes_read, e.read);
    EXPECT_EQ(run->result.hbm_bytes_written, e.written);
    EXPECT_EQ(static_cast<std::uint64_t>(run->result.flops), e.flops);
    // Close to input + weights + output: what exceeds it is the halo rows and the weights
    // read once more per extra row block; im2col tiles would read the input up to kh x kw
    // times.
    const std::uint64_t blocks = (e.output / 2 / static_cast<std::uint64_t>(s.o) + 1023) / 1024;
    EXPECT_LE(e.read, e.input * 2 + e.weights * blocks);
    if (s.kh == 1 && s.sh == 1) {
        EXPECT_EQ(e.read, e.input + e.weights * blocks) << "a 1x1 stride-1 conv has no halo";
    }
}

const ConvShape kShapes[] = {
    {"3x3_s1_p1_c64", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1},
    {"3x3_s2_p1_c128", 1, 128, 28, 28, 256, 3, 3, 2, 2, 1, 1, 1, 1},
    {"1x1_s1_c256", 1, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0, 0, 0},
    {"1x1_s2_c64", 1, 64, 28, 28, 128, 1, 1, 2, 2, 0, 0, 0, 0},
    {"7x7_s2_p3_c3", 1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 3, 3},
    {"dw3x3_s1_p1_c96", 1, 96, 28, 28, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 96},
    {"dw3x3_s2_p1_c144", 1, 144, 56, 56, 144, 3, 3, 2, 2, 1, 1, 1, 1, 1, 144},
    {"g4_3x3_s1_p1_c64", 1, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4},
    {"3x3_asym_pad_batch3", 3, 32, 20, 18, 48, 3, 3, 1, 1, 0, 1, 2, 1},
    {"3x3_d2_p2_c32", 1, 32, 40, 40, 32, 3, 3, 1, 1, 2, 2, 2, 2, 2, 1},
    {"5x5_s2_p2_batch2_c16", 2, 16, 48, 48, 40, 5, 5, 2, 2, 2, 2, 2, 2},
};

INSTANTIATE_TEST_SUITE_P(Shapes, OnnxConv, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<ConvShape>& i) { return std::string(i.param.what); });
