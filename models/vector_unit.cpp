#include "models/vector_unit.h"

#include "models/sim_time.h"

namespace xpu {

VectorUnit::VectorUnit(const sc_core::sc_module_name& n, const VectorUnitConfig& cfg)
    : XpuModule(n), cmd("cmd"), mem("mem"), cfg_(cfg), queue_(cfg.queue_depth),
      per_vreg_(cfg.lanes * cfg.sublanes), per_ldst_cycle_(cfg.ldst_bytes_per_cycle), origin_(*new TxnOrigin) {
    origin_.initiator = name();
    mem_gp_.set_extension(&origin_);  // the payload owns it from here
    cmd.register_b_transport(this, &VectorUnit::b_transport);
    expose_target("cmd", cmd, false);
    expose_initiator("mem", mem, false, false);
}

Tick VectorUnit::memory_access(const Instruction& in, Tick start, bool write) {
    const MemRef& ref = write ? in.mem_dst : in.mem_src;
    mem_gp_.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    mem_gp_.set_address(cfg_.vmem_base + ref.addr);
    mem_gp_.set_data_ptr(nullptr);  // timing only: no data moves
    mem_gp_.set_data_length(static_cast<unsigned>(in.bytes));
    mem_gp_.set_streaming_width(static_cast<unsigned>(in.bytes));
    mem_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = until(start);
    Tick base = now_ticks();
    mem->b_transport(mem_gp_, delay);
    if (mem_gp_.is_response_error()) return 0;
    return base + delay.value();
}

void VectorUnit::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* c = gp.get_extension<UnitCommand>();
    const Instruction& in = *c->in;
    const Tick now = now_ticks(), offered = now + delay.value();  // annotated time (unit_command.h)
    Tick accept = queue_.accept(offered);
    unsigned per_vreg = cfg_.lanes * cfg_.sublanes;
    std::uint64_t elems = in.has(kCount) ? in.count : per_vreg;
    std::uint64_t vregs = per_vreg_(elems);
    if (vregs == 0) vregs = 1;

    Pipe pipe = kAlu;
    Tick occupancy = 0, latency = 0;
    switch (in.op) {
        case Opcode::VAlu:
            occupancy = vregs * cfg_.cycle;
            latency = cfg_.alu_latency * cfg_.cycle;
            break;
        case Opcode::VTrans:
            pipe = kTrans;
            occupancy = vregs * cfg_.trans_cycles_per_vreg * cfg_.cycle;
            latency = cfg_.trans_latency * cfg_.cycle;
            break;
        case Opcode::VReduce:
        case Opcode::VPermute:
            pipe = kXlu;
            occupancy = vregs * cfg_.xlu_cycles_per_vreg * cfg_.cycle;
            latency = cfg_.xlu_latency * cfg_.cycle;
            break;
        case Opcode::VLoad:
        case Opcode::VStore: {
            pipe = kLdSt;
            std::uint64_t b = in.has(kBytes) ? in.bytes : 0;
            occupancy = per_ldst_cycle_(b) * cfg_.cycle;
            if (occupancy == 0) occupancy = cfg_.cycle;
            break;
        }
        default:
            c->error = "not a vector opcode";
            gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
            return;
    }
    // Each pipeline takes its ops in order (a VLIW machine issues its load, store and ALU
    // slots independently; the core's scoreboard orders dependent ops).
    Tick start = max_tick(accept, pipe_free_[pipe]);
    Tick complete = start + occupancy + latency;
    if (pipe == kLdSt) {
        if (!mem.get_base_port().size() || !in.has(kBytes)) {
            c->error = mem.get_base_port().size() ? "vld/vst without bytes=" : "this vector unit has no memory bound to its mem socket";
            gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
            return;
        }
        bool write = in.op == Opcode::VStore;
        origin_.chip = c->chip;
        origin_.core = c->core;
        origin_.index = c->index;
        Tick done = memory_access(in, start, write);
        if (done == 0) {
            c->error = "vld/vst address range outside the VMEM it is bound to";
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        complete = max_tick(start + occupancy, done);
        (write ? bytes_stored_ : bytes_loaded_) += in.bytes;
    } else {
        elements_ += elems;
    }
    queue_.started(start);
    pipe_free_[pipe] = start + occupancy;
    pipe_busy_[pipe] += occupancy;
    busy_.add(start, start + occupancy);  // pipes interleave: any order
    busy_.settle(accept);                 // later ops are accepted (so start) no earlier
    ++ops_;

    c->accept = accept;
    // The command is taken at accept: the annotation moves on to it (unchanged when it was
    // taken at its offer, the common case: no conversion to sc_time then).
    if (accept != offered) delay = to_sc(accept - now);
    c->start = start;
    c->operands_read = start + occupancy;
    c->complete = complete;
    if (recorder_) recorder_->on_unit_op({name(), c->chip, c->core, c->index, in.op, accept, start, start + occupancy, complete});
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::vector<Stat> VectorUnit::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {
        {"ops", d(ops_), true, "vector instructions executed", "instructions"},
        {"elements", d(elements_), true, "elements processed by compute ops", "elements"},
        {"bytes_loaded", d(bytes_loaded_), true, "bytes read from VMEM by vld", "bytes"},
        {"bytes_stored", d(bytes_stored_), true, "bytes written to VMEM by vst", "bytes"},
        {"alu_busy_ns", ticks_to_ns(pipe_busy_[kAlu]), false, "elementwise pipeline occupancy", "ns"},
        {"trans_busy_ns", ticks_to_ns(pipe_busy_[kTrans]), false, "transcendental pipeline occupancy", "ns"},
        {"xlu_busy_ns", ticks_to_ns(pipe_busy_[kXlu]), false, "reduce/permute pipeline occupancy", "ns"},
        {"ldst_busy_ns", ticks_to_ns(pipe_busy_[kLdSt]), false, "load/store pipeline occupancy", "ns"},
    };
}

}  // namespace xpu
