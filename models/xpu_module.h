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

// What a module says about itself to the platform around it (the run's accounting, the
// transaction log's header, the waveform writer): plain figures, 0 where they do not apply.
// A new model fills in those that concern it and is then counted like the others.
struct ModuleFacts {
    double peak_gbps = 0;            // bandwidth ceiling: an HBM (all its channels), a DMA engine, a link
    std::uint64_t capacity = 0;      // bytes it serves (HBM, VMEM), or flags it holds (sync flags)
    unsigned channels = 0;           // interleaved channels (HBM): a group of waveforms each
    std::uint64_t bytes_read = 0, bytes_written = 0;  // a memory: bytes served so far
    std::uint64_t bytes_sent = 0;    // a link: payload bytes sent so far
    int from_chip = -1;              // a link: the chip it leaves (its bytes count as that chip's)
    unsigned packet_bytes = 0;       // a link: payload bytes per packet (0: not packetised)
    unsigned packet_overhead_bytes = 0;  // a link: header/CRC bytes each packet adds on the wire
    Tick hop_latency = 0;            // a link: ps from a byte leaving to its arriving at the far end
    int core = -1;                   // a core: the id of the trace streams it runs
    Tick cycle = 0;                  // a core: its clock period, ps
    Tick issue_slot = 0;             // a core: ps per issue slot (cycle / issue width)
    double flops = 0, peak_flops_per_s = 0;  // a compute unit: work done so far, and its peak
};

// The waveforms a module offers (docs/waveforms.md): one of the sets the waveform writer knows
// how to feed from the Recorder's events. By default the module's role picks it
// (XpuModule::waveforms); a model may offer another set by overriding waveforms().
enum class WaveSet : std::uint8_t {
    None,     // no waveforms
    Issue,    // a core: opcode, stall, iq_depth (from on_instruction)
    Ops,      // an execution unit: busy, op (from on_unit_op)
    Queue,    // a DMA engine: queued, inflight_bytes (from on_dma)
    Traffic,  // a memory: requests, bytes_served (from on_mem as the target)
    Wire,     // a link: busy, occupancy (from on_mem as the target)
};
struct Waveforms {
    WaveSet set = WaveSet::None;
    int order = 0;            // display order among the blocks of one set beside each other (vector before matrix, HBM before VMEM)
    unsigned channels = 0;    // Traffic: per-channel requests and bytes_served (from on_hbm_channel)
    bool allocation = false;  // Traffic: bytes_allocated, by liveness of the streams that use it
};

// A statistic: name, value, what it means and its unit (gem5-style: every figure documented).
// The one declaration that produces the value also documents it: stats.json's "descriptions"
// are written from these fields, so a figure and its meaning cannot drift apart.
struct Stat {
    std::string name;
    double value = 0;
    bool integer = true;
    std::string desc;
    std::string unit;  // what the value counts or measures: "ns", "bytes", "GB/s", "instructions", ...
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
    // Figures the platform asks of it (see ModuleFacts); none by default.
    virtual ModuleFacts facts() const { return {}; }
    // The waveforms it offers; by default those of its role (waveforms_of: a table keyed by role).
    virtual Waveforms waveforms() const { return waveforms_of(role(), facts()); }
    static Waveforms waveforms_of(Role r, const ModuleFacts& f);
    // The chip it sits on, set once by whoever builds the platform; -1: on none (a link between chips).
    int chip() const { return chip_; }
    void set_chip(int c) { chip_ = c; }
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
    int chip_ = -1;
};

inline Waveforms XpuModule::waveforms_of(Role r, const ModuleFacts& f) {
    Waveforms w;
    switch (r) {
        case Role::Core: w.set = WaveSet::Issue; break;
        case Role::Vector: w.set = WaveSet::Ops, w.order = 1; break;
        case Role::Matrix: w.set = WaveSet::Ops, w.order = 2; break;
        case Role::Dma: w.set = WaveSet::Queue; break;
        case Role::Hbm: w.set = WaveSet::Traffic, w.order = 0, w.channels = f.channels > 0 ? f.channels : 1; break;
        case Role::Vmem: w.set = WaveSet::Traffic, w.order = 1, w.allocation = true; break;
        case Role::Link: w.set = WaveSet::Wire; break;
        default: break;
    }
    return w;
}

inline SocketPort* XpuModule::port(const std::string& name) {
    for (auto& p : ports_)
        if (p.name == name) return &p;
    return nullptr;
}

}  // namespace xpu
