#include "models/scalar_core.h"

#include <algorithm>
#include <sstream>

#include "models/sim_time.h"
#include "traces/trace_text.h"

namespace xpu {

ScalarCore::ScalarCore(const sc_core::sc_module_name& n, const ScalarCoreConfig& cfg)
    : XpuModule(n),
      imem("imem"),
      vpu("vpu"),
      mxu("mxu"),
      dma("dma"),
      flags("flags"),
      cfg_(cfg),
      buf_(static_cast<std::size_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(cfg.batch, cfg.stream_instructions)))),
      lent_(*new FetchInPlace),
      cmd_(*new UnitCommand),
      fetch_(cfg.cycle, cfg.fetch_width),
      issue_(cfg.cycle, cfg.issue_width),
      iqueue_(cfg.iqueue_depth),
      issue_slot_(cfg.cycle / (cfg.issue_width ? cfg.issue_width : 1)),
      time_by_ann_(cfg.annotations, 0) {
    expose_initiator("imem", imem, false);
    expose_initiator("vpu", vpu, true, false);
    expose_initiator("mxu", mxu, true, false);
    expose_initiator("dma", dma, true, false);
    expose_initiator("flags", flags, false, false);
    fetch_gp_.set_extension(&lent_);  // the payload owns it from here
    unit_gp_.set_command(tlm::TLM_IGNORE_COMMAND);
    unit_gp_.set_extension(&cmd_);  // the payload owns it from here
    flag_gp_.set_command(tlm::TLM_WRITE_COMMAND);
    flag_gp_.set_data_ptr(reinterpret_cast<unsigned char*>(&flag_cmd_));
    flag_gp_.set_data_length(sizeof(FlagCommand));
    flag_cmd_.requester = name();
    flag_cmd_.chip = cmd_.chip = cfg_.chip;
    flag_cmd_.core = cmd_.core = cfg_.core;
    SC_HAS_PROCESS(ScalarCore);
    SC_THREAD(run);
}

void ScalarCore::fail(const std::string& what, const Instruction& in) {
    std::ostringstream os;
    os << name() << ": chip " << cfg_.chip << " core " << cfg_.core << ", instruction " << index_
       << " (" << trace::format_instruction(in) << "): " << what;
    SC_REPORT_ERROR("xpusim/run", os.str().c_str());
    throw std::logic_error("unreachable");  // SC_REPORT_ERROR throws
}

void ScalarCore::bind_families() {
    auto read = [](FamilySocket& socket, const char* name, bool may_wait, UnitFamily& into) {
        into.name = name;
        into.may_wait = may_wait;
        into.units.clear();
        for (unsigned i = 0, n = socket.size(); i < n; ++i) into.units.push_back(socket[static_cast<int>(i)]);
    };
    read(vpu, "vpu", false, vpu_units_);
    read(mxu, "mxu", false, mxu_units_);
    read(dma, "dma", true, dma_units_);
}

void ScalarCore::run() {
    bind_families();  // elaboration is over: the bindings are final
    qk_.reset();
    for (;;) {
        fetch_gp_.set_command(tlm::TLM_READ_COMMAND);
        fetch_gp_.set_data_ptr(reinterpret_cast<unsigned char*>(buf_.data()));
        fetch_gp_.set_data_length(static_cast<unsigned>(buf_.size() * sizeof(Instruction)));
        fetch_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        lent_.first = nullptr;
        lent_.count = 0;
        sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
        imem->b_transport(fetch_gp_, zero);
        std::size_t n = fetch_gp_.get_data_length() / sizeof(Instruction);
        if (fetch_gp_.is_response_error() || n == 0) break;
        // Lent in place by the injector (valid until the next fetch), or copied into buf_.
        const Instruction* const ins = lent_.first ? lent_.first : buf_.data();
        if (lent_.first) n = std::min(n, lent_.count);
        bool halted = false;
        for (std::size_t i = 0; i < n; ++i) {
            execute(ins[i]);
            ++index_;
            if (ins[i].op == Opcode::Halt) {
                halted = true;
                break;
            }
        }
        if (halted) break;
    }
    // Drain: the core is done when its last result is.
    wait(until(last_complete_));
    finish_time_ = now_ticks();
    finished_ = true;
    // Parked rather than ended: SystemC removes an ended thread from a list linear in the
    // number of processes, which made starting thousands of chips (their cores without a
    // stream end at once) quadratic. Nothing notifies this event; no activity stays pending.
    wait(parked_);
}

