// DmaArbiter: the DMA engines of a chip issue their chunks in time order, one thread for all.
//
// Why: the engines share the chip's HBM channels, whose calendars (bandwidth_calendar.h) give
// capacity to whoever books it first. With a thread per engine under temporal decoupling, the
// engine whose thread ran first booked up to a quantum of chunks ahead before the next engine's
// thread ran, so engines moving data at the same time were served one after the other, in the
// order of their threads, instead of interleaved as their requests reach the memory. The result
// depended on the quantum, a simulator knob: a 1000^3 GEMM's first four tile loads (four engines,
// issued together) ended 0.36 to 1.44 us apart at the default quantum of 1000 ns, and the run's
// time moved by 3 to 5% between quanta of 1000 and 1 ns. Here every chunk of the chip's engines is
// issued in the order of its issue time (ties: the engine registered first), which is the order a
// quantum of zero gives, while the thread still runs a quantum ahead of the kernel between
// synchronisations. It costs simulation speed where engines are busy together (their chunks
// interleave one by one): 8% on the 32-layer decode of scripts/bench.sh (docs/validation.md).
//
// An engine whose descriptor needs a TLM transaction per chunk (a side that does not answer the
// timing probe: a remote chip's memory, a user's own memory type) may wait inside a chunk; it
// moves that descriptor on its own thread (DmaEngine::engine), and the arbiter passes it by until
// it is done. Its chunks use the same HBM channels (its local read, and on the other chip its
// write), so while any such descriptor is being moved, on any chip, every arbiter issues its
// chunks at their kernel time instead of a quantum ahead, and while any arbiter has chunks to
// issue, those threads do as well: a quantum ahead, the arbiter booked a concurrent tile load's
// pieces on every channel before a collective's 1 KiB send, issued first, read its data, and the
// send waited behind the whole load (a tensor-parallel decode with loads moved under its
// all-reduce: 164.0 us at the default quantum of 1000 ns, 155.2 us at 1 ns;
// tests/e2e/dma_time_order.sh). A collective alone (no local DMA) keeps its quantum.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "models/quantum.h"
#include "traces/instruction.h"

namespace xpu {

class DmaArbiter {
public:
    // What the arbiter asks of an engine (DmaEngine implements it).
    class Engine {
    public:
        // Has a chunk to issue (a descriptor in progress, not on the engine's own thread; a
        // queued descriptor starts here when the engine is free): true, and its issue time in t.
        virtual bool next_chunk(Tick& t) = 0;
        // Issues that chunk (`now`: the kernel's time; never waits), then as next_chunk().
        virtual bool issue_chunk(Tick now, Tick& t) = 0;
        // Reports what its chunks routed through the interconnects since the last call (before
        // the arbiter's thread may stop: the counters then read the same whenever a run ends).
        virtual void report_routed() = 0;

    protected:
        ~Engine() = default;
    };

    // The arbiter of `chip`'s engines in the current simulation, made (with its thread) at the
    // first call, during elaboration.
    static DmaArbiter& of_chip(unsigned chip);

    void add(Engine* e) { engines_.push_back(e); }
    // A descriptor starts (+1) or ends (-1) on an engine's own thread, on any chip.
    static void own_mover(int delta);
    // Whether any is being moved: then the arbiters do not run ahead of the kernel.
    static bool own_movers();
    // Whether any arbiter has chunks to issue: then those threads do not run ahead either.
    static bool arbiters_busy();
    // An engine has new work, or is back from its own thread: the arbiter looks again.
    void poke() { work_.notify(); }

private:
    explicit DmaArbiter(unsigned chip);
    void run();  // the arbiter's thread
    std::vector<Engine*> engines_;
    void set_busy(bool busy);
    sc_core::sc_event work_;
    QuantumKeeper qk_;
    bool busy_ = false;
};

}  // namespace xpu
