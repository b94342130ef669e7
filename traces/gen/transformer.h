// Llama-style decoder layers (RMSNorm, QKV projection, RoPE, attention with a KV cache,
// output projection, gated MLP, residuals), lowered per layer into unfused XLA-style ops
// (see lowering.h): every projection is a matmul whose weights stream from HBM, every
// elementwise or reduction step is a vector pass over HBM, attention is one matmul per
// (sequence, KV head) for Q K^T and for P V, with a softmax pass between them. Every
// instruction carries its layer and op, e.g. "layer3/attn/qk_matmul/matmul".
//
// Decode generates one token per sequence against a KV cache of `seq` tokens (it appends the
// new K and V first, so attention spans seq + 1 positions); prefill processes `seq` tokens
// per sequence (attention over all seq x seq pairs: causal masking is not modelled) and
// writes the KV cache. With tp > 1, heads and FFN columns are split over tp chips (one stream
// per chip), and the attention and MLP outputs are all-reduced over a ring of remote DMAs.
// Embeddings and the LM head are not generated.
#pragma once

#include <cstdint>
#include <string>

#include "traces/gen/lowering.h"
#include "traces/trace_writer.h"

namespace xpu::gen {

struct ModelShape {
    std::uint64_t hidden = 4096, heads = 32, kv_heads = 32, ffn = 11008, layers = 32;
};
// llama2-7b, llama2-13b, llama2-70b (the published configurations); false if unknown.
bool model_preset(const std::string& name, ModelShape& out);

struct TransformerParams {
    ModelShape model;
    bool decode = true;
    std::uint64_t batch = 1, seq = 2048;
    std::uint64_t layers = 0;  // layers to generate (0: all of the model's)
    unsigned tp = 1;           // tensor-parallel chips
    bool direct_all_reduce = false;  // --collective direct: the all-reduces as direct exchanges, not rings
    TileConfig tiles;
};

struct TransformerSummary {
    std::uint64_t instructions = 0, flops = 0, hbm_bytes_read = 0, hbm_bytes_written = 0, remote_bytes = 0;
};

// Adds one stream per chip (chip c, core 0) to `w` and emits the layers into it.
TransformerSummary emit_transformer(trace::TraceWriter& w, const TransformerParams& p);

// HBM layout of one chip's tensors (byte offsets), exposed so that tests can derive expected
// traffic independently.
struct TransformerLayout {
    std::uint64_t eb = 2;
    std::uint64_t heads = 0, kv_heads = 0, ffn = 0;  // per chip
    std::uint64_t head_dim = 0, rows = 0;             // rows = tokens processed (M)
    std::uint64_t seq_q = 0, seq_k = 0;               // query and key positions per sequence
};
TransformerLayout transformer_layout(const TransformerParams& p);

}  // namespace xpu::gen
