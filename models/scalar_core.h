// ScalarCore: the in-order front end of a TensorCore. It pulls instructions from its
// TraceInjector, keeps a register scoreboard (RAW and WAR), issues up to `issue_width`
// instructions a cycle in program order, executes scalar ops itself and hands vector, matrix
// and DMA instructions to its units over TLM (LT, annotated time). It only yields to the
// SystemC kernel where another block can change the answer: sync-flag operations, a full DMA
// queue, the end of a temporal-decoupling quantum (the TLM global quantum, models/quantum.h),
// and the end of its stream.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/busy_tracker.h"
#include "models/fetch_in_place.h"
#include "models/params.h"
#include "models/quantum.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct ScalarCoreParams {
    std::uint16_t core = 0;  // with the chip: which trace stream this core runs
    unsigned fetch_width = 4;
    unsigned issue_width = 4;
    unsigned iqueue_depth = 32;
    unsigned salu_latency = 1;
    unsigned branch_latency = 2;
    unsigned sync_latency = 1;
    unsigned batch = 256;

    void declare(ParamVisitor& v) {
        v.u16("core", core, 0, 255, "core id", "core id: runs the trace stream (this chip, core)");
        v.u32("fetch_width", fetch_width, 1, 64, "instructions/cycle", "instructions the front end delivers per cycle");
        v.u32("issue_width", issue_width, 1, 64, "instructions/cycle", "instructions issued per cycle (VLIW slots)");
        v.u32("iqueue_depth", iqueue_depth, 1, 4096, "instructions", "fetched but not yet issued instructions");
        v.u32("salu_latency", salu_latency, 1, 1000, "cycles", "scalar ALU latency, cycles");
        v.u32("branch_latency", branch_latency, 1, 1000, "cycles", "branch latency, cycles");
        v.u32("sync_latency", sync_latency, 1, 1000, "cycles", "cycles for a flag operation to take effect");
        v.u32("batch", batch, 1, 65536, "instructions",
              "instructions per fetch from the trace (host-side batching, no timing effect)");
    }
};

// The parameters and what the builder derives.
struct ScalarCoreConfig : ScalarCoreParams {
    std::uint16_t chip = 0;       // with the core: which trace stream this core runs (for messages)
    Tick cycle = 1000;            // ps per cycle
    std::size_t annotations = 0;  // strings in the trace: time is attributed per annotation id
    // Instructions in its stream, when known: the fetch buffer (`batch` instructions) needs no
    // more. A many-chip platform whose chips mostly have no stream then holds no buffers for them.
    std::uint64_t stream_instructions = UINT64_MAX;
};

// Width-limited slots per cycle (fetch, issue): next(t) is the earliest slot at or after t.
class SlotPacer {
public:
    SlotPacer(Tick cycle, unsigned width) : cycle_(cycle), width_(width ? width : 1) {}
    Tick next(Tick t) {
        if (t > cur_ || used_ == 0) {
            if (t > cur_) cur_ = t;
            used_ = 0;
        }
        if (used_ == width_) {
            cur_ += cycle_;
            used_ = 0;
        }
        ++used_;
        return cur_;
    }
    // The slot actually used was later than asked for (back-pressure): restart counting there.
    void moved_to(Tick t) {
        if (t > cur_) {
            cur_ = t;
            used_ = 1;
        }
    }

private:
    Tick cycle_;
    unsigned width_;
    Tick cur_ = 0;
    unsigned used_ = 0;
};

class ScalarCore : public XpuModule {
    using FamilySocket = tlm_utils::multi_passthrough_initiator_socket<
        ScalarCore, 32, tlm::tlm_base_protocol_types, 0, sc_core::SC_ZERO_OR_MORE_BOUND>;

public:
    tlm_utils::simple_initiator_socket<ScalarCore> imem;   // -> TraceInjector.port
    FamilySocket vpu;    // [i] -> VectorUnit.cmd, i = instruction's unit field
    FamilySocket mxu;    // [i] -> MatrixUnit.cmd
    FamilySocket dma;    // [i] -> DmaEngine.cmd
    tlm_utils::simple_initiator_socket_optional<ScalarCore> flags;  // -> SyncFlags.port

