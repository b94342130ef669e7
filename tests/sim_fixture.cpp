#include "tests/sim_fixture.h"

#include <filesystem>
#include <unistd.h>

#include "models/sim_time.h"
#include "traces/trace_writer.h"

namespace xpu::test {

std::string source_path(const std::string& rel) { return std::string(XPU_SOURCE_DIR) + "/" + rel; }

std::string temp_path(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("xpusim-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
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
