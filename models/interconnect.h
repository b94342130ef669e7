// Interconnect: the on-chip network between DMA engines (and any other initiator) and the
// memories. It routes each transaction by global address to the `out` port whose range holds
// it, adds a fixed traversal latency and passes the address on unchanged (targets know their
// own base). An address no range holds is an address error back to the initiator.
#pragma once

#include <vector>

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "models/params.h"
#include "models/timed_memory.h"
#include "models/xpu_module.h"

namespace xpu {

struct AddressRange {
    std::uint64_t base = 0, size = 0;
    unsigned port = 0;  // index of the out binding
    bool contains(std::uint64_t a, std::uint64_t len) const {
        return a >= base && a - base < size && len <= size - (a - base);
    }
};

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct InterconnectParams {
    Tick latency = 2'000;  // ps

    void declare(ParamVisitor& v) { v.ticks_ns("latency_ns", latency, 0, 1e6, "traversal latency per transaction"); }
};

// The parameters and what the builder derives.
struct InterconnectConfig : InterconnectParams {
    std::vector<AddressRange> routes;  // the address map of the memories bound to out[i]
};

class Interconnect : public XpuModule, public TimedHop {
public:
    tlm_utils::multi_passthrough_target_socket<Interconnect, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        in;
    tlm_utils::multi_passthrough_initiator_socket<Interconnect, 32, tlm::tlm_base_protocol_types, 0,
                                                  sc_core::SC_ZERO_OR_MORE_BOUND>
        out;

    Interconnect(const sc_core::sc_module_name& n, const InterconnectConfig& cfg);
    const char* kind() const override { return "Interconnect"; }
    Role role() const override { return Role::Router; }
    std::vector<Stat> stats() const override;
    void routed(std::uint64_t bytes, std::uint64_t transactions) override {
        routed_ += transactions;
        bytes_ += bytes;
    }

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
    const AddressRange* route(std::uint64_t a, std::uint64_t len);
    InterconnectConfig cfg_;
    std::size_t last_ = 0;  // most transactions hit the range the previous one did
    std::uint64_t routed_ = 0, bytes_ = 0;
};

}  // namespace xpu
