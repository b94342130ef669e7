#include "tests/sim_fixture.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "models/sim_time.h"
#include "traces/trace_writer.h"

namespace xpu::test {

std::string source_path(const std::string& rel) { return std::string(XPU_SOURCE_DIR) + "/" + rel; }

std::string file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

namespace {
// The test process's own temp folder, removed when the process exits (each test runs in its own
// process, so nothing outlives the test that wrote it; without this, every test left a folder).
struct ProcessTempDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("xpusim-test-" + std::to_string(::getpid()));
    ~ProcessTempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};
}  // namespace

std::string temp_path(const std::string& name) {
    static ProcessTempDir dir;
    std::filesystem::create_directories(dir.path);
    return (dir.path / name).string();
}

std::string write_trace(const std::string& name, const std::function<void(gen::Emitter&)>& body) {
    std::string path = temp_path(name);
    trace::TraceWriter w(path);
    std::size_t s = w.add_stream(0, 0);
    gen::Emitter e(w, s);
    e.annotate("test");
    body(e);
    e.halt();
    w.close();
    return path;
}

GemmTrace gemm_trace(const std::string& name, const gen::GemmParams& p) {
    GemmTrace t;
    t.path = temp_path(name);
    trace::TraceWriter w(t.path);
    gen::Emitter e(w, w.add_stream(0, 0));
    gen::emit_gemm(e, p);
    e.halt();
    w.close();
    t.flops = e.flops();
    t.hbm_read = e.dma_bytes_from_hbm();
    t.hbm_written = e.dma_bytes_to_hbm();
    return t;
}

std::string transformer_trace(const std::string& name, const gen::TransformerParams& p, gen::TransformerSummary* summary) {
    std::string path = temp_path(name);
    trace::TraceWriter w(path);
    auto s = gen::emit_transformer(w, p);
    w.close();
    if (summary) *summary = s;
    return path;
}

std::string collective_trace(const std::string& name, const gen::CollectiveParams& p) {
    std::string path = temp_path(name);
    trace::TraceWriter w(path);
    gen::emit_collective(w, p);
    w.close();
    return path;
}

std::unique_ptr<Run> simulate(const std::string& trace, const std::vector<std::string>& sets,
                              const std::string& platform, bool record) {
    auto r = std::make_unique<Run>();
    r->cfg = platform::load_platform(source_path(platform), sets);
    r->sim = std::make_unique<platform::Simulation>(r->cfg, trace);
    if (record) r->sim->platform().set_recorder(&r->rec);
    r->result = r->sim->run();
    return r;
}

Tick cycle_of(const Run& r) { return cycle_ticks(r.cfg.clock_ghz); }

}  // namespace xpu::test
