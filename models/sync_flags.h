// SyncFlags: the chip's synchronisation flags (semaphores), shared by its cores and DMA
// engines over TLM. A payload's data points at a FlagCommand; the address is the flag id.
// Set and Add take effect at the caller's time: now, or (an annotated delay, e.g. a flag write
// that arrives over the inter-chip links) later, without blocking the caller. Wait and Barrier
// block the calling thread in b_transport until their condition holds, which is how LT TLM-2.0
// models a blocking target. The flag id travels in the command, so the same target also serves
// flag writes routed by address through an interconnect (the address only selects the target). The blocked requesters are kept for deadlock diagnosis.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "models/params.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct SyncFlagsParams {
    unsigned flags = 1024;

    void declare(ParamVisitor& v) { v.u32("flags", flags, 1, 65536, "flags", "number of sync flags"); }
};

// The parameters and what the builder derives.
struct SyncFlagsConfig : SyncFlagsParams {
    unsigned barrier_participants = 1;  // cores that meet at a barrier
};

struct FlagWaiter {
    std::string requester;
    const Instruction* in = nullptr;
    std::uint64_t index = 0;
    FlagCommand::Op op = FlagCommand::Op::Wait;
    std::uint16_t flag = 0;
    Cond cond = Cond::Eq;
    std::int64_t value = 0;
};

class SyncFlags : public XpuModule {
public:
    tlm_utils::multi_passthrough_target_socket<SyncFlags, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        port;
    const SyncFlagsConfig& config() const { return cfg_; }

    SyncFlags(const sc_core::sc_module_name& n, const SyncFlagsConfig& cfg);
    const char* kind() const override { return "SyncFlags"; }
    Role role() const override { return Role::Flags; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.capacity = cfg_.flags;  // flags, not bytes
        return f;
    }
    std::vector<Stat> stats() const override;
    std::int64_t value(std::uint16_t flag) const { return values_.at(flag); }
    const std::vector<FlagWaiter>& waiters() const { return waiters_; }
    std::size_t barrier_arrivals() const { return arrivals_; }

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    std::int64_t sum(std::uint16_t flag, std::int64_t add, const Origin& by) const;
    void change(std::uint16_t flag, std::int64_t v, const Origin& by);
    void apply_due();  // applies delayed sets/adds whose time has come

    struct Delayed {
        Tick at = 0;
        FlagCommand::Op op = FlagCommand::Op::Add;
        std::uint16_t flag = 0;
        std::int64_t value = 0;
        Origin by;
    };
    std::deque<Delayed> delayed_;   // in arrival order; applied in time order
    sc_core::sc_event_queue due_;

    SyncFlagsConfig cfg_;
    std::vector<std::int64_t> values_;
    std::vector<std::unique_ptr<sc_core::sc_event>> changed_;  // per flag, made on its first wait
    sc_core::sc_event barrier_done_{"barrier_done"};  // named: see dma_engine.h
    std::uint64_t generation_ = 0;
    std::size_t arrivals_ = 0;
    std::vector<FlagWaiter> waiters_;
    std::uint64_t sets_ = 0, adds_ = 0, waits_ = 0, barriers_ = 0;
};

}  // namespace xpu
