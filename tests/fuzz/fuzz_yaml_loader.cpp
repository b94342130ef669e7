// Fuzz target: the platform description loader. Any bytes as a YAML file through
// load_platform() (and, from the first line of the input, one --set argument). Must never
// crash, hang or abort; the only error allowed is ConfigError. Invariant for a description
// that loads: its --dump-config loads again and dumps the same (apart from the comment line
// naming the file).
#include <cstdint>
#include <string>

#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "tests/fuzz/fuzz_util.h"

using namespace xpu::platform;

// libsystemc wants an sc_main; nothing here elaborates.
int sc_main(int, char*[]) { return 0; }

namespace {
std::string without_first_line(const std::string& s) {
    auto nl = s.find('\n');
    return nl == std::string::npos ? "" : s.substr(nl + 1);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string in = xpu::fuzz::scratch("in.yaml");
    xpu::fuzz::write_file(in, data, size);
    // A first line "#set KEY=VALUE" is also applied as a --set override.
    std::vector<std::string> sets;
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (text.rfind("#set ", 0) == 0) sets.push_back(text.substr(5, text.find('\n') - 5));
    PlatformConfig cfg;
    try {
        cfg = load_platform(in, sets);
    } catch (const ConfigError&) {
        return 0;
    }
    const std::string dump = dump_config(cfg);
    const std::string again = xpu::fuzz::scratch("dump.yaml");
    xpu::fuzz::write_file(again, reinterpret_cast<const std::uint8_t*>(dump.data()), dump.size());
    try {
        PlatformConfig cfg2 = load_platform(again);
        if (without_first_line(dump_config(cfg2)) != without_first_line(dump))
            xpu::fuzz::broken("the dump of a dumped configuration differs:\n" + dump + "\n---\n" + dump_config(cfg2));
    } catch (const ConfigError& e) {
        xpu::fuzz::broken(std::string("--dump-config output does not load back: ") + e.what() + "\n" + dump);
    }
    return 0;
}
