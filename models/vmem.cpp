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
    const unsigned w = cfg.port_bytes_per_cycle;
    if (w && (w & (w - 1)) == 0)
        for (port_shift_ = 0; (1u << port_shift_) < w;) ++port_shift_;
    port.register_get_direct_mem_ptr(this, &Vmem::get_direct_mem_ptr);
    expose_target("port", port, true, false);
}

void Vmem::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    MemAccess a;
    a.addr = gp.get_address();
    a.len = gp.get_data_length();
    if (!in_range(a.addr, a.len)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    a.now = now_ticks();
    a.arrival = a.now + delay.value();
    a.write = gp.is_write();
    a.reduce = a.write && gp.get_extension<ReduceWrite>();
    a.origin = gp.get_extension<TxnOrigin>();
    delay = to_sc(access(a).done - a.now);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

// The timing probe (models/timed_memory.h): this VMEM serves the whole range.
bool Vmem::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
    dmi.allow_none();  // no data access: timing only
    auto* path = gp.get_extension<TimedPath>();
    if (path && in_range(gp.get_address(), gp.get_data_length())) path->target = this;
    return false;
}

MemTiming Vmem::access(const MemAccess& a) {
    const Tick arrival = a.arrival;
    const bool write = a.write;
    const std::uint64_t len = a.len;
    // A reducing write reads and writes every byte.
    const std::uint64_t moved_bytes = a.reduce ? 2 * len : len;
    // ceil(bytes / port width) cycles; a shift for the usual power-of-two width (a 64-bit
    // division per request was a measurable share of a DMA chunk).
    const std::uint64_t w1 = moved_bytes + cfg_.port_bytes_per_cycle - 1;
    const Tick one_port = (port_shift_ >= 0 ? w1 >> port_shift_ : w1 / cfg_.port_bytes_per_cycle) * cfg_.cycle;
    Tick moved = max_tick(ports_.reserve(arrival, moved_bytes, a.now), arrival + one_port);
    Tick done = moved + cfg_.latency * cfg_.cycle;
    (write ? bytes_written_ : bytes_read_) += len;
    if (moved_bytes > len) bytes_read_ += len;
    ++requests_;
    if (recorder_) recorder_->on_mem(mem_event(a.origin, name(), write, a.addr, len, arrival, done));
    return {done, 0};
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
