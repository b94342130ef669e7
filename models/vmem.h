// Vmem: the on-chip vector memory (scratchpad). `ports` ports of `port_bytes_per_cycle` each:
// together a BandwidthCalendar of ports x width bytes a cycle, and a single request moves no
// faster than one port (ceil(bytes / width) cycles). Data is there `latency` cycles after it
// has moved. It serves the global address range [base, base + capacity); anything else is an
// address error.
#pragma once

#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "models/bandwidth_calendar.h"
#include "models/params.h"
#include "models/timed_memory.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct VmemParams {
    std::uint64_t capacity = 32ull << 20;
    unsigned ports = 4;
    unsigned port_bytes_per_cycle = 1024;
    unsigned latency = 2;

    void declare(ParamVisitor& v) {
        v.bytes("capacity", capacity, 1024, 1ull << 40, "bytes of on-chip vector memory");
        v.u32("ports", ports, 1, 256, "ports", "independent access ports");
        v.u32("port_bytes_per_cycle", port_bytes_per_cycle, 1, 1u << 20, "bytes/cycle", "bytes per cycle per port");
        v.u32("latency", latency, 0, 1000, "cycles", "access latency after the transfer, cycles");
    }
};

// The parameters and what the builder derives.
struct VmemConfig : VmemParams {
    Tick cycle = 1000;
    std::uint64_t base = 0;  // where the address map put it
};

class Vmem : public XpuModule, public TimedMemory {
public:
    tlm_utils::multi_passthrough_target_socket<Vmem, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        port;

    Vmem(const sc_core::sc_module_name& n, const VmemConfig& cfg);
    const char* kind() const override { return "Vmem"; }
    Role role() const override { return Role::Vmem; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.capacity = cfg_.capacity;
        f.bytes_read = bytes_read_;
        f.bytes_written = bytes_written_;
        return f;
    }
    std::optional<Tick> busy_time() const override;
    std::vector<Stat> stats() const override;
    std::uint64_t bytes_read() const { return bytes_read_; }
    std::uint64_t bytes_written() const { return bytes_written_; }
    const VmemConfig& config() const { return cfg_; }
    // The timing of one request (b_transport's, without the payload): models/timed_memory.h.
    MemTiming access(const MemAccess& a) override;

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
    bool in_range(std::uint64_t addr, std::uint64_t len) const {
        return !(addr < cfg_.base || addr - cfg_.base > cfg_.capacity || len > cfg_.capacity - (addr - cfg_.base));
    }
    VmemConfig cfg_;
    BandwidthCalendar ports_;
    int port_shift_ = -1;  // log2(port_bytes_per_cycle) when a power of two, else -1 (divide)
    std::uint64_t bytes_read_ = 0, bytes_written_ = 0, requests_ = 0;
};

}  // namespace xpu
