// xpu_tracegen: instruction traces of ML workloads, lowered as an XLA-style compiler would
// (docs/tracegen.md). Every command prints what it generated and writes a deterministic file.
//   xpu_tracegen gemm --m M --n N --k K [--dtype bf16|f32|int8] [--tile-m 1024] [--mxus 8]
//                     [--double-buffer | --no-double-buffer] [planted options] -o g.bin
//   xpu_tracegen transformer --model llama2-7b|llama2-13b|llama2-70b|custom
//                     [--hidden --heads --kv-heads --ffn --layers] --phase prefill|decode
//                     --batch B --seq S [--layers L] [--tp N] [planted options] -o t.bin
//   xpu_tracegen collective --op all-gather|reduce-scatter|all-reduce --chips N --bytes S
//                     --algo ring|bidir-ring|torus2d|torus3d|bidir-torus2d|bidir-torus3d|direct
//                     [--dims XxY|XxYxZ] [--chunks C]
//                     [--serial-collective] -o c.bin
// Planted inefficiencies (gemm, transformer): --late-dma --no-double-buffer --false-dep --bad-order
// --split-dma N.
// Exit codes: 0 ok, 1 cannot generate or write the output, 2 usage.
#include <cctype>
#include <iostream>
#include <map>

#include <boost/program_options.hpp>

#include "traces/file_paths.h"
#include "traces/gen/collective.h"
#include "traces/gen/gemm.h"
#include "traces/gen/scalesim.h"
#include "traces/gen/target.h"
#include "traces/gen/transformer.h"
#include "traces/onnx/onnx_frontend.h"
#include "traces/trace_writer.h"

namespace po = boost::program_options;
using namespace xpu;

