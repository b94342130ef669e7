// The common face of every xpusim model: its TLM-2.0 sockets by name (so a platform builder
// can bind them from a description), its busy time, and its statistics. Nothing here knows
// about YAML or files: an architect can instantiate and bind the models by hand.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>

#include "traces/instruction.h"
#include "models/recorder.h"
#include "traces/module_role.h"

namespace xpu {

using TargetSocketBase =
    tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;

struct SocketPort {
    std::string name;
    bool initiator = false;
    bool multi = false;     // accepts several bindings (index = binding order)
    bool required = true;   // must be bound at least once
    std::function<void(TargetSocketBase&)> bind;  // initiators only
    TargetSocketBase* target = nullptr;            // targets only
    unsigned bound = 0;                            // bindings made so far
};

// A statistic: name, value and what it means (gem5-style: every figure documented).
struct Stat {
    std::string name;
    double value = 0;
    bool integer = true;
    std::string desc;
};

class XpuModule : public sc_core::sc_module {
public:
    explicit XpuModule(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {}
    virtual const char* kind() const = 0;  // the type's name, for display
    virtual Role role() const = 0;         // what it is on the chip: what others ask of it
    std::vector<SocketPort>& ports() { return ports_; }
    SocketPort* port(const std::string& name);
    // Busy time of a compute/transfer unit (for utilisation); nullopt for modules with none.
    virtual std::optional<Tick> busy_time() const { return std::nullopt; }
    virtual std::vector<Stat> stats() const { return {}; }
    void set_recorder(Recorder* r) { recorder_ = r; }

protected:
    template <class Socket>
    void expose_initiator(const char* name, Socket& s, bool multi, bool required = true) {
        SocketPort p;
        p.name = name;
        p.initiator = true;
        p.multi = multi;
        p.required = required;
        p.bind = [&s](TargetSocketBase& t) { s.bind(t); };
        ports_.push_back(std::move(p));
    }
    template <class Socket>
    void expose_target(const char* name, Socket& s, bool multi, bool required = true) {
        SocketPort p;
        p.name = name;
        p.multi = multi;
        p.required = required;
        p.target = &s;
        ports_.push_back(std::move(p));
    }
    Recorder* recorder_ = nullptr;

private:
    std::vector<SocketPort> ports_;
};

inline SocketPort* XpuModule::port(const std::string& name) {
    for (auto& p : ports_)
        if (p.name == name) return &p;
    return nullptr;
}

}  // namespace xpu
