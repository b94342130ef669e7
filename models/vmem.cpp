#include "models/vmem.h"

#include "models/sim_time.h"

namespace xpu {

Vmem::Vmem(const sc_core::sc_module_name& n, const VmemConfig& cfg)
    : XpuModule(n),
      port("port"),
      cfg_(cfg),
      ports_(static_cast<double>(cfg.ports) * cfg.port_bytes_per_cycle / static_cast<double>(cfg.cycle),
             16 * cfg.cycle) {
    port.register_b_transport(this, &Vmem::b_transport);
    expose_target("port", port, true, false);
}

void Vmem::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    std::uint64_t addr = gp.get_address();
    std::uint64_t len = gp.get_data_length();
    if (addr < cfg_.base || addr - cfg_.base > cfg_.capacity || len > cfg_.capacity - (addr - cfg_.base)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    Tick arrival = now_ticks() + delay.value();
    const bool write = gp.is_write();
    // A reducing write reads and writes every byte.
    const std::uint64_t moved_bytes = write && gp.get_extension<ReduceWrite>() ? 2 * len : len;
    Tick one_port = ((moved_bytes + cfg_.port_bytes_per_cycle - 1) / cfg_.port_bytes_per_cycle) * cfg_.cycle;
    Tick moved = max_tick(ports_.reserve(arrival, moved_bytes, now_ticks()), arrival + one_port);
    Tick done = moved + cfg_.latency * cfg_.cycle;
    (write ? bytes_written_ : bytes_read_) += len;
    if (moved_bytes > len) bytes_read_ += len;
    ++requests_;
    if (recorder_) recorder_->on_mem(mem_event(gp, name(), write, addr, len, arrival, done));
    delay = to_sc(done - now_ticks());
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::optional<Tick> Vmem::busy_time() const {
    // Share of the ports' combined bandwidth used: 100% means every port busy all the time.
    return ports_.busy();
}

std::vector<Stat> Vmem::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {
        {"bytes_read", d(bytes_read_), true, "bytes read (vld, DMA from VMEM)", "bytes"},
        {"bytes_written", d(bytes_written_), true, "bytes written (vst, DMA into VMEM)", "bytes"},
        {"requests", d(requests_), true, "transactions served", "transactions"},
        {"capacity_bytes", d(cfg_.capacity), true, "configured capacity", "bytes"},
    };
}

}  // namespace xpu
