#include "models/dma_arbiter.h"

#include <map>
#include <memory>
#include <string>

#include <sysc/kernel/sc_dynamic_processes.h>

#include "models/sim_time.h"

namespace xpu {

DmaArbiter& DmaArbiter::of_chip(unsigned chip) {
    // One simulation per process (SystemC elaborates once). Never destroyed: the arbiters' events
    // and threads belong to the simulation context, which outlives every static.
    static auto* arbiters = new std::map<unsigned, DmaArbiter*>;
    static sc_core::sc_simcontext* context = nullptr;
    if (context != sc_core::sc_get_curr_simcontext()) {  // a new context (tests): new arbiters
        context = sc_core::sc_get_curr_simcontext();
        arbiters->clear();
    }
    DmaArbiter*& a = (*arbiters)[chip];
    if (!a) a = new DmaArbiter(chip);
    return *a;
}

DmaArbiter::DmaArbiter(unsigned chip) : work_(("dma_arbiter_work_" + std::to_string(chip)).c_str()) {
    sc_core::sc_spawn_options opt;
    sc_core::sc_spawn([this] { run(); }, ("dma_arbiter_" + std::to_string(chip)).c_str(), &opt);
}

void DmaArbiter::run() {
    qk_.reset();
    // The kernel's time changes only where this thread waits: read once per stretch between waits.
    Tick now = now_ticks();
    for (;;) {
        // The engine whose next chunk issues first (the first registered on a tie).
        Engine* next = nullptr;
        Tick at = 0;
        for (Engine* e : engines_)
            if (e->has_chunk()) {
                const Tick t = e->next_chunk_time();
                if (!next || t < at) next = e, at = t;
            }
        if (!next) {
            wait(work_);
            qk_.reset();  // idle until now: a new quantum from here
            now = now_ticks();
            continue;
        }
        if (qk_.past_quantum(at)) {
            // Ahead by more than a quantum: wait until that chunk's time, or until an engine has
            // new work (which may issue earlier), and start a new quantum there.
            for (Engine* e : engines_) e->report_routed();
            wait(until(at), work_);
            qk_.reset();
            now = now_ticks();
            continue;
        }
        next->issue_chunk(now);
    }
}

}  // namespace xpu
