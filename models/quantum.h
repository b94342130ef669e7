// Temporal decoupling from one place: the TLM-2.0 global quantum.
//
// How far an initiator's local time may lead the SystemC kernel is the standard TLM-2.0 global
// quantum (tlm::tlm_global_quantum), set once by whoever elaborates the models: the platform
// builder from `sim.quantum_ns`, or a test or a hand-written platform with
// tlm_utils::tlm_quantumkeeper::set_global_quantum(). Never set, it is zero: no decoupling, an
// initiator synchronises as soon as its local time is ahead of the kernel. No model keeps a copy
// of it in its config struct.
//
// QuantumKeeper is tlm_utils::tlm_quantumkeeper with xpusim's synchronisation rule, which differs
// from the standard keeper's in two ways (both keep every run's timing exactly what it was when
// the quantum was a per-model parameter):
//  - a quantum is measured from the kernel time of the last synchronisation (reset()), not aligned
//    to the multiples of the global quantum: compute_local_quantum() is the global quantum itself;
//  - a local time exactly one quantum ahead is still allowed: need_sync() is "ahead by more than
//    one quantum" (the standard keeper syncs at "ahead by at least").
// Either way the invariant is the TLM one: an initiator's local time never leads the kernel by
// more than one global quantum. The models keep time as absolute Ticks, so on top of the standard
// interface there are Tick helpers for the hot paths (one integer comparison per instruction).
//
// Usage in an initiator thread: reset() when the thread starts and after any wait() it does
// outside the keeper (the quantum restarts at the kernel time it resumed at); for each step at
// local time t, `if (qk.past_quantum(t)) qk.sync_to(t);`.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/tlm_quantumkeeper.h>  // not self-contained: after <systemc> and <tlm>

#include "models/sim_time.h"

namespace xpu {

class QuantumKeeper : public tlm_utils::tlm_quantumkeeper {
public:
    // The global quantum in Ticks (zero when nobody set it).
    static Tick global_quantum_ticks() { return get_global_quantum().value(); }

    // Does an absolute local time t lead the kernel by more than one quantum (counted from the
    // last reset)? The caller then synchronises with sync_to(t).
    bool past_quantum(Tick t) const { return t > m_next_sync_point.value(); }
    // Waits until the absolute local time t (at once if it is not ahead of the kernel) and begins
    // a new quantum there.
    void sync_to(Tick t) {
        set(until(t));
        sync();
    }

    bool need_sync() const override {
        return sc_core::sc_time_stamp() + m_local_time > m_next_sync_point;
    }

protected:
    sc_core::sc_time compute_local_quantum() override { return get_global_quantum(); }
};

}  // namespace xpu
