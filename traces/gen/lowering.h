// Lowering: the code generator shared by the workloads. It turns tensor operations into the
// instruction stream an XLA-style compiler emits for one TensorCore:
//   matmuls()     a batch of independent matmuls C = A B (tiles DMA'd HBM -> VMEM, weight tiles
//                 pushed into the MXUs, A streamed eight rows a vreg at a time, results popped,
//                 epilogue on the vector unit, C DMA'd back), as one continuous pipeline;
//   vector_pass() an elementwise / reduction pass on the vector unit over a tensor in HBM;
//   copy()        an HBM -> HBM DMA (e.g. appending to a KV cache).
// Every call ends with its results in HBM (it waits for its last write-back), so calls chain
// by data through HBM, as unfused XLA ops do. Flag counters persist across calls.
//
// Matmul tiling: N in blocks of mxus x dim columns (one dim-wide weight tile per MXU), M in
// blocks of tile_m rows, K in steps of dim. Per step the A tile (rows x depth) and the B tile
// (depth x block columns) come from HBM; A is therefore read once per N block and B once per
// M block: HBM bytes = A x n_blocks + B x m_blocks + C, which is what the tests check. A
// convolution (Matmul::conv) reads its input bands instead of A (ConvInput).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/gen/emit.h"

namespace xpu::gen {

struct TileConfig {
    DType dtype = DType::Bf16;
    unsigned tile_m = 1024;   // rows of A per block (multiple of 8)
    unsigned mxus = 8;        // configs/xpu.yaml's megacore has 8
    unsigned dim = 128;       // systolic array size
    unsigned dma_engines = 4;
    unsigned vpus = 1;        // vector units: vector passes spread their vregs over them
    std::uint64_t vec_base = 24ull << 20;  // VMEM offset of the vector passes' buffers (above the matmul buffers)
    bool prefetch = true;     // DMA tiles two steps ahead (three VMEM buffers); off: one buffer, loaded just before use
    // Planted inefficiencies (each documented in docs/tracegen.md with the finding it should
    // produce): all but `prefetch` are off in a clean trace.
    bool late_dma = false;    // the weight (B) tiles of every step are loaded just before use
    bool false_dep = false;   // after each C write-back, wait for it although nothing reads it
    bool bad_order = false;   // the vector epilogue of a block waits behind the next step's data
    unsigned split_dma = 1;   // > 1: every HBM -> VMEM tile load is N contiguous DMAs on one engine (same flag)
};

// A convolution whose A operand (the im2col matrix) is formed in VMEM from its input instead of
// being gathered from HBM, as a TPU compiler lowers a convolution: per row block of output
// pixels, the input those pixels read (the band: conv_band below, with the kernel's halo;
// padding is never fetched, it is zeros made in VMEM) is DMA'd from HBM once, into one of three
// band buffers, and stays there for every N block and K step of that row block. Per K step the
// A chunks come from the band: when every 8-row chunk is one contiguous piece of it (the step's
// K range inside one kernel row's kw x c elements, and no chunk spanning two output rows), the
// vector unit loads them straight from the band (a shifted load, strided with a stride);
// otherwise the DMA engines gather the step's A tile from the band into an A buffer (a strided
// VMEM -> VMEM transfer; merging pieces in vector registers instead costs the one vector unit
// more than the MXUs' time on small-channel convolutions: measured 2.4x on MobileNetV2).
// HBM bytes of the problem: its bands, + B once per row block, + C once.
// The K order of an A row is (kernel row, kernel column, channel); the weight tile is laid out
// to match at compile time.
struct ConvInput {
    std::uint64_t hbm_x = 0;                  // the input this problem reads, laid out [n][h][w][c]
    std::uint64_t n = 1, h = 1, w = 1, c = 1;  // c: the channels one tap contributes to an A row
    std::uint64_t ho = 1, wo = 1;             // output size: the problem's m = n ho wo
    std::uint64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  // ph, pw: padding before
};

// Input pixels [first, first + pixels) of image `img` (row-major: h x w + column): one
// contiguous piece of a band, all c channels of each.
struct BandSegment {
    std::uint64_t img = 0, first = 0, pixels = 0;
};
// Windows that do not overlap (kernel extent <= stride in both dims, no padding: a 1x1 stride-2
// projection, ViT's 16x16 patches): no input is shared, so a band is exactly the block's taps,
// fetched by a strided DMA ((r1 - r0) kh kw positions, as im2col), and is the A tile itself.
bool conv_windows_disjoint(const ConvInput& x);
// The band of output pixels [r0, r1) (pixels in (image, row, column) order): per image, the
// contiguous range of input pixels from the first one the block reads (the first output
// pixel's top-left tap) to the last (the last output pixel's bottom-right tap), clamped to the
// image; padding is not read. A block that starts or ends mid-row reads its partial rows' taps
// only from there on; rows between taps of a vertical stride or dilation come along.
std::vector<BandSegment> conv_band(const ConvInput& x, std::uint64_t r0, std::uint64_t r1);

struct Matmul {
    std::uint64_t m = 0, n = 0, k = 0;
    std::uint64_t hbm_a = 0, hbm_b = 0, hbm_c = 0;
    // > 1: `packed` independent groups side by side in one block-diagonal weight tile (grouped
    // and depthwise convolutions): each of the n output columns reduces over its own k inputs,
    // so a row of A carries packed x k values (A tiles and loads are that wide) while the
    // matmul instructions record the useful shape m x n x k: 2 m n k FLOPs, the graph's MACs,
    // and the idle part of the array shows as lower utilisation. Needs packed x k <= dim.
    std::uint64_t packed = 1;
    // Set: A is formed in VMEM from this convolution's input (hbm_a unused); needs
    // m = n ho wo and packed x k = kh kw c.
    std::optional<ConvInput> conv = std::nullopt;
};

class Lowering {
public:
    Lowering(Emitter& e, const TileConfig& cfg);
    void matmuls(const std::vector<Matmul>& batch, const std::string& op);
    // Per vreg of `elements` values: vld (and a second operand, if hbm_in2), the ops in order,
    // vst. The tensor is streamed through VMEM in double-buffered chunks.
    // `out_elements` (default: elements) shrinks the output for reductions and pooling: each
    // chunk writes back its share of it.
    void vector_pass(std::uint64_t hbm_in, std::uint64_t hbm_in2, std::uint64_t hbm_out, std::uint64_t elements,
                     const std::vector<Opcode>& ops, const std::string& op, std::uint64_t out_elements = ~0ull);
    void copy(std::uint64_t hbm_src, std::uint64_t hbm_dst, std::uint64_t bytes, const std::string& op);
    // Collective building blocks: an HBM -> remote HBM DMA raising `flag` on `chip`, and a wait
    // until this chip's `flag` has been raised `count` times.
    void send(std::uint64_t hbm_src, std::uint16_t chip, std::uint64_t hbm_dst, std::uint64_t bytes, std::uint16_t flag,
              bool reduce = false);
    void wait_flag(std::uint16_t flag, std::int64_t count);
    // Arrivals expected on a flag raised by other chips: one more, and the new total.
    std::int64_t expect_arrival(std::uint16_t flag) { return ++arrivals_[flag]; }
    const TileConfig& config() const { return cfg_; }
    Emitter& emitter() { return e_; }

private:
    Emitter& e_;
    TileConfig cfg_;
    std::int64_t flag_count_[32] = {};  // DMAs issued that raise each flag, over the whole trace
    std::int64_t arrivals_[32] = {};    // remote DMAs expected to have raised each flag
    unsigned engine_ = 0;
    unsigned next_engine() { return engine_++ % cfg_.dma_engines; }
    void dma_in(std::uint64_t hbm, std::uint64_t vmem, std::uint64_t bytes, std::uint16_t flag);
    void dma_out(std::uint64_t vmem, std::uint64_t hbm, std::uint64_t bytes, std::uint16_t flag);
    void spread_dma(Space src_space, std::uint64_t src, Space dst_space, std::uint64_t dst, std::uint64_t bytes,
                    std::uint16_t flag);
    void wait_all(std::uint16_t flag);
};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b);

}  // namespace xpu::gen
