// A platform bound by hand, no YAML: a host that hands DMA descriptors to a DmaEngine, whose
// chunks go through an Interconnect to an HbmController and a Vmem, and whose completion flag
// lands in SyncFlags. Each model is built from its plain config struct (the defaults are the
// declared ones). The workload moves 4 MiB from HBM to VMEM in 4 descriptors; the check: every
// byte arrived, the flag counts the 4 completions, and the time is at least what the slower of
// the DMA engine and the HBM allows (never faster than the configured bandwidth).
#include <algorithm>
#include <cstdio>
#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/dma_engine.h"
#include "models/hbm_controller.h"
#include "models/interconnect.h"
#include "models/sync_flags.h"
#include "models/unit_command.h"
#include "models/vmem.h"

using namespace xpu;

namespace {
constexpr std::uint64_t kHbmBase = 1ull << 40, kDmaBytes = 1ull << 20, kDescriptors = 4;

// Hands the DMA engine its descriptors at time 0, as a scalar core would (UnitCommand).
struct Host : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<Host> socket;
    Instruction in[kDescriptors];
    SC_HAS_PROCESS(Host);
    explicit Host(const sc_core::sc_module_name& n) : sc_core::sc_module(n), socket("socket") { SC_THREAD(run); }
    void run() {
        for (std::uint64_t i = 0; i < kDescriptors; ++i) {
            in[i].op = Opcode::Dma;
            in[i].mem_src = {Space::Hbm, kLocalChip, i * kDmaBytes};
            in[i].mem_dst = {Space::Vmem, kLocalChip, i * kDmaBytes};
            in[i].bytes = kDmaBytes;
            in[i].flag = 1;
            in[i].value = 1;
            in[i].set(kMemSrc | kMemDst | xpu::kBytes | kFlag | kValue);
            tlm::tlm_generic_payload gp;
            auto* cmd = new UnitCommand;
            cmd->in = &in[i];
            cmd->index = i;
            gp.set_command(tlm::TLM_IGNORE_COMMAND);
            gp.set_extension(cmd);
            sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
            socket->b_transport(gp, delay);
            gp.clear_extension(cmd);
            delete cmd;
        }
    }
};
}  // namespace

int sc_main(int, char*[]) {
    DmaEngineConfig dc;
    dc.space_base = {0, kHbmBase};  // global addresses of VMEM and HBM
    HbmConfig hc;
    hc.base = kHbmBase;
    VmemConfig vc;
    InterconnectConfig ic;
    ic.routes = {{kHbmBase, hc.capacity, 0}, {0, vc.capacity, 1}};  // address ranges of out[0] (HBM) and out[1] (VMEM)
    SyncFlagsConfig fc;

    Host host("host");
    DmaEngine dma("dma0", dc);
    Interconnect noc("noc", ic);
    HbmController hbm("hbm", hc);
    Vmem vmem("vmem", vc);
    SyncFlags flags("flags", fc);
    host.socket.bind(dma.cmd);
    dma.mem.bind(noc.in);
    dma.flags.bind(flags.port);
    noc.out.bind(hbm.port);
    noc.out.bind(vmem.port);

    sc_core::sc_start();
    const double ns = sc_core::sc_time_stamp().to_seconds() * 1e9;
    const double bytes = static_cast<double>(kDmaBytes * kDescriptors);
    const double floor_ns = bytes / std::min(dc.bandwidth_gbps, hc.channels * hc.channel_bandwidth_gbps);  // GB/s = bytes/ns
    std::printf("moved %llu bytes HBM -> VMEM in %.3f ns (%.1f GB/s; floor %.3f ns); HBM read %llu, VMEM written %llu; flag 1 = %lld\n",
                static_cast<unsigned long long>(dma.bytes_moved()), ns, bytes / ns, floor_ns,
                static_cast<unsigned long long>(hbm.bytes_read()), static_cast<unsigned long long>(vmem.bytes_written()),
                static_cast<long long>(flags.value(1)));
    const bool ok = dma.bytes_moved() == bytes && hbm.bytes_read() == bytes && vmem.bytes_written() == bytes && flags.value(1) == static_cast<std::int64_t>(kDescriptors) &&
                    ns >= floor_ns;
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
