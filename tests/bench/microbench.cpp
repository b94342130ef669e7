// Google Benchmark micro-benchmarks of the hot paths that set simulation and generation speed:
// trace encoding and decoding, the bandwidth calendar that every memory and link request goes
// through, and workload generation; and the reading of a transaction log by the analysis.
// Run by scripts/bench.sh; targets are in the README of the benchmark output
// (items_per_second), never asserted in unit tests.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "analysis/run_data.h"
#include "platform/txlog_writer.h"
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

// A run folder for the analysis: a GEMM trace (its copy, txlog.trace.bin) and a transaction
// log with about the records a run of it writes (a life and a unit operation per instruction,
// and every 4th an HBM piece and a VMEM transaction), at made-up but plausible times.
std::string make_run(std::int64_t instructions, std::uint64_t* records) {
    std::uint64_t n = 0;
    const std::string trace = make_trace(instructions, &n);
    const std::string dir = scratch("run");
    std::filesystem::create_directories(dir);
    std::filesystem::rename(trace, dir + "/txlog.trace.bin");
    const char* mxu = "xpu.chip0.core0.mxu0";
    const char* hbm = "xpu.chip0.hbm";
    const char* vmem = "xpu.chip0.core0.vmem";
    const char* dma = "xpu.chip0.dma0";
    txlog::Header header;
    header.meta = {{"issue_slot_ps.0.0", "476"}};
    header.units = {{mxu, "MatrixUnit", Role::Matrix, 0, 0, 0}, {hbm, "HbmController", Role::Hbm, 0, 1200, 0},
                                         {vmem, "Vmem", Role::Vmem, 0, 0, 32u << 20}, {dma, "DmaEngine", Role::Dma, 0, 300, 0}};
    txlog::Writer w(dir + "/txlog.bin", header);
    Tick t = 0;
    for (std::uint64_t i = 0; i < n; ++i, t += 800) {
        InstrEvent in;
        in.index = i;
        in.arrival = t;
        in.ready = t + 100;
        in.issue = t + 476;
        in.complete = t + 3000;
        w.on_instruction(in);
        UnitOpEvent op;
        op.unit = mxu;
        op.index = i;
        op.op = Opcode::MatMul;
        op.accept = t + 476;
        op.start = t + 500;
        op.end = t + 2500;
        op.complete = t + 3000;
        w.on_unit_op(op);
        if (i % 4) continue;
        w.on_hbm_channel({hbm, static_cast<std::uint16_t>(i % 16), 512, t, t + 200, t + 900});
        MemEvent m;
        m.target = vmem;
        m.initiator = dma;
        m.addr = i * 512 % (32u << 20);
        m.bytes = 512;
        m.arrival = t;
        m.done = t + 700;
        w.on_mem(m);
    }
    w.finish(t + 3000, 0);
    *records = w.records();
    return dir;
}

// The analysis' reader: the log decoded and the trace read into RunData (load_run).
void BM_LoadRun(benchmark::State& st) {
    std::uint64_t records = 0;
    const std::string dir = make_run(st.range(0), &records);
    for (auto _ : st) {
        const analysis::RunData run = analysis::load_run(dir);
        benchmark::DoNotOptimize(run.records);
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(records) * st.iterations());
    std::filesystem::remove_all(dir);
}
BENCHMARK(BM_LoadRun)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

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
