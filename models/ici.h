// Inter-chip interconnect (ICI): one IciPort per chip and one IciLink per direction of every
// neighbour connection of the torus.
//
// IciPort routes a transaction addressed to another chip (see address.h) over the links with
// dimension-order routing (dimension 0 first, the shorter way around each ring), and hands a
// transaction addressed to its own chip to the chip's interconnect (`local`) with the remote
// bits stripped. IciLink is one direction of one link: a BandwidthCalendar at
// `bandwidth_gbps` carrying the payload plus `packet_overhead_bytes` per `packet_bytes` packet,
// with `latency` per hop; transfers are cut-through (the next hop starts when the head
// arrives). A link holds at most `buffer_bytes` in flight: a sender that would overflow it is
// accepted only when room frees (back-pressure, reported via MemAccept).
#pragma once

#include <algorithm>
#include <vector>

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/lt_target_socket.h"
#include "models/bandwidth_calendar.h"
#include "models/params.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"
#include "traces/link_wire.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct IciPortParams {
    Tick latency = 2'000;  // ps

    void declare(ParamVisitor& v) { v.ticks_ns("latency_ns", latency, 0, 1e6, "latency through the port"); }
};

// The parameters and what the builder derives (from the description's topology).
struct IciPortConfig : IciPortParams {
    std::uint16_t chip = 0;
    std::vector<unsigned> dims;        // torus dimensions (a ring: one), product = chips
    unsigned links_per_neighbour = 1;  // parallel links per direction
    bool switched = false;             // topology switch: every other chip through links[0] (the uplink)
};

class IciPort : public XpuModule {
public:
    tlm_utils::multi_passthrough_target_socket<IciPort, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        in;  // from the chip's interconnect and from incoming links
    tlm_utils::simple_initiator_socket_optional<IciPort> local;  // -> this chip's Interconnect.in
    tlm_utils::multi_passthrough_initiator_socket<IciPort, 32, tlm::tlm_base_protocol_types, 0,
                                                  sc_core::SC_ZERO_OR_MORE_BOUND>
        links;  // [(2 x dim + (minus ? 1 : 0)) x links_per_neighbour + j] -> IciLink.in

    IciPort(const sc_core::sc_module_name& n, const IciPortConfig& cfg);
    const char* kind() const override { return "IciPort"; }
    Role role() const override { return Role::IciPort; }
    std::vector<Stat> stats() const override;
    // The socket index of the link toward `dest` taken by a transaction from this chip
    // (dimension-order routing); -1 if dest is this chip.
    int route(std::uint16_t dest, std::uint64_t addr) const;

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    IciPortConfig cfg_;
    std::vector<unsigned> coord_;
    std::uint64_t forwarded_ = 0, delivered_ = 0;
};

// The links are not modules of the description: the builder creates them from `topology`, whose
// `link` mapping holds these parameters.
struct IciLinkParams {
    double bandwidth_gbps = 50;  // per direction
    Tick latency = 500'000;      // ps per hop
    unsigned packet_bytes = 1024;
    unsigned packet_overhead_bytes = 64;
    std::uint64_t buffer_bytes = 256 * 1024;

    void declare(ParamVisitor& v) {
        v.real("bandwidth_gbps", bandwidth_gbps, 0.001, 1e6, "GB/s", "GB/s per direction of one link");
        v.ticks_ns("latency_ns", latency, 0, 1e6, "per hop");
        v.u32("packet_bytes", packet_bytes, 1, 1u << 24, "bytes", "payload bytes per packet");
        v.u32("packet_overhead_bytes", packet_overhead_bytes, 0, 1u << 20, "bytes", "header/CRC bytes per packet");
        v.bytes("buffer_bytes", buffer_bytes, 1, 1ull << 40, "bytes in flight on a link before back-pressure");
    }

