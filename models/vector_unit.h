// VectorUnit: a SIMD unit of `lanes` x `sublanes` 32-bit elements per vector register, with
// separate pipelines for elementwise ALU ops, transcendentals, cross-lane ops (reduce,
// permute) and VMEM loads/stores. Each op is one timed event: it occupies its pipeline for
// (vector registers it touches) x (cycles per register) and its result appears `latency`
// cycles later. Each pipeline is in order; different pipelines run side by side. Loads and stores are TLM transactions to VMEM on the `mem` socket.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "models/busy_tracker.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

struct VectorUnitConfig {
    Tick cycle = 1000;
    unsigned lanes = 128;
    unsigned sublanes = 8;
    unsigned queue_depth = 8;            // instructions waiting in the unit
    unsigned alu_latency = 2;            // cycles
    unsigned trans_cycles_per_vreg = 4;  // transcendental throughput (cycles per register)
    unsigned trans_latency = 12;
    unsigned xlu_cycles_per_vreg = 2;    // reduce / permute throughput
    unsigned xlu_latency = 8;
    unsigned ldst_bytes_per_cycle = 4096;  // load/store path width
    std::uint64_t vmem_base = 0;         // global address of the local VMEM space
};

class VectorUnit : public XpuModule {
public:
    tlm_utils::simple_target_socket<VectorUnit> cmd;
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
    Tick pipe_free_[kPipes] = {};
    Tick pipe_busy_[kPipes] = {};
    BusyTracker busy_;
    tlm::tlm_generic_payload mem_gp_;
    TxnOrigin& origin_;  // owned by mem_gp_: which instruction a load or store serves
    std::uint64_t ops_ = 0, elements_ = 0, bytes_loaded_ = 0, bytes_stored_ = 0;
};

}  // namespace xpu
