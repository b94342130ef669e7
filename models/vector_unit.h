// VectorUnit: a SIMD unit of `lanes` x `sublanes` 32-bit elements per vector register, with
// separate pipelines for elementwise ALU ops, transcendentals, cross-lane ops (reduce,
// permute) and VMEM loads/stores. Each op is one timed event: it occupies its pipeline for
// (vector registers it touches) x (cycles per register) and its result appears `latency`
// cycles later. Each pipeline is in order; different pipelines run side by side. Loads and stores are TLM transactions to VMEM on the `mem` socket.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include "models/lt_target_socket.h"
#include "models/busy_tracker.h"
#include "models/ceil_div.h"
#include "models/params.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct VectorUnitParams {
    unsigned lanes = 128;
    unsigned sublanes = 8;
    unsigned queue_depth = 8;
    unsigned alu_latency = 2;
    unsigned trans_cycles_per_vreg = 4;
    unsigned trans_latency = 12;
    unsigned xlu_cycles_per_vreg = 2;
    unsigned xlu_latency = 8;
    unsigned ldst_bytes_per_cycle = 4096;

    void declare(ParamVisitor& v) {
        v.u32("lanes", lanes, 1, 4096, "lanes", "lanes per vector register");
        v.u32("sublanes", sublanes, 1, 256, "sublanes", "sublanes per vector register");
        v.u32("queue_depth", queue_depth, 1, 4096, "instructions", "instructions waiting in the unit");
        v.u32("alu_latency", alu_latency, 1, 1000, "cycles", "elementwise op latency, cycles");
        v.u32("trans_cycles_per_vreg", trans_cycles_per_vreg, 1, 1000, "cycles", "transcendental throughput, cycles per vector register");
        v.u32("trans_latency", trans_latency, 1, 1000, "cycles", "transcendental latency, cycles");
        v.u32("xlu_cycles_per_vreg", xlu_cycles_per_vreg, 1, 1000, "cycles", "reduce/permute throughput, cycles per vector register");
        v.u32("xlu_latency", xlu_latency, 1, 1000, "cycles", "reduce/permute latency, cycles");
        v.u32("ldst_bytes_per_cycle", ldst_bytes_per_cycle, 1, 1u << 20, "bytes/cycle", "load/store path width, bytes per cycle");
    }
};

// The parameters and what the builder derives.
struct VectorUnitConfig : VectorUnitParams {
    Tick cycle = 1000;
    std::uint64_t vmem_base = 0;  // global address of byte 0 of the VMEM of the core it serves (vmem:0)
};

class VectorUnit : public XpuModule {
public:
    LtTargetSocket<VectorUnit> cmd;
    tlm_utils::simple_initiator_socket_optional<VectorUnit> mem;  // -> Vmem (loads, stores)

    VectorUnit(const sc_core::sc_module_name& n, const VectorUnitConfig& cfg);
    const char* kind() const override { return "VectorUnit"; }
    Role role() const override { return Role::Vector; }
    std::optional<Tick> busy_time() const override { return busy_.total(); }
    std::vector<Stat> stats() const override;

private:
    enum Pipe { kAlu, kTrans, kXlu, kLdSt, kPipes };
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    Tick memory_access(const Instruction& in, Tick start, bool write);

    VectorUnitConfig cfg_;
    QueueSlots queue_;
    CeilDiv per_vreg_, per_ldst_cycle_;  // ceil(elements / lanes x sublanes), ceil(bytes / ldst_bytes_per_cycle)
    Tick pipe_free_[kPipes] = {};
    Tick pipe_busy_[kPipes] = {};
    BusyTracker busy_;
    tlm::tlm_generic_payload mem_gp_;
    TxnOrigin& origin_;  // owned by mem_gp_: which instruction a load or store serves
    std::uint64_t ops_ = 0, elements_ = 0, bytes_loaded_ = 0, bytes_stored_ = 0;
};

}  // namespace xpu
