// The text header of the transaction log (format in txlog_format.h): "key value" lines and one
// "unit" line per module of the platform. The simulator writes it (platform/txlog_meta.cpp), the
// analysis reads it back (analysis/run_data.cpp): one definition here serves both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/instruction.h"
#include "traces/module_role.h"

namespace xpu::txlog {

// A module of the platform as the log header records it.
struct Unit {
    std::string path;   // SystemC hierarchy name, e.g. xpu.chip0.core0.mxu0
    std::string kind;   // its type, for display: ScalarCore, VectorUnit, MatrixUnit, DmaEngine, HbmController...
    Role role = Role::Other;  // what it is on the chip: what the analysis asks (never the type name)
    int chip = -1;      // -1: not on a chip (links between chips)
    double peak_gbps = 0;          // HbmController, IciLink, DmaEngine: the bandwidth ceiling
    std::uint64_t capacity = 0;    // Vmem: bytes
    // A link (a "link" header line; absent in logs written before 2026-11-29: 0, 0, 0): its
    // packets, `packet_bytes` of payload plus `packet_overhead_bytes` on the wire each, and the
    // latency from a byte leaving to its arriving at the far end (models/ici.h).
    std::uint32_t packet_bytes = 0, packet_overhead_bytes = 0;
    Tick hop_latency_ps = 0;
};

// How an HBM controller spreads a request over its channels (models/hbm_controller.cpp): from
// its base, every `interleave` bytes on the next of `channels` channels; a piece's transfer on
// its channel takes transfer_ps(its bytes) (twice for a reducing write) and its data is back
// `latency_ps` after the transfer. The writer records a request's pieces by this rule where it
// gives them exactly (it checks), and the reader derives them: an "hbm" header line.
struct HbmLayout {
    std::string path;  // the controller (a unit's path)
    std::uint64_t base = 0;
    std::uint64_t interleave = 1;
    std::uint64_t channels = 1;
    Tick latency_ps = 0;
    double channel_gbps = 1;  // bytes per ns, written with 17 digits: reads back exactly

    // Time to move `bytes` on one channel, rounded up (models/sim_time.h transfer_ticks).
    Tick transfer_ps(std::uint64_t bytes) const {
        const double ps = static_cast<double>(bytes) * 1000.0 / channel_gbps;
        const Tick t = static_cast<Tick>(ps);
        return static_cast<double>(t) < ps ? t + 1 : t;
    }
    // Calls f(channel, bytes) for each piece of [addr, addr + len), in address order.
    // (One division per request: each piece after the first starts a granule, on the next channel.)
    template <class F>
    void for_each_piece(std::uint64_t addr, std::uint64_t len, F&& f) const {
        std::uint64_t off = addr - base;
        const std::uint64_t end = off + len;
        if (off >= end) return;
        std::uint64_t granule = off / interleave, channel = granule % channels;
        for (;;) {
            const std::uint64_t next = (granule + 1) * interleave;
            f(static_cast<std::uint16_t>(channel), std::min(end, next) - off);
            if (next >= end) return;
            off = next;
            ++granule;
            if (++channel == channels) channel = 0;
        }
    }
    // Pieces of [addr, addr + len) (addr - base and len as the controller sees them).
    std::uint64_t pieces(std::uint64_t addr, std::uint64_t len) const {
        if (len == 0) return 0;
        const std::uint64_t off = addr - base;
        return (off + len - 1) / interleave - off / interleave + 1;
    }
    // When a piece's transfer began, from when its data was back: it moved `service` before
    // the end of its transfer, and not before its request arrived.
    Tick start_of(Tick arrival, Tick done, Tick service) const {
        const Tick moved = done - latency_ps;
        return moved > arrival + service ? moved - service : arrival;
    }
};

struct Header {
    std::map<std::string, std::string> meta;  // "key value" lines
    std::vector<Unit> units;                  // "unit" lines, in order: name ids 1, 2, 3...; "link" lines complete them
    std::vector<HbmLayout> hbm;               // "hbm" lines
};

std::string format_header(const Header& h);

// Parses the header text; on a malformed line returns false and sets `error` to
// "header line N: expected ...".
bool parse_header(const std::string& text, Header& out, std::string& error);

}  // namespace xpu::txlog
