#include "traces/txlog_header.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace xpu::txlog {

std::string format_header(const Header& h) {
    std::ostringstream os;
    for (const auto& [k, v] : h.meta) os << k << ' ' << v << '\n';
    for (const auto& u : h.units)
        os << "unit " << u.path << ' ' << u.kind << ' ' << role_name(u.role) << ' ' << u.chip << ' ' << u.peak_gbps << ' ' << u.capacity << '\n';
    for (const auto& u : h.units)
        if (u.packet_bytes)
            os << "link " << u.path << ' ' << u.packet_bytes << ' ' << u.packet_overhead_bytes << ' ' << u.hop_latency_ps << '\n';
    for (const auto& l : h.hbm) {
        char bw[40];
        std::snprintf(bw, sizeof bw, "%.17g", l.channel_gbps);
        os << "hbm " << l.path << ' ' << l.base << ' ' << l.interleave << ' ' << l.channels << ' ' << l.latency_ps << ' ' << bw << '\n';
    }
    return os.str();
}

bool parse_header(const std::string& text, Header& out, std::string& error) {
    std::istringstream is(text);
    std::string line;
    int n = 0;
    std::size_t next_link = 0;  // where the last link line's unit was, plus one (see "link")
    while (std::getline(is, line)) {
        ++n;
        if (line.empty()) continue;
        const auto sp = line.find(' ');
        const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (key == "unit") {
            std::istringstream us(value);
            Unit u;
            std::string role;
            if (!(us >> u.path >> u.kind >> role >> u.chip >> u.peak_gbps >> u.capacity) || !parse_role(role, u.role)) {
                error = "header line " + std::to_string(n) + ": expected 'unit PATH KIND ROLE CHIP PEAK_GBPS CAPACITY'";
                return false;
            }
            out.units.push_back(u);
        } else if (key == "link") {
            // After the unit lines and in their order (format_header writes them so): each found
            // from where the one before was, so that a 4096-chip torus's 16 k links are not each
            // looked for among its 180 k units from the start (0.9 s for a 4096-chip ring's).
            std::istringstream us(value);
            std::string path;
            Unit l;
            auto it = out.units.end();
            if (us >> path >> l.packet_bytes >> l.packet_overhead_bytes >> l.hop_latency_ps && l.packet_bytes > 0) {
                auto named = [&](const Unit& u) { return u.path == path; };
                const auto from = out.units.begin() + static_cast<std::ptrdiff_t>(std::min(next_link, out.units.size()));
                it = std::find_if(from, out.units.end(), named);
                if (it == out.units.end()) {
                    const auto before = std::find_if(out.units.begin(), from, named);
                    if (before != from) it = before;
                }
            }
            if (it == out.units.end()) {
                error = "header line " + std::to_string(n) +
                        ": expected 'link PATH PACKET_BYTES OVERHEAD_BYTES LATENCY_PS' for a unit named on an earlier line (packet bytes > 0)";
                return false;
            }
            next_link = static_cast<std::size_t>(it - out.units.begin()) + 1;
            it->packet_bytes = l.packet_bytes;
            it->packet_overhead_bytes = l.packet_overhead_bytes;
            it->hop_latency_ps = l.hop_latency_ps;
        } else if (key == "hbm") {
            std::istringstream us(value);
            HbmLayout l;
            std::string bw;
            char* end = nullptr;
            if (!(us >> l.path >> l.base >> l.interleave >> l.channels >> l.latency_ps >> bw) || l.interleave == 0 || l.channels == 0 ||
                (l.channel_gbps = std::strtod(bw.c_str(), &end), end != bw.c_str() + bw.size()) || !(l.channel_gbps > 0)) {
                error = "header line " + std::to_string(n) + ": expected 'hbm PATH BASE INTERLEAVE CHANNELS LATENCY_PS CHANNEL_GBPS' (counts and bandwidth > 0)";
                return false;
            }
            out.hbm.push_back(l);
        } else {
            out.meta[key] = value;
        }
    }
    return true;
}

}  // namespace xpu::txlog