    ScalarCore(const sc_core::sc_module_name& n, const ScalarCoreConfig& cfg);
    const char* kind() const override { return "ScalarCore"; }
    Role role() const override { return Role::Core; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.core = cfg_.core;
        f.cycle = cfg_.cycle;
        f.issue_slot = issue_slot_;
        return f;
    }
    std::optional<Tick> busy_time() const override { return busy_.total(); }
    std::vector<Stat> stats() const override;

    bool finished() const { return finished_; }
    std::uint64_t retired() const { return retired_; }
    Tick finish_time() const { return finish_time_; }
    const ScalarCoreConfig& config() const { return cfg_; }
    // Time attributed to each annotation id: how far the core's issue point advanced to issue
    // the instructions carrying it (their own cycles plus the stalls in front of them).
    const std::vector<Tick>& time_by_annotation() const { return time_by_ann_; }
    // What the core is blocked on, for a deadlock diagnosis ("" when not blocked).
    const Instruction* blocked_on() const { return blocked_; }
    std::uint64_t blocked_index() const { return blocked_index_; }

private:
    void run();
    void execute(const Instruction& in);
    // The units bound to one family socket (vpu, mxu, dma), read once when the run starts: a
    // multi-socket's size() is two virtual calls, asked per dispatched instruction before.
    struct UnitFamily {
        const char* name = "";
        std::vector<tlm::tlm_fw_transport_if<>*> units;  // [i]: the unit the i-th binding reaches
        bool may_wait = false;  // a DMA engine's full queue blocks the core (a new quantum after)
    };
    void bind_families();
    Tick dispatch_to_unit(const UnitFamily& fam, const Instruction& in, Tick t, Tick& complete, Tick& operands_read);
    Tick sync_op(const Instruction& in, Tick t);
    [[noreturn]] void fail(const std::string& what, const Instruction& in);

    ScalarCoreConfig cfg_;
    std::vector<Instruction> buf_;
    tlm::tlm_generic_payload fetch_gp_, unit_gp_, flag_gp_;
    FetchInPlace& lent_;  // owned by fetch_gp_: the injector's instructions, read in place
    UnitFamily vpu_units_, mxu_units_, dma_units_;
    Tick delay_ticks_ = 0;                      // the last annotation a unit was offered ...
    sc_core::sc_time delay_sc_ = sc_core::SC_ZERO_TIME;  // ... as sc_time (dispatch_to_unit)
    UnitCommand& cmd_;  // owned by unit_gp_ (a payload deletes its extensions)
    FlagCommand flag_cmd_;

    std::array<Tick, kNumRegs> reg_ready_{};
    std::array<Tick, kNumRegs> reg_read_until_{};
    SlotPacer fetch_, issue_;
    QueueSlots iqueue_;
    const Tick issue_slot_;  // ps an issued instruction holds its slot: cycle / issue_width
    Tick last_complete_ = 0;
    Tick last_issue_ = 0;
    std::vector<Tick> time_by_ann_;
    QuantumKeeper qk_;  // temporal decoupling (the TLM global quantum, models/quantum.h)
    BusyTracker busy_;

    std::uint64_t index_ = 0;
    std::uint64_t retired_ = 0;
    std::array<std::uint64_t, 5> per_kind_{};
    Tick sync_wait_ = 0;
    bool finished_ = false;
    sc_core::sc_event parked_{"parked"};  // never notified: where run() waits once done (named: dma_engine.h)
    Tick finish_time_ = 0;
    const Instruction* blocked_ = nullptr;
    std::uint64_t blocked_index_ = 0;
};

}  // namespace xpu
