#include "models/dma_arbiter.h"

#include <map>
#include <string>

#include <sysc/kernel/sc_dynamic_processes.h>

#include "models/sim_time.h"

namespace xpu {

namespace {

// Descriptors on engines' own threads, and arbiters with chunks to issue, in the current
// simulation (one per process; a test that makes a new context makes new arbiters, of_chip,
// which count from zero there). Read on every chunk: a plain static, no context lookup.
struct Counts {
    unsigned own = 0, busy = 0;
};
Counts& counts() {
    static Counts n;
    return n;
}

}  // namespace

void DmaArbiter::own_mover(int delta) { counts().own += static_cast<unsigned>(delta); }

bool DmaArbiter::own_movers() { return counts().own != 0; }

bool DmaArbiter::arbiters_busy() { return counts().busy != 0; }

void DmaArbiter::set_busy(bool busy) {
    if (busy == busy_) return;
    busy_ = busy;
    if (busy) ++counts().busy;
    else --counts().busy;
}

DmaArbiter& DmaArbiter::of_chip(unsigned chip) {
    // One simulation per process (SystemC elaborates once). Never destroyed: the arbiters' events
    // and threads belong to the simulation context, which outlives every static.
    static auto* arbiters = new std::map<unsigned, DmaArbiter*>;
    static sc_core::sc_simcontext* context = nullptr;
    if (context != sc_core::sc_get_curr_simcontext()) {  // a new context (tests): new arbiters
        context = sc_core::sc_get_curr_simcontext();
        arbiters->clear();
        counts() = Counts{};
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
    // Each engine's next chunk, kept between waits: while this thread runs no other process does,
    // so an engine's next chunk changes only by its own chunks (issue_chunk answers it) and by
    // what happens while this thread waits (new descriptors, a descriptor back from an engine's
    // own thread): looked at again after every wait. (A call to every engine per chunk was 6% of
    // the samples of a 32-layer decode's simulation profile.)
    struct Next {
        bool ready = false;
        Tick t = 0;
    };
    std::vector<Next> next(engines_.size());
    auto look_again = [&] {
        for (std::size_t i = 0; i < engines_.size(); ++i) next[i].ready = engines_[i]->next_chunk(next[i].t);
    };
    qk_.reset();
    // The kernel's time changes only where this thread waits: read once per stretch between waits.
    Tick now = now_ticks();
    look_again();
    for (;;) {
        // The engine whose next chunk issues first (the first registered on a tie).
        std::size_t first = engines_.size();
        for (std::size_t i = 0; i < engines_.size(); ++i)
            if (next[i].ready && (first == engines_.size() || next[i].t < next[first].t)) first = i;
        set_busy(first != engines_.size());
        if (first == engines_.size()) {
            wait(work_);
            qk_.reset();  // idle until now: a new quantum from here
        } else if (qk_.past_quantum(next[first].t) || (next[first].t > now && own_movers())) {
            // Ahead by more than a quantum (or at all, while a descriptor is moved on an engine's
            // own thread): wait until that chunk's time, or until an engine has new work (which
            // may issue earlier), and start a new quantum there.
            for (Engine* e : engines_) e->report_routed();
            wait(until(next[first].t), work_);
            qk_.reset();
        } else {
            next[first].ready = engines_[first]->issue_chunk(now, next[first].t);
            continue;
        }
        now = now_ticks();
        look_again();
    }
}

}  // namespace xpu
