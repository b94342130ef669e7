// What the models report as they run. The simulator's own outputs (stats, the transaction log
// of the analysis issue) and the tests observe a run through this interface only; a model
// calls it when set and costs one pointer test when not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/instruction.h"

namespace xpu {

// The life of one instruction on its core, in absolute Ticks.
struct InstrEvent {
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0;          // position in its stream
    const Instruction* in = nullptr;
    Tick arrival = 0;    // reached the core's issue queue (instruction supply)
    Tick ready = 0;      // operands ready (register scoreboard)
    Tick issue = 0;      // left the core: accepted by its unit (or the sync wait was satisfied)
    Tick complete = 0;   // result available
};

// One DMA descriptor from start to completion flag.
struct DmaEvent {
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0;          // instruction index of the dma in its stream
    const char* engine = "";
    Tick issue = 0;      // the core handed it over
    Tick start = 0;      // first chunk issued
    Tick complete = 0;   // last byte written; the completion flag is raised now
    std::uint64_t bytes = 0;
};

// The instruction a flag change or a memory transaction serves: its stream and index.
struct Origin {
    bool known = false;
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0;
};

// A sync flag changed value.
struct FlagEvent {
    const char* owner = "";  // SyncFlags instance
    std::uint16_t flag = 0;
    std::int64_t old_value = 0, new_value = 0;
    Tick time = 0;
    Origin by;               // the instruction that raised it (a DMA, sset, sadd)
};

// A memory transaction served by a target (HBM, VMEM, an inter-chip link).
struct MemEvent {
    const char* target = "";
    bool write = false;
    std::uint64_t addr = 0, bytes = 0;
    Tick arrival = 0, done = 0;
    const char* initiator = "";  // the DMA engine or vector unit that issued it
    Origin for_instr;            // the instruction it serves
};

// One operation on a unit's pipeline (vector, matrix): busy from start to end, result at complete.
struct UnitOpEvent {
    const char* unit = "";   // SystemC path of the unit
    std::uint16_t chip = 0, core = 0;
    std::uint64_t index = 0; // instruction index in its stream
    Opcode op = Opcode::Nop;
    Tick accept = 0, start = 0, end = 0, complete = 0;
};

// One interleave piece of an HBM request on one channel (HbmController splits each request
// over its channels every interleave_bytes): arrived with its request, its transfer on the
// channel from `start` to `done - latency`, data back (or written) at `done`. `bytes` is what
// the channel moves: a reducing write reads and writes its piece, twice its size.
struct HbmChannelEvent {
    const char* controller = "";  // SystemC path of the HbmController
    std::uint16_t channel = 0;
    std::uint64_t bytes = 0;
    Tick arrival = 0, start = 0, done = 0;
};

class Recorder {
public:
    virtual ~Recorder() = default;
    virtual void on_instruction(const InstrEvent&) {}
    virtual void on_dma(const DmaEvent&) {}
    virtual void on_flag(const FlagEvent&) {}
    virtual void on_mem(const MemEvent&) {}
    virtual void on_unit_op(const UnitOpEvent&) {}
    virtual void on_hbm_channel(const HbmChannelEvent&) {}
};

}  // namespace xpu

namespace xpu {

// Forwards every event to several recorders (a run's own accounting, a waveform writer, a
// test's recording), in the order they were added.
class RecorderFanOut : public Recorder {
public:
    void add(Recorder* r) {
        if (r) to_.push_back(r);
    }
    bool empty() const { return to_.empty(); }
    void on_instruction(const InstrEvent& e) override {
        for (auto* r : to_) r->on_instruction(e);
    }
    void on_dma(const DmaEvent& e) override {
        for (auto* r : to_) r->on_dma(e);
    }
    void on_flag(const FlagEvent& e) override {
        for (auto* r : to_) r->on_flag(e);
    }
    void on_mem(const MemEvent& e) override {
        for (auto* r : to_) r->on_mem(e);
    }
    void on_unit_op(const UnitOpEvent& e) override {
        for (auto* r : to_) r->on_unit_op(e);
    }
    void on_hbm_channel(const HbmChannelEvent& e) override {
        for (auto* r : to_) r->on_hbm_channel(e);
    }

private:
    std::vector<Recorder*> to_;
};

}  // namespace xpu
