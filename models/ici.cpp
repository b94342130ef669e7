#include "models/ici.h"

#include "models/address.h"
#include "models/sim_time.h"

namespace xpu {

IciPort::IciPort(const sc_core::sc_module_name& n, const IciPortConfig& cfg)
    : XpuModule(n), in("in"), local("local"), links("links"), cfg_(cfg) {
    in.register_b_transport(this, &IciPort::b_transport);
    expose_target("in", in, true, false);
    expose_initiator("local", local, false, false);
    expose_initiator("links", links, true, false);
    unsigned c = cfg_.chip;
    for (unsigned d : cfg_.dims) {
        coord_.push_back(c % d);
        c /= d;
    }
}

int IciPort::route(std::uint16_t dest, std::uint64_t addr) const {
    if (cfg_.switched) return dest == cfg_.chip ? -1 : 0;
    unsigned c = dest;
    for (std::size_t d = 0; d < cfg_.dims.size(); ++d) {
        const unsigned size = cfg_.dims[d], want = c % size;
        c /= size;
        if (want == coord_[d]) continue;
        const unsigned up = (want + size - coord_[d]) % size;  // hops going +
        const bool minus = up > size - up;                      // shorter the other way
        // Parallel links: spread by address so that one stream keeps its order on one link.
        const unsigned j = cfg_.links_per_neighbour > 1 ? static_cast<unsigned>((addr >> 12) % cfg_.links_per_neighbour) : 0;
        return static_cast<int>((2 * d + (minus ? 1 : 0)) * cfg_.links_per_neighbour + j);
    }
    return -1;
}

void IciPort::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const std::uint64_t a = gp.get_address();
    if (!is_remote(a)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    delay += to_sc(cfg_.latency);
    const int link = route(remote_chip(a), a);
    if (link < 0) {  // arrived: into this chip, as a local address
        if (local.get_base_port().size() == 0) {
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        gp.set_address(local_part(a));
        if (auto* t = gp.get_extension<LinkTail>()) {  // a write lands once its last bytes are here
            if (gp.is_write()) delay += to_sc(t->lag);
            t->lag = 0;
        }
        local->b_transport(gp, delay);
        gp.set_address(a);
        ++delivered_;
        return;
    }
    if (static_cast<unsigned>(link) >= links.size()) {  // no such chip on this torus
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    links[static_cast<unsigned>(link)]->b_transport(gp, delay);
    ++forwarded_;
}

std::vector<Stat> IciPort::stats() const {
    return {{"forwarded", static_cast<double>(forwarded_), true, "transactions sent on toward another chip", "transactions"},
            {"delivered", static_cast<double>(delivered_), true, "transactions delivered into this chip", "transactions"}};
}

IciLink::IciLink(const sc_core::sc_module_name& n, const IciLinkConfig& cfg)
    : XpuModule(n), in("in"), out("out"), cfg_(cfg), cal_(cfg.bandwidth_gbps / 1000.0, IciLinkParams::kCalendarBucket) {
    in.register_b_transport(this, &IciLink::b_transport);
    expose_target("in", in, false);
    expose_initiator("out", out, false);
}

void IciLink::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const Tick now = now_ticks(), arrival = now + delay.value();
    const std::uint64_t len = gp.get_data_length();
    const std::uint64_t wire = link_wire_bytes(len, cfg_.packet_bytes, cfg_.packet_overhead_bytes);
    const Tick serial = transfer_ticks(wire, cfg_.bandwidth_gbps);
    const Tick moved = cal_.reserve(arrival, wire, now);  // last byte on the wire
    // Flow control: more than buffer_bytes ahead of this transfer means the sender must wait.
    const Tick room = transfer_ticks(cfg_.buffer_bytes, cfg_.bandwidth_gbps);
    if (auto* acc = gp.get_extension<MemAccept>())
        if (moved > arrival + room + serial) {
            const Tick stall = moved - room - serial - arrival;
            backpressure_ += stall;
            if (stall > acc->stall) acc->stall = stall;
        }
    bytes_ += len;
    wire_bytes_ += wire;
    ++transfers_;
    // Cut-through: the next hop sees the head arrive one latency after it left; its tail comes
    // `serial` later (LinkTail: where it is delivered, the write lands at its tail).
    const Tick head = moved - serial + cfg_.latency;
    if (auto* t = gp.get_extension<LinkTail>()) t->lag = serial;
    sc_core::sc_time d = to_sc(head - now);
    out->b_transport(gp, d);
    const Tick done = max_tick(now + d.value(), moved + cfg_.latency);
    if (recorder_) recorder_->on_mem(mem_event(gp, name(), gp.is_write(), gp.get_address(), len, moved - serial, moved));
    delay = to_sc(done - now);
}

std::vector<Stat> IciLink::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {{"bytes", d(bytes_), true, "payload bytes carried", "bytes"},
            {"wire_bytes", d(wire_bytes_), true, "bytes on the wire (payload + packet overhead)", "bytes"},
            {"transfers", d(transfers_), true, "transactions carried", "transactions"},
            {"backpressure_ns", ticks_to_ns(backpressure_), false, "time senders waited for buffer room", "ns"},
            {"peak_gbps", cfg_.bandwidth_gbps, false, "configured bandwidth per direction", "GB/s"}};
}

IciSwitch::IciSwitch(const sc_core::sc_module_name& n, const IciSwitchConfig& cfg)
    : XpuModule(n), in("in"), out("out"), cfg_(cfg) {
    in.register_b_transport(this, &IciSwitch::b_transport);
    expose_target("in", in, true, false);
    expose_initiator("out", out, true, false);
    for (unsigned i = 0; i < cfg_.ports; ++i) egress_.emplace_back(cfg_.bandwidth_gbps / 1000.0, 32'000);
}

void IciSwitch::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const std::uint64_t a = gp.get_address();
    const unsigned dest = remote_chip(a);
    if (!is_remote(a) || dest >= egress_.size() || dest >= out.size()) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const Tick now = now_ticks(), arrival = now + delay.value();
    const std::uint64_t len = gp.get_data_length();
    const std::uint64_t wire = link_wire_bytes(len, cfg_.packet_bytes, cfg_.packet_overhead_bytes);
    const Tick serial = transfer_ticks(wire, cfg_.bandwidth_gbps);
    // The head arrives at `arrival` (cut-through from the uplink): the port sends it on once it
    // has room, and the bytes leave no faster than the port's bandwidth.
    const Tick moved = egress_[dest].reserve(arrival, wire, now);
    const Tick head = moved - serial + cfg_.latency;
    // The tail follows the head by the slower of the uplink's and this port's time on the wire.
    if (auto* t = gp.get_extension<LinkTail>()) t->lag = std::max(t->lag, serial);
    sc_core::sc_time d = to_sc(head - now);
    out[dest]->b_transport(gp, d);
    const Tick done = max_tick(now + d.value(), moved + cfg_.latency);
    bytes_ += len;
    ++transfers_;
    delay = to_sc(done - now);
}

std::vector<Stat> IciSwitch::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {{"bytes", d(bytes_), true, "payload bytes switched", "bytes"},
            {"transfers", d(transfers_), true, "transactions switched", "transactions"},
            {"port_gbps", cfg_.bandwidth_gbps, false, "configured bandwidth of each egress port", "GB/s"}};
}

}  // namespace xpu