void ScalarCore::execute(const Instruction& in) {
    // Instruction supply: fetch bandwidth, and room in the issue queue.
    Tick arrival = fetch_.next(iqueue_.accept(0));
    // Register ids index the scoreboard: an id past the last register is a bad trace, not a
    // memory error (sim_main checks traces before the run; direct users of the models may not).
    if ((in.has(kDst) && in.dst >= kNumRegs) || (in.has(kSrc0) && in.src[0] >= kNumRegs) ||
        (in.has(kSrc1) && in.src[1] >= kNumRegs) || (in.has(kSrc2) && in.src[2] >= kNumRegs))
        fail("register id out of range (registers are s0..s63, v0..v63, m0..m63)", in);
    // Operands (RAW) and the destination's pending readers (WAR).
    Tick ready = arrival;
    if (in.has(kSrc0)) ready = max_tick(ready, reg_ready_[in.src[0]]);
    if (in.has(kSrc1)) ready = max_tick(ready, reg_ready_[in.src[1]]);
    if (in.has(kSrc2)) ready = max_tick(ready, reg_ready_[in.src[2]]);
    if (in.has(kDst)) ready = max_tick(ready, reg_read_until_[in.dst]);

    Tick slot = issue_.next(ready);
    Tick issue = slot, complete = slot, operands_read = slot;
    UnitKind kind = unit_kind(in.op);
    switch (kind) {
        case UnitKind::Scalar:
            complete = slot + cfg_.cycle * (in.op == Opcode::Branch ? cfg_.branch_latency
                                                                    : cfg_.salu_latency);
            break;
        case UnitKind::Vector:
            issue = dispatch_to_unit(vpu_units_, in, slot, complete, operands_read);
            break;
        case UnitKind::Matrix:
            issue = dispatch_to_unit(mxu_units_, in, slot, complete, operands_read);
            break;
        case UnitKind::Dma:
            issue = dispatch_to_unit(dma_units_, in, slot, complete, operands_read);
            break;
        case UnitKind::Sync:
            issue = sync_op(in, slot);
            complete = issue + cfg_.cycle * cfg_.sync_latency;
            operands_read = issue;
            break;
    }
    if (issue > slot) issue_.moved_to(issue);
    iqueue_.started(issue);

    if (in.has(kDst)) reg_ready_[in.dst] = max_tick(reg_ready_[in.dst], complete);
    if (in.has(kSrc0)) reg_read_until_[in.src[0]] = max_tick(reg_read_until_[in.src[0]], operands_read);
    if (in.has(kSrc1)) reg_read_until_[in.src[1]] = max_tick(reg_read_until_[in.src[1]], operands_read);
    if (in.has(kSrc2)) reg_read_until_[in.src[2]] = max_tick(reg_read_until_[in.src[2]], operands_read);
    last_complete_ = max_tick(last_complete_, complete);
    if (in.has(kAnn) && in.ann < time_by_ann_.size()) time_by_ann_[in.ann] += issue - last_issue_;
    last_issue_ = issue;
    busy_.add(issue, issue + issue_slot_);
    ++retired_;
    ++per_kind_[static_cast<unsigned>(kind)];

    if (recorder_) {
        InstrEvent ev;
        ev.chip = cfg_.chip;
        ev.core = cfg_.core;
        ev.index = index_;
        ev.in = &in;
        ev.arrival = arrival;
        ev.ready = ready;
        ev.issue = issue;
        ev.complete = complete;
        recorder_->on_instruction(ev);
    }
    // Temporal decoupling: never lead the kernel by more than one quantum.
    if (qk_.past_quantum(issue)) qk_.sync_to(issue);
}

