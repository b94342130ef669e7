#include "traces/gen/transformer.h"

#include <stdexcept>

#include "traces/gen/collective.h"

namespace xpu::gen {

bool model_preset(const std::string& name, ModelShape& m) {
    if (name == "llama2-7b") m = {4096, 32, 32, 11008, 32};
    else if (name == "llama2-13b") m = {5120, 40, 40, 13824, 40};
    else if (name == "llama2-70b") m = {8192, 64, 8, 28672, 80};
    else return false;
    return true;
}

TransformerLayout transformer_layout(const TransformerParams& p) {
    const ModelShape& m = p.model;
    if (!m.hidden || !m.heads || !m.kv_heads || !m.ffn || !m.layers || !p.batch || !p.seq || !p.tp)
        throw std::invalid_argument("transformer: every dimension must be > 0");
    if (m.hidden % m.heads) throw std::invalid_argument("transformer: hidden must be a multiple of heads");
    if (m.heads % m.kv_heads) throw std::invalid_argument("transformer: heads must be a multiple of kv-heads");
    if (m.heads % p.tp || m.kv_heads % p.tp || m.ffn % p.tp)
        throw std::invalid_argument("transformer: heads, kv-heads and ffn must divide by --tp");
    TransformerLayout l;
    l.eb = dtype_bytes(p.tiles.dtype);
    l.heads = m.heads / p.tp;
    l.kv_heads = m.kv_heads / p.tp;
    l.ffn = m.ffn / p.tp;
    l.head_dim = m.hidden / m.heads;
    l.seq_q = p.decode ? 1 : p.seq;
    l.seq_k = p.decode ? p.seq + 1 : p.seq;
    l.rows = p.batch * l.seq_q;
    return l;
}

namespace {

// One chip's HBM: weights of every layer, the KV cache, then activation buffers (reused by
// every layer).
struct Addresses {
    std::uint64_t layer_weights = 0;  // bytes of one layer's weights
    std::uint64_t wqkv = 0, wo = 0, wg = 0, wu = 0, wd = 0;  // offsets within a layer
    std::uint64_t kv_base = 0, kv_layer = 0, kv_half = 0;     // cache: per layer K then V
    std::uint64_t x, xn, qkv, scores, attn, o, g, u, d;
};

Addresses place(const TransformerParams& p, const TransformerLayout& l, std::uint64_t layers) {
    const std::uint64_t h = p.model.hidden, eb = l.eb, hd = l.head_dim;
    const std::uint64_t qkv_cols = (l.heads + 2 * l.kv_heads) * hd;
    Addresses a;
    a.wqkv = 0;
    a.wo = a.wqkv + h * qkv_cols * eb;
    a.wg = a.wo + l.heads * hd * h * eb;
    a.wu = a.wg + h * l.ffn * eb;
    a.wd = a.wu + h * l.ffn * eb;
    a.layer_weights = a.wd + l.ffn * h * eb;
    a.kv_base = a.layer_weights * layers;
    a.kv_half = p.batch * l.kv_heads * l.seq_k * hd * eb;
    a.kv_layer = 2 * a.kv_half;
    std::uint64_t next = a.kv_base + a.kv_layer * layers;
    auto buf = [&](std::uint64_t bytes) {
        std::uint64_t at = next;
        next += (bytes + 4095) / 4096 * 4096;
        return at;
    };
    a.x = buf(l.rows * h * eb);
    a.xn = buf(l.rows * h * eb);
    a.qkv = buf(l.rows * qkv_cols * eb);
    a.scores = buf(p.batch * l.heads * l.seq_q * l.seq_k * eb);
    a.attn = buf(l.rows * l.heads * hd * eb);
    a.o = buf(l.rows * h * eb);
    a.g = buf(l.rows * l.ffn * eb);
    a.u = buf(l.rows * l.ffn * eb);
    a.d = buf(l.rows * h * eb);
    return a;
}

void emit_layer(Lowering& lo, const TransformerParams& p, const TransformerLayout& l, const Addresses& a,
                std::uint64_t layer, unsigned chip, const RingInfo& ring) {
    const std::string L = "layer" + std::to_string(layer) + "/";
    const std::uint64_t h = p.model.hidden, eb = l.eb, hd = l.head_dim, M = l.rows;
    const std::uint64_t qkv_cols = (l.heads + 2 * l.kv_heads) * hd;
    const std::uint64_t w = a.layer_weights * layer;
    const std::uint64_t kv = a.kv_base + a.kv_layer * layer;
    const std::uint64_t group = l.heads / l.kv_heads;  // query heads per KV head

    lo.vector_pass(a.x, 0, a.xn, M * h, {Opcode::VAlu, Opcode::VReduce, Opcode::VTrans, Opcode::VAlu}, L + "attn_norm");
    lo.matmuls({{M, qkv_cols, h, a.xn, w + a.wqkv, a.qkv}}, L + "attn/qkv_proj");
    lo.vector_pass(a.qkv, 0, a.qkv, M * (l.heads + l.kv_heads) * hd, {Opcode::VPermute, Opcode::VAlu, Opcode::VAlu},
                   L + "attn/rope");
    // New keys and values into the cache (decode: one position per sequence; prefill: all).
    lo.copy(a.qkv + l.heads * hd * eb, kv + (p.decode ? a.kv_half - p.batch * l.kv_heads * hd * eb : 0),
            M * 2 * l.kv_heads * hd * eb, L + "attn/kv_append");

    std::vector<Matmul> qk, av;
    for (std::uint64_t b = 0; b < p.batch; ++b)
        for (std::uint64_t g = 0; g < l.kv_heads; ++g) {
            const std::uint64_t k_cache = kv + (b * l.kv_heads + g) * l.seq_k * hd * eb;
            const std::uint64_t v_cache = k_cache + a.kv_half;
            if (p.decode) {
                // The group's query heads (one token) against the cached keys.
                const std::uint64_t q = a.qkv + b * qkv_cols * eb + g * group * hd * eb;
                const std::uint64_t s = a.scores + (b * l.heads + g * group) * l.seq_k * eb;
                qk.push_back({group, l.seq_k, hd, q, k_cache, s});
                av.push_back({group, hd, l.seq_k, s, v_cache, a.attn + (b * l.heads + g * group) * hd * eb});
            } else {
                for (std::uint64_t hh = g * group; hh < (g + 1) * group; ++hh) {
                    const std::uint64_t q = a.qkv + (b * l.seq_q * qkv_cols + hh * hd) * eb;
                    const std::uint64_t s = a.scores + (b * l.heads + hh) * l.seq_q * l.seq_k * eb;
                    qk.push_back({l.seq_q, l.seq_k, hd, q, k_cache, s});
                    av.push_back({l.seq_q, hd, l.seq_k, s, v_cache, a.attn + (b * l.seq_q * l.heads + hh) * hd * eb});
                }
            }
        }
    lo.matmuls(qk, L + "attn/qk_matmul");
    lo.vector_pass(a.scores, 0, a.scores, p.batch * l.heads * l.seq_q * l.seq_k,
                   {Opcode::VReduce, Opcode::VAlu, Opcode::VTrans, Opcode::VReduce, Opcode::VAlu}, L + "attn/softmax");
    lo.matmuls(av, L + "attn/av_matmul");
    lo.matmuls({{M, h, l.heads * hd, a.attn, w + a.wo, a.o}}, L + "attn/out_proj");
    if (ring.chips > 1) emit_all_reduce(lo, ring, chip, a.o, M * h * eb, L + "attn/all_reduce");
    lo.vector_pass(a.x, a.o, a.x, M * h, {Opcode::VAlu}, L + "attn/residual");

    lo.vector_pass(a.x, 0, a.xn, M * h, {Opcode::VAlu, Opcode::VReduce, Opcode::VTrans, Opcode::VAlu}, L + "mlp_norm");
    lo.matmuls({{M, l.ffn, h, a.xn, w + a.wg, a.g}, {M, l.ffn, h, a.xn, w + a.wu, a.u}}, L + "mlp/gate_up_proj");
    lo.vector_pass(a.g, a.u, a.g, M * l.ffn, {Opcode::VAlu, Opcode::VTrans, Opcode::VAlu}, L + "mlp/silu_mul");
    lo.matmuls({{M, h, l.ffn, a.g, w + a.wd, a.d}}, L + "mlp/down_proj");
    if (ring.chips > 1) emit_all_reduce(lo, ring, chip, a.d, M * h * eb, L + "mlp/all_reduce");
    lo.vector_pass(a.x, a.d, a.x, M * h, {Opcode::VAlu}, L + "mlp/residual");
}

}  // namespace

TransformerSummary emit_transformer(trace::TraceWriter& w, const TransformerParams& p) {
    const TransformerLayout l = transformer_layout(p);
    const std::uint64_t layers = p.layers ? std::min(p.layers, p.model.layers) : p.model.layers;
    const Addresses a = place(p, l, layers);
    TransformerSummary sum;
    RingInfo ring;
    ring.chips = p.tp;
    ring.direct = p.direct_all_reduce;
    for (unsigned chip = 0; chip < p.tp; ++chip) {
        Emitter e(w, w.add_stream(static_cast<std::uint16_t>(chip), 0));
        Lowering lo(e, p.tiles);
        for (std::uint64_t layer = 0; layer < layers; ++layer) emit_layer(lo, p, l, a, layer, chip, ring);
        e.halt();
        sum.instructions += e.instructions();
        sum.flops += e.flops();
        sum.hbm_bytes_read += e.dma_bytes_from_hbm();
        sum.hbm_bytes_written += e.dma_bytes_to_hbm();
        sum.remote_bytes += e.dma_bytes_remote();
    }
    return sum;
}

}  // namespace xpu::gen
