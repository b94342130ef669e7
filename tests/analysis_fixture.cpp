#include "tests/analysis_fixture.h"

#include <filesystem>
#include <fstream>

#include "platform/platform_config.h"
#include "platform/txlog_writer.h"
#include "models/sim_time.h"
#include "platform/txlog_meta.h"

namespace xpu::test {

namespace fs = std::filesystem;

Analyzed analyzed(const std::string& trace, const std::vector<std::string>& sets, const std::string& platform,
                  std::size_t max_suggestions, bool effective_platform) {
    Analyzed r;
    r.run = std::make_unique<Run>();
    r.run->cfg = platform::load_platform(source_path(platform), sets);
    r.run->sim = std::make_unique<platform::Simulation>(r.run->cfg, trace);
    const fs::path dir = temp_path("out");
    fs::create_directories(dir);
    fs::copy_file(trace, dir / "txlog.trace.bin", fs::copy_options::overwrite_existing);
    txlog::Writer log((dir / "txlog.bin").string(), txlog_header(r.run->sim->platform(), trace, platform));
    RecorderFanOut both;
    both.add(&log);
    both.add(&r.run->rec);
    r.run->sim->platform().set_recorder(&both);
    r.run->result = r.run->sim->run();
    const unsigned status = r.run->result.stop == platform::StopReason::Deadlock ? 1 : 0;
    log.finish(ns_to_ticks(r.run->result.simulated_ns), status);
    r.run->sim->platform().set_recorder(nullptr);
    if (effective_platform) std::ofstream(dir / "platform.yaml") << platform::dump_config(r.run->cfg);
    // Every HBM piece held: the tests count them, and draw the series at other resolutions.
    analysis::LoadOptions keep;
    keep.keep_hbm_records = true;
    r.data = analysis::load_run(dir.string(), keep);
    analysis::AnalyzeOptions opt;
    opt.max_suggestions = max_suggestions;
    r.a = analysis::analyze(r.data, opt);
    return r;
}

}  // namespace xpu::test
