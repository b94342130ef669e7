// Fuzz target: the transaction-log reader (analysis/run_data.cpp, load_run). The input is a
// run's txlog.bin, optionally followed by its txlog.trace.bin (split at the last "XPUTRACE"
// magic; without one, the trace of the seeds). Must never crash, hang, abort or allocate by
// what a table claims rather than by what the files hold (libFuzzer's -rss_limit_mb); the only
// error allowed is LogError.
#include <cstdint>
#include <string>

#include "analysis/run_data.h"
#include "tests/fuzz/fuzz_util.h"

using namespace xpu::analysis;

namespace {
// A trace of one stream, two instructions (nop, halt): used when the input carries none.
const unsigned char kDefaultTrace[] = {
#include "tests/fuzz/txlog_default_trace.inc"
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto at = text.rfind("XPUTRACE");
    const std::string dir = xpu::fuzz::scratch("run");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::size_t log_bytes = at == std::string::npos || at == 0 ? size : at;
    xpu::fuzz::write_file(dir + "/txlog.bin", data, log_bytes);
    if (log_bytes < size)
        xpu::fuzz::write_file(dir + "/txlog.trace.bin", data + log_bytes, size - log_bytes);
    else
        xpu::fuzz::write_file(dir + "/txlog.trace.bin", kDefaultTrace, sizeof kDefaultTrace);
    try {
        RunData run = load_run(dir);
        (void)run;
    } catch (const LogError&) {
    }
    return 0;
}
