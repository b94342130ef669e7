#include "models/sync_flags.h"

#include <sstream>
#include <stdexcept>

#include <algorithm>

#include "models/sim_time.h"

namespace xpu {

namespace {
Origin origin_of(const FlagCommand& c) { return {c.in != nullptr, c.chip, c.core, c.index}; }
}  // namespace

SyncFlags::SyncFlags(const sc_core::sc_module_name& n, const SyncFlagsConfig& cfg)
    : XpuModule(n), port("port"), cfg_(cfg), values_(cfg.flags, 0), changed_(cfg.flags) {
    port.register_b_transport(this, &SyncFlags::b_transport);
    expose_target("port", port, true, false);
    SC_HAS_PROCESS(SyncFlags);
    SC_METHOD(apply_due);
    sensitive << due_;
    dont_initialize();
}

void SyncFlags::apply_due() {
    const Tick now = now_ticks();
    // Apply everything due, earliest first (arrivals may have been announced out of order).
    for (;;) {
        auto it = delayed_.end();
        for (auto j = delayed_.begin(); j != delayed_.end(); ++j)
            if (j->at <= now && (it == delayed_.end() || j->at < it->at)) it = j;
        if (it == delayed_.end()) break;
        Delayed d = *it;
        delayed_.erase(it);
        if (d.op == FlagCommand::Op::Set) {
            ++sets_;
            change(d.flag, d.value, d.by);
        } else {
            ++adds_;
            change(d.flag, sum(d.flag, d.value, d.by), d.by);
        }
    }
}

// A flag is a signed 64-bit value: an add that would leave that range is the trace's error (exit
// 4 through the run's error report), never a silent wrap that might release a wait.
std::int64_t SyncFlags::sum(std::uint16_t flag, std::int64_t add, const Origin& by) const {
    std::int64_t out = 0;
    if (!__builtin_add_overflow(values_[flag], add, &out)) return out;
    std::ostringstream os;
    os << name() << ": ";
    if (by.known) os << "chip " << by.chip << " core " << by.core << ", instruction " << by.index << ": ";
    os << "adding " << add << " to flag " << flag << " (value " << values_[flag]
       << ") overflows a flag's range (expected the sum within -9223372036854775808..9223372036854775807)";
    SC_REPORT_ERROR("xpusim/run", os.str().c_str());
    throw std::logic_error("unreachable");  // SC_REPORT_ERROR throws
}

void SyncFlags::change(std::uint16_t flag, std::int64_t v, const Origin& by) {
    std::int64_t old = values_[flag];
    values_[flag] = v;
    if (recorder_) recorder_->on_flag({name(), flag, old, v, now_ticks(), by});
    if (changed_[flag]) changed_[flag]->notify();
}

void SyncFlags::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* c = reinterpret_cast<FlagCommand*>(gp.get_data_ptr());
    if (!c || gp.get_data_length() != sizeof(FlagCommand) || c->flag >= values_.size()) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    // Flags are observed by other threads: act at the caller's time, in kernel time.
    const bool posted = c->op == FlagCommand::Op::Set || c->op == FlagCommand::Op::Add;
    if (posted && c->not_before > now_ticks() + delay.value()) delay = to_sc(c->not_before - now_ticks());
    if (delay != sc_core::SC_ZERO_TIME) {
        if (posted) {
            delayed_.push_back({now_ticks() + delay.value(), c->op, c->flag, c->value, origin_of(*c)});
            due_.notify(delay);
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        wait(delay);
        delay = sc_core::SC_ZERO_TIME;
    }
    auto remember = [&] {
        waiters_.push_back({c->requester, c->in, c->index, c->op, c->flag, c->cond, c->value});
    };
    auto forget = [&] {
        auto it = std::find_if(waiters_.begin(), waiters_.end(),
                               [&](const FlagWaiter& w) { return w.requester == c->requester; });
        if (it != waiters_.end()) waiters_.erase(it);
    };
    switch (c->op) {
        case FlagCommand::Op::Set:
            ++sets_;
            change(c->flag, c->value, origin_of(*c));
            break;
        case FlagCommand::Op::Add:
            ++adds_;
            change(c->flag, sum(c->flag, c->value, origin_of(*c)), origin_of(*c));
            break;
        case FlagCommand::Op::Wait:
            ++waits_;
            if (!cond_holds(c->cond, values_[c->flag], c->value)) {
                remember();
                // The flag's event, made when first waited on: a chip has ~1000 flags and a
                // 4096-chip platform would otherwise build (and name) 4 million events.
                if (!changed_[c->flag]) changed_[c->flag] = std::make_unique<sc_core::sc_event>();
                while (!cond_holds(c->cond, values_[c->flag], c->value)) wait(*changed_[c->flag]);
                forget();
            }
            break;
        case FlagCommand::Op::Barrier: {
            ++barriers_;
            if (++arrivals_ >= cfg_.barrier_participants) {
                arrivals_ = 0;
                ++generation_;
                barrier_done_.notify();
            } else {
                std::uint64_t gen = generation_;
                remember();
                while (generation_ == gen) wait(barrier_done_);
                forget();
            }
            break;
        }
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::vector<Stat> SyncFlags::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {{"sets", d(sets_), true, "flag set operations", "operations"},
            {"adds", d(adds_), true, "flag add operations (DMA completions included)", "operations"},
            {"waits", d(waits_), true, "flag waits", "operations"},
            {"barriers", d(barriers_), true, "barrier arrivals", "arrivals"}};
}

}  // namespace xpu