namespace {

int usage(const std::string& msg) {
    std::cerr << "xpu_tracegen: " << msg << " (see xpu_tracegen --help)\n";
    return 2;
}

// Options every lowering shares: data type, tiling, and the planted inefficiencies.
struct Common {
    std::string out, dtype = "bf16", platform;
    gen::TileConfig tiles;
    void add(po::options_description& o, bool planted) {
        o.add_options()
            ("dtype", po::value(&dtype), "bf16 (default), f32 or int8")
            ("tile-m", po::value(&tiles.tile_m), "rows of A per block (multiple of 8, default 1024)")
            ("mxus", po::value(&tiles.mxus), "matrix units used (1..8, default 8 as in configs/xpu.yaml)")
            ("platform", po::value(&platform),
             "tile for this platform description: its matrix-unit size and count (up to 8), vector units, DMA engines "
             "and VMEM capacity (instead of --mxus)")
            ("output,o", po::value(&out)->required(), "output trace (.bin)")
            ("help,h", "this help");
        if (planted)
            o.add_options()
                ("double-buffer", "prefetch tiles ahead of use (default)")
                ("no-double-buffer", "planted: load each step's tiles just before use")
                ("late-dma", "planted: load the weight tiles just before their use instead of prefetching them")
                ("false-dep", "planted: wait for every result write-back although nothing reads it")
                ("bad-order", "planted: emit each block's epilogue behind a wait for data it does not need")
                ("split-dma", po::value(&tiles.split_dma), "planted: emit every HBM -> VMEM tile load as N contiguous DMAs on one engine");
    }
    // Returns an error message, or "" when the values are good. `input`: the subcommand's own
    // input file, if any (option name, path), which the output must not overwrite, as the
    // platform description must not be.
    std::string finish(const po::variables_map& vm, const char* input_option = nullptr, const std::string& input = "") {
        for (const auto& [opt, in] : {std::pair<const char*, std::string>{"--platform", platform}, {input_option, input}})
            if (opt && !in.empty() && same_file(out, in))
                return "-o " + out + " would overwrite " + in + ", the " + opt + " input: choose another output name";
        auto dt = dtype_from_name(dtype);
        if (!dt || (*dt != DType::Bf16 && *dt != DType::F32 && *dt != DType::Int8))
            return "--dtype: expected bf16, f32 or int8, got '" + dtype + "'";
        tiles.dtype = *dt;
        if (tiles.tile_m == 0 || tiles.tile_m % 8) return "--tile-m must be a positive multiple of 8";
        if (tiles.mxus < 1 || tiles.mxus > 8) return "--mxus must be 1..8";
        if (vm.count("no-double-buffer")) tiles.prefetch = false;
        tiles.late_dma = vm.count("late-dma") > 0;
        tiles.false_dep = vm.count("false-dep") > 0;
        tiles.bad_order = vm.count("bad-order") > 0;
        if (tiles.split_dma < 1 || tiles.split_dma > 65536) return "--split-dma must be 1..65536";
        if (!platform.empty()) {
            try {
                const gen::Target t = gen::read_target(platform);
                tiles = gen::tiles_for(t, tiles);
                std::cout << "target " << platform << ": " << t.mxus << " matrix units " << t.mxu_rows << "x" << t.mxu_cols
                          << " (" << tiles.mxus << " used), " << t.vpus << " vector unit(s), " << t.dma_engines
                          << " DMA engines, VMEM " << t.vmem_bytes << " bytes; tile_m " << tiles.tile_m << "\n";
            } catch (const gen::TargetError& e) {
                return e.what();
            }
        }
        return "";
    }
};

// The numeric options' range. Every count and size is unsigned, and the option parser reads
// "-1" as 2^64 - 1: a negative value is refused before parsing. The largest values are far
// beyond any real workload yet small enough that no generator's tables (per tile, chip, layer or
// sequence) take more memory than the trace they describe before its first instruction is out.
struct Range {
    std::uint64_t lo, hi;
};
const std::map<std::string, Range>& numeric_ranges() {
    static const std::map<std::string, Range> r = {
        {"m", {1, 1u << 24}},       {"n", {1, 1u << 24}},         {"k", {1, 1u << 24}},
        {"batch", {1, 1u << 16}},   {"seq", {0, 1u << 24}},       {"layers", {1, 1u << 12}},
        {"tp", {1, 1024}},          {"hidden", {1, 1u << 20}},    {"heads", {1, 1u << 12}},
        {"kv-heads", {1, 1u << 12}}, {"ffn", {1, 1u << 22}},      {"chips", {1, 1u << 16}},
        {"bytes", {1, 1ull << 40}}, {"chunks", {1, 1u << 16}},    {"tile-m", {8, 1u << 20}},
        {"mxus", {1, 8}},           {"split-dma", {1, 65536}}};
    return r;
}

// A numeric option's value, whatever unsigned type it was declared with.
bool numeric_value(const boost::any& v, std::uint64_t& out) {
    if (const auto* x = boost::any_cast<unsigned>(&v)) out = *x;
    else if (const auto* y = boost::any_cast<unsigned long>(&v)) out = *y;
    else if (const auto* z = boost::any_cast<unsigned long long>(&v)) out = *z;
    else return false;
    return true;
}

// "" or what is wrong with the arguments' numbers: a negative one, or one out of its range.
std::string number_problem(const std::vector<std::string>& args, const po::variables_map& vm) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        const std::size_t eq = a.find('=');
        const std::string value = eq != std::string::npos && a.rfind("--", 0) == 0 ? a.substr(eq + 1) : a;
        if (value.size() > 1 && value[0] == '-' && (std::isdigit(static_cast<unsigned char>(value[1])) || value[1] == '.')) {
            const std::string opt = eq != std::string::npos ? a.substr(0, eq) : i > 0 ? args[i - 1] : a;
            return opt + " " + value + ": expected a number of 0 or more (every count and size is)";
        }
    }
    for (const auto& [name, r] : numeric_ranges()) {
        if (!vm.count(name) || vm[name].defaulted()) continue;
        std::uint64_t v = 0;
        if (!numeric_value(vm[name].value(), v)) continue;
        if (v < r.lo || v > r.hi)
            return "--" + name + " " + std::to_string(v) + ": expected " + std::to_string(r.lo) + ".." + std::to_string(r.hi);
    }
    return "";
}

