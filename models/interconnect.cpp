#include "models/interconnect.h"

#include "models/sim_time.h"

namespace xpu {

Interconnect::Interconnect(const sc_core::sc_module_name& n, const InterconnectConfig& cfg)
    : XpuModule(n), in("in"), out("out"), cfg_(cfg) {
    in.register_b_transport(this, &Interconnect::b_transport);
    expose_target("in", in, true, false);
    expose_initiator("out", out, true, false);
}

void Interconnect::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    std::uint64_t a = gp.get_address(), len = gp.get_data_length();
    const AddressRange* hit = nullptr;
    if (last_ < cfg_.routes.size() && cfg_.routes[last_].contains(a, len)) {
        hit = &cfg_.routes[last_];
    } else {
        for (std::size_t i = 0; i < cfg_.routes.size(); ++i)
            if (cfg_.routes[i].contains(a, len)) {
                hit = &cfg_.routes[i];
                last_ = i;
                break;
            }
    }
    if (!hit || hit->port >= out.size()) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    delay += to_sc(cfg_.latency);
    out[hit->port]->b_transport(gp, delay);
    ++routed_;
    bytes_ += len;
}

std::vector<Stat> Interconnect::stats() const {
    return {{"transactions", static_cast<double>(routed_), true, "transactions routed", "transactions"},
            {"bytes", static_cast<double>(bytes_), true, "bytes routed", "bytes"}};
}

}  // namespace xpu
