// A TLM-2.0 target socket for the blocking transport alone: b_transport goes straight to the
// module's method, as through tlm_utils::simple_target_socket with only b_transport registered.
//
// Why not simple_target_socket: it also converts between the blocking and the non-blocking
// protocols, and for that each one holds three named events (a payload event queue, end of
// request, end of response). A 256-chip platform has thousands of these sockets; naming and
// registering their events was about an eighth of its start-up (perf), and nothing in xpusim
// calls nb_transport on them (every model is LT: docs/architecture.md). A non-blocking call
// is an error here, as it would be on a simple_target_socket with no callback to convert to;
// debug transport and DMI answer as simple_target_socket does without their callbacks.
#pragma once

#include <systemc>
#include <tlm>

namespace xpu {

template <typename MODULE>
class LtTargetSocket : public tlm::tlm_target_socket<32> {
public:
    using Payload = tlm::tlm_generic_payload;
    using Callback = void (MODULE::*)(Payload&, sc_core::sc_time&);

    explicit LtTargetSocket(const char* name) : tlm::tlm_target_socket<32>(name), fw_(*this) { bind(fw_); }

    void register_b_transport(MODULE* mod, Callback cb) {
        sc_assert(!fw_.cb);
        fw_.mod = mod;
        fw_.cb = cb;
    }

private:
    struct Forward : tlm::tlm_fw_transport_if<> {
        explicit Forward(LtTargetSocket& s) : socket(s) {}
        LtTargetSocket& socket;
        MODULE* mod = nullptr;
        Callback cb = nullptr;

        void b_transport(Payload& p, sc_core::sc_time& t) override {
            if (!cb) SC_REPORT_ERROR(socket.name(), "no blocking transport callback registered");
            (mod->*cb)(p, t);
        }
        tlm::tlm_sync_enum nb_transport_fw(Payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
            SC_REPORT_ERROR(socket.name(), "nb_transport_fw on a socket for the blocking transport only (LtTargetSocket)");
            return tlm::TLM_COMPLETED;
        }
        unsigned int transport_dbg(Payload&) override { return 0; }
        bool get_direct_mem_ptr(Payload&, tlm::tlm_dmi& dmi) override {
            dmi.allow_read_write();
            dmi.set_start_address(0x0);
            dmi.set_end_address(static_cast<sc_dt::uint64>(-1));
            return false;
        }
    };
    Forward fw_;
};

}  // namespace xpu