    static constexpr Tick kCalendarBucket = 32'000;  // ps: the link's bandwidth calendar
    // Bytes on the wire per payload byte (packet overhead included).
    double wire_factor() const { return link_least_wire_bytes(1.0, packet_bytes, packet_overhead_bytes); }
    // What one link's calendar needs, about, with its buffer full (at most 64 MiB of payload
    // counted: beyond, traffic rather than the setting decides): checked before building.
    double calendar_memory() const {
        const double ahead = static_cast<double>(std::min<std::uint64_t>(buffer_bytes, 64ull << 20) + packet_bytes) * wire_factor();
        return BandwidthCalendar::memory_for(bandwidth_gbps / 1000.0, kCalendarBucket, ahead);
    }
};

struct IciLinkConfig : IciLinkParams {};

class IciLink : public XpuModule {
public:
    LtTargetSocket<IciLink> in;
    tlm_utils::simple_initiator_socket<IciLink> out;  // -> the next chip's IciPort.in

    IciLink(const sc_core::sc_module_name& n, const IciLinkConfig& cfg);
    const IciLinkConfig& config() const { return cfg_; }
    const char* kind() const override { return "IciLink"; }
    Role role() const override { return Role::Link; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.peak_gbps = cfg_.bandwidth_gbps;
        f.bytes_sent = bytes_;
        f.from_chip = from_chip_;
        f.packet_bytes = cfg_.packet_bytes;
        f.packet_overhead_bytes = cfg_.packet_overhead_bytes;
        f.hop_latency = cfg_.latency;
        return f;
    }
    // The chip it leaves from (set by whoever builds the links).
    void set_from_chip(int c) { from_chip_ = c; }
    std::optional<Tick> busy_time() const override { return cal_.busy(); }
    std::vector<Stat> stats() const override;
    std::uint64_t bytes() const { return bytes_; }
    std::uint64_t wire_bytes() const { return wire_bytes_; }

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    IciLinkConfig cfg_;
    BandwidthCalendar cal_;
    std::uint64_t bytes_ = 0, wire_bytes_ = 0, transfers_ = 0;
    int from_chip_ = -1;
    Tick backpressure_ = 0;
};

// A switched topology (`topology.kind: switch`, GPU-style scale-up domains): every chip has one
// uplink (an IciLink of topology.link) into one crossbar, and the crossbar one egress port per
// chip. A transfer crosses its uplink (link bandwidth and latency), then the crossbar (one hop:
// `latency_ns`, and the egress port toward its destination at `bandwidth_gbps`, a
// BandwidthCalendar with the link's packet overhead), cut-through like the links. Many chips
// sending to one (incast) share that egress port; disjoint pairs do not interfere.
// Closed form of one transfer of x bytes: link latency + latency_ns + wire(x) / min(link, port).
struct IciSwitchParams {
    double bandwidth_gbps = 450;  // per egress port
    Tick latency = 100'000;       // ps through the crossbar

    void declare(ParamVisitor& v) {
        v.real("bandwidth_gbps", bandwidth_gbps, 0.001, 1e6, "GB/s", "GB/s of each egress port (one per chip)");
        v.ticks_ns("latency_ns", latency, 0, 1e6, "through the crossbar");
    }
};

struct IciSwitchConfig : IciSwitchParams {
    unsigned ports = 2;                  // = chips
    unsigned packet_bytes = 1024;        // the links' packetisation (topology.link)
    unsigned packet_overhead_bytes = 64;
};

class IciSwitch : public XpuModule {
public:
    tlm_utils::multi_passthrough_target_socket<IciSwitch, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        in;  // from every chip's uplink
    tlm_utils::multi_passthrough_initiator_socket<IciSwitch, 32, tlm::tlm_base_protocol_types, 0,
                                                  sc_core::SC_ZERO_OR_MORE_BOUND>
        out;  // [chip] -> that chip's IciPort.in

    IciSwitch(const sc_core::sc_module_name& n, const IciSwitchConfig& cfg);
    const char* kind() const override { return "IciSwitch"; }
    Role role() const override { return Role::Router; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.peak_gbps = cfg_.bandwidth_gbps;
        return f;
    }
    std::vector<Stat> stats() const override;

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    IciSwitchConfig cfg_;
    std::vector<BandwidthCalendar> egress_;
    std::uint64_t bytes_ = 0, transfers_ = 0;
};

}  // namespace xpu
