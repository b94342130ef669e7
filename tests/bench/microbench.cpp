// Google Benchmark micro-benchmarks of the hot paths that set simulation and generation speed:
// trace encoding and decoding, the bandwidth calendar that every memory and link request goes
// through, and workload generation. Run by scripts/bench.sh; targets are in the README of the
// benchmark output (items_per_second), never asserted in unit tests.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <unistd.h>

#include "models/bandwidth_calendar.h"
#include "traces/gen/gemm.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

using namespace xpu;

namespace {

std::string scratch(const char* name) { return "/tmp/xpu-microbench-" + std::to_string(::getpid()) + "-" + name; }

// A GEMM trace of about `instructions` instructions (compiler-style mix).
std::string make_trace(std::int64_t instructions, std::uint64_t* written) {
    std::string path = scratch("trace.bin");
    gen::GemmParams p;
    p.m = 1024;
    p.n = 1024;
    p.k = std::max<std::int64_t>(128, instructions / 12 / 128 * 128);
    trace::TraceWriter w(path);
    gen::Emitter e(w, w.add_stream(0, 0));
    gen::emit_gemm(e, p);
    e.halt();
    w.close();
    *written = e.instructions();
    return path;
}

void BM_TraceGenerateGemm(benchmark::State& st) {
    std::uint64_t n = 0;
    for (auto _ : st) {
        std::string path = make_trace(st.range(0), &n);
        std::remove(path.c_str());
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(n) * st.iterations());
}
BENCHMARK(BM_TraceGenerateGemm)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_TraceDecode(benchmark::State& st) {
    std::uint64_t n = 0;
    std::string path = make_trace(st.range(0), &n);
    std::vector<Instruction> buf(256);
    for (auto _ : st) {
        auto f = trace::TraceFile::open(path);
        trace::StreamReader r(f, 0);
        std::uint64_t got = 0;
        while (std::size_t k = r.read(buf.data(), buf.size())) got += k;
        benchmark::DoNotOptimize(got);
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(n) * st.iterations());
    std::remove(path.c_str());
}
BENCHMARK(BM_TraceDecode)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// Streaming requests, as a DMA engine sends them to an HBM channel: 1 KiB pieces back to back.
void BM_CalendarStreaming(benchmark::State& st) {
    BandwidthCalendar cal(37.5 / 1000.0, 64'000);
    Tick t = 0;
    for (auto _ : st) {
        Tick done = cal.reserve(t, 1024, t > 1'000'000 ? t - 1'000'000 : 0);
        benchmark::DoNotOptimize(done);
        t += 20'000;
    }
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_CalendarStreaming);

// Out-of-order requests (temporal decoupling): a future reservation, then one for the past.
void BM_CalendarOutOfOrder(benchmark::State& st) {
    BandwidthCalendar cal(37.5 / 1000.0, 64'000);
    Tick t = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(cal.reserve(t + 900'000, 1024, t));
        benchmark::DoNotOptimize(cal.reserve(t, 1024, t));
        t += 60'000;
    }
    st.SetItemsProcessed(2 * st.iterations());
}
BENCHMARK(BM_CalendarOutOfOrder);

}  // namespace

// libsystemc wants an sc_main when it provides main(); these benchmarks never start the kernel.
int sc_main(int, char**) { return 0; }

BENCHMARK_MAIN();