// Parses a subcommand's arguments (with `pos`, its positional ones). False when the command is
// done: --help printed (rc 0) or a usage error reported (rc 2).
bool parse(const std::vector<std::string>& args, po::options_description& o, po::variables_map& vm, int& rc,
           const po::positional_options_description* pos = nullptr) {
    if (const std::string why = number_problem(args, po::variables_map{}); !why.empty()) {
        rc = usage(why);
        return false;
    }
    try {
        po::command_line_parser parser(args);
        parser.options(o);
        if (pos) parser.positional(*pos);
        po::store(parser.run(), vm);
        if (vm.count("help")) {
            std::cout << o;
            rc = 0;
            return false;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        rc = usage(e.what());
        return false;
    }
    if (const std::string why = number_problem(args, vm); !why.empty()) {
        rc = usage(why);
        return false;
    }
    return true;
}

int write_failed(const std::exception& ex) {
    std::cerr << "xpu_tracegen: " << ex.what() << "\n";
    return 1;
}

int gemm_cmd(const std::vector<std::string>& args) {
    gen::GemmParams p;
    Common c;
    po::options_description o("xpu_tracegen gemm: tiled matmul C[MxN] = A[MxK] B[KxN]");
    o.add_options()("m", po::value(&p.m)->required(), "rows of A and C")("n", po::value(&p.n)->required(),
                                                                            "columns of B and C")(
        "k", po::value(&p.k)->required(), "columns of A, rows of B");
    c.add(o, true);
    po::variables_map vm;
    int rc = 0;
    if (!parse(args, o, vm, rc)) return rc;
    if (std::string err = c.finish(vm); !err.empty()) return usage(err);
    if (p.m == 0 || p.n == 0 || p.k == 0) return usage("--m, --n and --k must be > 0");
    p.dtype = c.tiles.dtype;
    p.tile_m = c.tiles.tile_m;
    p.mxus = c.tiles.mxus;
    p.dim = c.tiles.dim;
    p.dma_engines = c.tiles.dma_engines;
    p.vpus = c.tiles.vpus;
    p.vec_base = c.tiles.vec_base;
    p.double_buffer = c.tiles.prefetch;
    p.late_dma = c.tiles.late_dma;
    p.false_dep = c.tiles.false_dep;
    p.bad_order = c.tiles.bad_order;
    p.split_dma = c.tiles.split_dma;
    try {
        trace::TraceWriter w(c.out);
        gen::Emitter e(w, w.add_stream(0, 0));
        gen::emit_gemm(e, p);
        e.halt();
        w.close();
        std::cout << "wrote " << c.out << ": gemm " << p.m << "x" << p.n << "x" << p.k << " " << dtype_name(p.dtype)
                  << (p.double_buffer ? " double-buffered" : " single-buffered") << "\n"
                  << "  stream chip 0 core 0: " << e.instructions() << " instructions\n"
                  << "  FLOPs " << e.flops() << "\n"
                  << "  HBM bytes read " << e.dma_bytes_from_hbm() << ", written " << e.dma_bytes_to_hbm() << "\n";
    } catch (const std::invalid_argument& ex) {
        return usage(ex.what());
    } catch (const std::exception& ex) {
        return write_failed(ex);
    }
    return 0;
}

int transformer_cmd(const std::vector<std::string>& args) {
    gen::TransformerParams p;
    Common c;
    std::string model, phase, collective = "ring";
    std::uint64_t layers = 0;
    po::options_description o("xpu_tracegen transformer: Llama-style decoder layers");
    o.add_options()
        ("model", po::value(&model)->required(), "llama2-7b, llama2-13b, llama2-70b or custom")
        ("hidden", po::value(&p.model.hidden), "custom: hidden size")
        ("heads", po::value(&p.model.heads), "custom: attention heads")
        ("kv-heads", po::value(&p.model.kv_heads), "custom: key/value heads")
        ("ffn", po::value(&p.model.ffn), "custom: MLP hidden size")
        ("layers", po::value(&layers), "layers to generate (default: all of the model's)")
        ("phase", po::value(&phase)->required(), "prefill or decode")
        ("batch", po::value(&p.batch)->required(), "sequences")
        ("seq", po::value(&p.seq)->required(), "prefill: tokens per sequence; decode: tokens already in the KV cache")
        ("tp", po::value(&p.tp), "tensor-parallel chips (default 1)")
        ("collective", po::value(&collective), "with --tp: the all-reduces' lowering, ring (default) or direct "
                                               "(every chip with every other at once: see xpu_tracegen collective --algo)");
    c.add(o, true);
    po::variables_map vm;
    int rc = 0;
    if (!parse(args, o, vm, rc)) return rc;
    if (std::string err = c.finish(vm); !err.empty()) return usage(err);
    p.tiles = c.tiles;
    if (model == "custom") {
        for (const char* k : {"hidden", "heads", "kv-heads", "ffn"})
            if (!vm.count(k)) return usage(std::string("--model custom needs --") + k);
        p.model.layers = layers ? layers : 1;
    } else {
        for (const char* k : {"hidden", "heads", "kv-heads", "ffn"})
            if (vm.count(k)) return usage(std::string("--") + k + " goes with --model custom (" + model + " has its own)");
        if (!gen::model_preset(model, p.model))
            return usage("--model: expected llama2-7b, llama2-13b, llama2-70b or custom, got '" + model + "'");
        if (layers > p.model.layers)
            return usage("--layers " + std::to_string(layers) + ": " + model + " has " + std::to_string(p.model.layers));
    }
    p.layers = layers;
    if (phase != "prefill" && phase != "decode") return usage("--phase: expected prefill or decode, got '" + phase + "'");
    p.decode = phase == "decode";
    if (collective != "ring" && collective != "direct") return usage("--collective: expected ring or direct, got '" + collective + "'");
    p.direct_all_reduce = collective == "direct";
    try {
        trace::TraceWriter w(c.out);
        auto s = gen::emit_transformer(w, p);
        w.close();
        const std::uint64_t n = p.layers ? std::min(p.layers, p.model.layers) : p.model.layers;
        std::cout << "wrote " << c.out << ": " << model << " " << phase << ", batch " << p.batch << ", seq " << p.seq
                  << ", " << n << " layer(s), tp " << p.tp << "\n"
                  << "  " << p.tp << " stream(s) (chip 0.." << p.tp - 1 << ", core 0): " << s.instructions
                  << " instructions (" << s.instructions / p.tp << " per stream)\n"
                  << "  FLOPs " << s.flops << "\n"
                  << "  HBM bytes read " << s.hbm_bytes_read << ", written " << s.hbm_bytes_written
                  << ", sent to other chips " << s.remote_bytes << "\n";
    } catch (const std::invalid_argument& ex) {
        return usage(ex.what());
    } catch (const std::exception& ex) {
        return write_failed(ex);
    }
    return 0;
}

int collective_cmd(const std::vector<std::string>& args) {
    gen::CollectiveParams p;
    Common c;
    std::string dims;
    po::options_description o("xpu_tracegen collective: ring / torus collectives as remote DMAs and flags");
    o.add_options()
        ("op", po::value(&p.op)->required(), "all-gather, reduce-scatter or all-reduce")
        ("chips", po::value(&p.chips)->required(), "chips taking part")
        ("bytes", po::value(&p.bytes)->required(), "bytes of the full tensor on each chip")
        ("algo", po::value(&p.algo)->required(), "ring, bidir-ring, torus2d, torus3d, bidir-torus2d, bidir-torus3d or direct")
        ("dims", po::value(&dims), "the torus ones: XxY (2d) or XxYxZ (3d)")
        ("chunks", po::value(&p.chunks), "pieces per shard, pipelined (default 1)")
        ("serial-collective", "planted: finish every step before the next starts");
    c.add(o, false);
    po::variables_map vm;
    int rc = 0;
    if (!parse(args, o, vm, rc)) return rc;
    if (std::string err = c.finish(vm); !err.empty()) return usage(err);
    p.tiles = c.tiles;
    p.serial = vm.count("serial-collective") > 0;
    if (!dims.empty()) {
        std::vector<unsigned> d;
        try {
            std::size_t at = 0;
            for (;;) {
                const std::size_t x = dims.find('x', at);
                std::size_t used = 0;
                const std::string part = dims.substr(at, x == std::string::npos ? std::string::npos : x - at);
                d.push_back(static_cast<unsigned>(std::stoul(part, &used)));
                if (used != part.size()) throw std::invalid_argument("");
                if (x == std::string::npos) break;
                at = x + 1;
            }
            if (d.size() < 2 || d.size() > 3) throw std::invalid_argument("");
        } catch (const std::exception&) {
            return usage("--dims: expected XxY or XxYxZ, got '" + dims + "'");
        }
        p.set_torus_dims(d);
    }
    try {
        trace::TraceWriter w(c.out);
        auto s = gen::emit_collective(w, p);
        w.close();
        std::cout << "wrote " << c.out << ": " << p.op << " " << p.algo << " over " << p.chips << " chips, " << p.bytes
                  << " bytes per chip, " << std::max(1u, p.chunks) << " chunk(s)" << (p.serial ? ", serialised" : "")
                  << "\n  " << p.chips << " streams: " << s.instructions << " instructions, " << s.remote_bytes
                  << " bytes sent between chips\n";
    } catch (const std::invalid_argument& ex) {
        return usage(ex.what());
    } catch (const std::exception& ex) {
        return write_failed(ex);
    }
    return 0;
}

int scalesim_cmd(const std::vector<std::string>& args) {
    Common c;
    std::string topo;
    po::options_description o("xpu_tracegen scalesim TOPOLOGY.csv: a SCALE-Sim topology (conv or GEMM format), one layer per row");
    o.add_options()("topology", po::value(&topo)->required(), "the SCALE-Sim topology file");
    c.add(o, false);
    po::positional_options_description pos;
    pos.add("topology", 1);
    po::variables_map vm;
    if (int rc = 0; !parse(args, o, vm, rc, &pos)) return rc;
    if (std::string err = c.finish(vm, "--topology", topo); !err.empty()) return usage(err);
    std::vector<gen::TopologyLayer> layers;
    try {
        layers = gen::read_scalesim_topology(topo);
    } catch (const gen::TopologyError& ex) {
        std::cerr << "xpu_tracegen: " << ex.what() << "\n";
        return 2;
    }
    try {
        trace::TraceWriter w(c.out);
        gen::Emitter e(w, w.add_stream(0, 0));
        gen::emit_topology(e, c.tiles, layers);
        e.halt();
        w.close();
        std::cout << "wrote " << c.out << ": " << topo << ", " << layers.size() << " layer(s)\n"
                  << "  stream chip 0 core 0: " << e.instructions() << " instructions\n"
                  << "  FLOPs " << e.flops() << "\n"
                  << "  HBM bytes read " << e.dma_bytes_from_hbm() << ", written " << e.dma_bytes_to_hbm() << "\n";
    } catch (const std::invalid_argument& ex) {
        return usage(ex.what());
    } catch (const std::exception& ex) {
        return write_failed(ex);
    }
    return 0;
}

int onnx_cmd(const std::vector<std::string>& args) {
    onnxfe::OnnxParams p;
    Common c;
    std::string unsupported = "error";
    unsigned tp = 1;
    po::options_description o("xpu_tracegen onnx MODEL.onnx: an ONNX model's graph lowered onto the chip (shapes only)");
    o.add_options()
        ("model", po::value(&p.path)->required(), "the ONNX model (weights may be absent or external)")
        ("batch", po::value(&p.batch), "size of the symbolic batch dim (default 1)")
        ("seq", po::value(&p.seq), "size of a symbolic sequence dim")
        ("tp", po::value(&tp),
         "tensor-parallel chips (default 1): one stream per chip, nodes split by the rule of docs/tracegen.md, "
         "collectives over a ring of the chips")
        ("unsupported", po::value(&unsupported),
         "error (default): an op it cannot lower stops it; skip: such nodes are left out, with a warning counting them");
    c.add(o, false);
    po::positional_options_description pos;
    pos.add("model", 1);
    po::variables_map vm;
    if (int rc = 0; !parse(args, o, vm, rc, &pos)) return rc;
    if (std::string err = c.finish(vm, "--model", p.path); !err.empty()) return usage(err);
    if (unsupported != "error" && unsupported != "skip")
        return usage("--unsupported: expected error or skip, got '" + unsupported + "'");
    if (tp < 1 || tp > 1024) return usage("--tp: expected 1..1024 chips, got " + std::to_string(tp));
    p.tp = tp;
    p.skip_unsupported = unsupported == "skip";
    p.tiles = c.tiles;
    try {
        trace::TraceWriter w(c.out);
        auto s = onnxfe::emit_onnx(w, p);
        w.close();
        std::map<std::string, unsigned> how;
        for (const auto& n : s.nodes) ++how[n.how];
        std::cout << "wrote " << c.out << ": " << p.path << ", batch " << p.batch;
        if (p.seq) std::cout << ", seq " << p.seq;
        std::cout << ", " << s.nodes.size() << " nodes (";
        bool first = true;
        for (const auto& [k, v] : how) {
            std::cout << (first ? "" : ", ") << v << " " << k;
            first = false;
        }
        std::cout << ")";
        if (tp > 1) std::cout << ", tp " << tp;
        std::cout << "\n";
        if (tp == 1) {
            std::cout << "  stream chip 0 core 0: " << s.instructions << " instructions\n";
        } else {
            std::cout << "  " << tp << " streams (chip 0.." << tp - 1 << ", core 0): " << s.instructions << " instructions (";
            for (unsigned c = 0; c < tp; ++c) std::cout << (c ? ", " : "") << s.chip_instructions[c];
            std::cout << ")\n";
            std::map<std::string, unsigned> rules;
            for (const auto& n : s.nodes)
                if (n.how == "mxu") ++rules[n.split];
            std::cout << "  matrix-unit nodes split:";
            bool first = true;
            for (const auto& [rule, k] : rules) {
                std::cout << (first ? " " : ", ") << k << " " << rule;
                first = false;
            }
            std::cout << "\n  communication per chip: " << s.all_reduces << " all-reduce(s), " << s.all_gathers
                      << " all-gather(s), " << s.halo_exchanges << " halo exchange(s); bytes sent between chips (all chips) "
                      << s.remote_bytes << "\n";
        }
        std::cout << "  FLOPs " << s.flops << (tp > 1 ? " (all chips)" : "") << "\n"
                  << "  HBM bytes read " << s.hbm_bytes_read << ", written " << s.hbm_bytes_written << "\n";
        if (!s.uneven.empty())
            std::cerr << "xpu_tracegen: warning: --tp " << tp << " does not divide a split dim of " << s.uneven.size()
                      << " node(s) (e.g. '" << s.uneven.front() << "'): their shards differ in size by one along it, and "
                      << "collectives move the padded size\n";
        if (!s.skipped.empty()) {
            unsigned total = 0;
            std::string list;
            for (const auto& [op, k] : s.skipped) {
                total += k;
                list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(k);
            }
            std::cerr << "xpu_tracegen: warning: --unsupported=skip left out " << total << " node(s) it cannot lower: " << list
                      << "\n";
        }
    } catch (const onnxfe::OnnxError& ex) {
        std::cerr << "xpu_tracegen: " << ex.what() << "\n";
        return 2;
    } catch (const std::invalid_argument& ex) {
        return usage(ex.what());
    } catch (const std::exception& ex) {
        return write_failed(ex);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    trace::remove_temp_files_on_signals();  // an interrupted trace leaves no OUT.bin.tmp behind
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << "usage: xpu_tracegen WORKLOAD [options] -o OUT.bin\n"
                     "workloads (each has --help):\n"
                     "  gemm          tiled matmul\n"
                     "  transformer   Llama-style decoder layers, prefill or decode, optional tensor parallelism\n"
                     "  collective    all-gather / reduce-scatter / all-reduce over chips\n"
                     "  onnx          an ONNX model (shapes only) lowered onto the chip\n"
                     "  scalesim      a SCALE-Sim topology (conv or GEMM format), one layer per row\n";
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << "xpu_tracegen " << XPU_VERSION << "\n";
        return 0;
    }
    std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "gemm") return gemm_cmd(args);
    if (cmd == "transformer") return transformer_cmd(args);
    if (cmd == "collective") return collective_cmd(args);
    if (cmd == "onnx") return onnx_cmd(args);
    if (cmd == "scalesim") return scalesim_cmd(args);
    return usage("unknown workload '" + cmd + "'");
}
