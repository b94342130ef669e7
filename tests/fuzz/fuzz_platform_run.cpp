// Fuzz target: a platform description through the builder and a short run. The input is a
// YAML description, optionally followed by a line "%%%" and a trace in text form (.xtr; when
// absent or when it does not assemble, a built-in tiny trace). The description is loaded in
// this process; a description that loads is elaborated, its trace checked and run for at most
// 10 us simulated in a forked child, because SystemC allows one elaboration per process. The
// child may only end normally or with the errors a bad input earns (ConfigError, TraceError,
// a run error); a crash, a sanitizer report, an unexpected exception or a run longer than 20 s
// of wall time in the child is reported here as a broken invariant (libFuzzer keeps the
// input). Platforms of more than 64 chips are not elaborated (seconds each: the fuzzer would
// spend its time on them); their loading is still fuzzed.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemc>

#include "platform/builder.h"
#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "platform/simulation.h"
#include "tests/fuzz/fuzz_util.h"
#include "traces/trace_text.h"

using namespace xpu::platform;

// libsystemc wants an sc_main; the children elaborate without it.
int sc_main(int, char*[]) { return 0; }

namespace {

constexpr const char* kDefaultTrace = R"(.xtr 1.0
.stream chip=0 core=0
dma src=hbm:0x0 dst=vmem:0x0 bytes=4096 flag=1
swait flag=1 cond=ge val=1
vld d=v1 src=vmem:0x0 bytes=1024
mpush s0=v1 shape=1x16x16
matmul d=m0 s0=v1 shape=8x16x16 dtype=bf16
mpop d=v2 s0=m0 shape=8x16x1
valu d=v3 s0=v2 s1=v1
vst s0=v3 dst=vmem:0x1000 bytes=1024
sadd flag=2 val=1
halt
)";

enum ChildExit { kFine = 0, kUnexpected = 70 };
constexpr int kChildLimitMs = 20000;  // wall time allowed to elaborate, check and run 10 us

// In the child: elaborate, check, run 10 us. Never returns.
[[noreturn]] void run_child(const PlatformConfig& cfg, const std::string& trace) {
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    int code = kFine;
    try {
        Simulation sim(cfg, trace);
        if (sim.check_trace()) {
            RunOptions ro;
            ro.max_sim_time = 10'000'000;  // 10 us in ps
            sim.run(ro);
        }
    } catch (const ConfigError&) {
    } catch (const xpu::trace::TraceError&) {
    } catch (const sc_core::sc_report& e) {
        const std::string type = e.get_msg_type();
        if (type != "xpusim/run" && type != "xpusim/trace") {
            std::fprintf(stderr, "fuzz: unexpected SystemC report: %s\n", e.what());
            code = kUnexpected;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz: unexpected exception: %s\n", e.what());
        code = kUnexpected;
    }
    std::fflush(stderr);
    _exit(code);  // not exit(): the parent's atexit handlers (its scratch folder) are not ours
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto sep = text.find("\n%%%\n");
    const std::string yaml = text.substr(0, sep);
    const std::string xtr = sep == std::string::npos ? kDefaultTrace : text.substr(sep + 5);
    const std::string in = xpu::fuzz::scratch("in.yaml");
    xpu::fuzz::write_file(in, reinterpret_cast<const std::uint8_t*>(yaml.data()), yaml.size());
    PlatformConfig cfg;
    try {
        cfg = load_platform(in);
    } catch (const ConfigError&) {
        return 0;
    }
    if (cfg.chips > 64) return 0;
    const std::string xtr_path = xpu::fuzz::scratch("in.xtr"), bin = xpu::fuzz::scratch("in.bin");
    xpu::fuzz::write_file(xtr_path, reinterpret_cast<const std::uint8_t*>(xtr.data()), xtr.size());
    try {
        xpu::trace::assemble(xtr_path, bin);
    } catch (const xpu::trace::TraceError&) {
        const std::string d = kDefaultTrace;
        xpu::fuzz::write_file(xtr_path, reinterpret_cast<const std::uint8_t*>(d.data()), d.size());
        xpu::trace::assemble(xtr_path, bin);
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) xpu::fuzz::broken("fork failed");
    if (pid == 0) run_child(cfg, bin);
    // Wait for the child's end without polling (a 5 ms sleep per check capped the target at
    // 200 inputs per second): a pidfd becomes readable when the child exits.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) xpu::fuzz::broken("pidfd_open failed");
    pollfd pfd{pidfd, POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kChildLimitMs);
    int ready;
    do {  // libFuzzer's own timer signals interrupt the wait: wait for what is left
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        ready = poll(&pfd, 1, static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count())));
    } while (ready < 0 && errno == EINTR);
    close(pidfd);
    int status = 0;
    if (ready == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        xpu::fuzz::broken("elaborating and running 10 us took more than 20 s (a hang?)");
    }
    if (ready < 0 || waitpid(pid, &status, 0) != pid) xpu::fuzz::broken("waiting for the child failed");
    if (WIFSIGNALED(status)) xpu::fuzz::broken("the child died of signal " + std::to_string(WTERMSIG(status)));
    if (WEXITSTATUS(status) != kFine) xpu::fuzz::broken("the child ended with status " + std::to_string(WEXITSTATUS(status)));
    return 0;
}
