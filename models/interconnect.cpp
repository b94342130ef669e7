#include "models/interconnect.h"

#include "models/sim_time.h"

namespace xpu {

Interconnect::Interconnect(const sc_core::sc_module_name& n, const InterconnectConfig& cfg)
    : XpuModule(n), in("in"), out("out"), cfg_(cfg) {
    in.register_b_transport(this, &Interconnect::b_transport);
    in.register_get_direct_mem_ptr(this, &Interconnect::get_direct_mem_ptr);
    expose_target("in", in, true, false);
    expose_initiator("out", out, true, false);
}

const AddressRange* Interconnect::route(std::uint64_t a, std::uint64_t len) {
    if (last_ < cfg_.routes.size() && cfg_.routes[last_].contains(a, len)) return &cfg_.routes[last_];
    for (std::size_t i = 0; i < cfg_.routes.size(); ++i)
        if (cfg_.routes[i].contains(a, len)) {
            last_ = i;
            return &cfg_.routes[i];
        }
    return nullptr;
}

void Interconnect::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    std::uint64_t a = gp.get_address(), len = gp.get_data_length();
    const AddressRange* hit = route(a, len);
    if (!hit || hit->port >= out.size()) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    delay += to_sc(cfg_.latency);
    out[hit->port]->b_transport(gp, delay);
    ++routed_;
    bytes_ += len;
}

// The timing probe (models/timed_memory.h): route the whole range, add this hop.
bool Interconnect::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
    dmi.allow_none();
    auto* path = gp.get_extension<TimedPath>();
    const AddressRange* hit = route(gp.get_address(), gp.get_data_length());
    if (!path || !hit || hit->port >= out.size() || path->n_hops == path->hops.size()) return false;
    path->latency += cfg_.latency;
    path->hops[path->n_hops++] = this;
    return out[hit->port]->get_direct_mem_ptr(gp, dmi);
}

std::vector<Stat> Interconnect::stats() const {
    return {{"transactions", static_cast<double>(routed_), true, "transactions routed", "transactions"},
            {"bytes", static_cast<double>(bytes_), true, "bytes routed", "bytes"}};
}

}  // namespace xpu
