// xpu_tracegen: generate instruction traces of ML workloads, lowered as a compiler would.
//   xpu_tracegen gemm --m M --n N --k K [--dtype bf16|f32|int8] [--tile-m 1024] [--mxus 8]
//                     [--double-buffer | --no-double-buffer] -o g.bin
// Exit codes: 0 ok, 1 cannot write the output, 2 usage.
#include <iostream>

#include <boost/program_options.hpp>

#include "traces/gen/gemm.h"
#include "traces/trace_writer.h"

namespace po = boost::program_options;
using namespace xpu;

namespace {

int usage(const std::string& msg) {
    std::cerr << "xpu_tracegen: " << msg << " (see xpu_tracegen --help)\n";
    return 2;
}

int gemm_cmd(const std::vector<std::string>& args) {
    gen::GemmParams p;
    std::string out, dtype = "bf16";
    po::options_description o("xpu_tracegen gemm: tiled matmul C[MxN] = A[MxK] B[KxN]");
    o.add_options()
        ("m", po::value(&p.m)->required(), "rows of A and C")
        ("n", po::value(&p.n)->required(), "columns of B and C")
        ("k", po::value(&p.k)->required(), "columns of A, rows of B")
        ("dtype", po::value(&dtype), "bf16 (default), f32 or int8")
        ("tile-m", po::value(&p.tile_m), "rows of A per block (multiple of 8, default 1024)")
        ("mxus", po::value(&p.mxus), "matrix units used (1..8, default 8 as in configs/xpu.yaml)")
        ("double-buffer", "prefetch the next step's tiles (default)")
        ("no-double-buffer", "load each step's tiles just before use")
        ("output,o", po::value(&out)->required(), "output trace (.bin)")
        ("help,h", "this help");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(o).run(), vm);
        if (vm.count("help")) {
            std::cout << o;
            return 0;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        return usage(e.what());
    }
    auto dt = dtype_from_name(dtype);
    if (!dt || (*dt != DType::Bf16 && *dt != DType::F32 && *dt != DType::Int8))
        return usage("--dtype: expected bf16, f32 or int8, got '" + dtype + "'");
    p.dtype = *dt;
    if (vm.count("no-double-buffer")) p.double_buffer = false;
    if (p.m == 0 || p.n == 0 || p.k == 0) return usage("--m, --n and --k must be > 0");
    if (p.tile_m == 0 || p.tile_m % 8) return usage("--tile-m must be a positive multiple of 8");
    if (p.mxus < 1 || p.mxus > 8) return usage("--mxus must be 1..8");
    try {
        trace::TraceWriter w(out);
        std::size_t s = w.add_stream(0, 0);
        gen::Emitter e(w, s);
        gen::emit_gemm(e, p);
        e.halt();
        w.close();
        auto x = gen::gemm_expected(p);
        std::cout << "wrote " << out << ": gemm " << p.m << "x" << p.n << "x" << p.k << " " << dtype_name(p.dtype)
                  << (p.double_buffer ? " double-buffered" : " single-buffered") << "\n"
                  << "  stream chip 0 core 0: " << e.instructions() << " instructions\n"
                  << "  FLOPs " << e.flops() << " (analytic " << x.flops << ")\n"
                  << "  HBM bytes read " << e.dma_bytes_from_hbm() << ", written " << e.dma_bytes_to_hbm() << "\n";
    } catch (const std::exception& ex) {
        std::cerr << "xpu_tracegen: " << ex.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << "usage: xpu_tracegen WORKLOAD [options] -o OUT.bin\n"
                     "workloads:\n  gemm   tiled matmul (xpu_tracegen gemm --help)\n";
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << "xpu_tracegen " << XPU_VERSION << "\n";
        return 0;
    }
    std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "gemm") return gemm_cmd(args);
    return usage("unknown workload '" + cmd + "'");
}