Tick ScalarCore::dispatch_to_unit(const UnitFamily& fam, const Instruction& in, Tick t, Tick& complete,
                                  Tick& operands_read) {
    if (in.unit >= fam.units.size()) {
        std::ostringstream os;
        os << "unit " << fam.name << "[" << unsigned(in.unit) << "] does not exist (this core has "
           << fam.units.size() << " bound to its " << fam.name << " socket)";
        fail(os.str(), in);
    }
    cmd_.in = &in;
    cmd_.index = index_;
    cmd_.accept = cmd_.start = cmd_.operands_read = cmd_.complete = t;
    cmd_.error = nullptr;
    unit_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    // The instruction is offered at t: the annotated delay says how far t is ahead of the
    // kernel (units take now + delay as the offer time, as memories take their arrival). The
    // core's local time never lags the kernel here: it waits only to reach its own local time
    // (quantum), in sync operations (it resumes at the kernel time) and in a full DMA queue,
    // which accepts no earlier than the kernel time it wakes the core at.
    const Tick now = now_ticks();
    const Tick ahead = t > now ? t - now : 0;
    // sc_time::from_value is a library call: the last annotation is kept and reused while the
    // core's lead over the kernel stays the same (instructions issued in the same cycle).
    if (ahead != delay_ticks_) {
        delay_ticks_ = ahead;
        delay_sc_ = to_sc(ahead);
    }
    sc_core::sc_time delay = delay_sc_;
    fam.units[in.unit]->b_transport(unit_gp_, delay);
    if (fam.may_wait) qk_.reset();  // a full DMA queue waits: a new quantum
    if (unit_gp_.is_response_error())
        fail(cmd_.error ? cmd_.error : "the unit rejected the instruction", in);
    complete = cmd_.complete;
    operands_read = cmd_.operands_read;
    return cmd_.accept;
}

Tick ScalarCore::sync_op(const Instruction& in, Tick t) {
    if (flags.get_base_port().size() == 0) fail("no SyncFlags bound to this core's flags socket", in);
    // Flags are shared with other processes: act at the right kernel time.
    wait(until(t));
    flag_cmd_.flag = in.has(kFlag) ? in.flag : 0;
    flag_cmd_.value = in.has(kValue) ? in.value : 0;
    flag_cmd_.cond = in.has(kCond) ? in.cond : Cond::Ge;
    flag_cmd_.in = &in;
    flag_cmd_.index = index_;
    switch (in.op) {
        case Opcode::SSet: flag_cmd_.op = FlagCommand::Op::Set; break;
        case Opcode::SAdd: flag_cmd_.op = FlagCommand::Op::Add; break;
        case Opcode::SWait: flag_cmd_.op = FlagCommand::Op::Wait; break;
        default: flag_cmd_.op = FlagCommand::Op::Barrier; break;
    }
    flag_gp_.set_address(flag_cmd_.flag);
    flag_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    blocked_ = &in;
    blocked_index_ = index_;
    Tick before = now_ticks();
    sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
    flags->b_transport(flag_gp_, zero);  // blocks (in kernel time) for waits and barriers
    blocked_ = nullptr;
    if (flag_gp_.is_response_error()) fail("flag id out of range for " + std::string(flags.get_base_port().name()), in);
    Tick after = now_ticks();
    qk_.reset();  // this thread waited: a new quantum from here
    sync_wait_ += after - before;
    return after;
}

std::vector<Stat> ScalarCore::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {
        {"instructions", d(retired_), true, "instructions retired", "instructions"},
        {"scalar_instructions", d(per_kind_[0]), true, "executed on the scalar core itself", "instructions"},
        {"vector_instructions", d(per_kind_[1]), true, "dispatched to vector units", "instructions"},
        {"matrix_instructions", d(per_kind_[2]), true, "dispatched to matrix units", "instructions"},
        {"dma_instructions", d(per_kind_[3]), true, "dispatched to DMA engines", "instructions"},
        {"sync_instructions", d(per_kind_[4]), true, "sync-flag operations and barriers", "instructions"},
        {"sync_wait_ns", ticks_to_ns(sync_wait_), false, "time spent blocked in flag waits and barriers", "ns"},
        {"finish_ns", ticks_to_ns(finish_time_), false, "time the core's last result was ready", "ns"},
    };
}

}  // namespace xpu
