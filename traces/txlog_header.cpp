#include "traces/txlog_header.h"

#include <sstream>

namespace xpu::txlog {

std::string format_header(const Header& h) {
    std::ostringstream os;
    for (const auto& [k, v] : h.meta) os << k << ' ' << v << '\n';
    for (const auto& u : h.units)
        os << "unit " << u.path << ' ' << u.kind << ' ' << role_name(u.role) << ' ' << u.chip << ' ' << u.peak_gbps << ' ' << u.capacity << '\n';
    return os.str();
}

bool parse_header(const std::string& text, Header& out, std::string& error) {
    std::istringstream is(text);
    std::string line;
    int n = 0;
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
        } else {
            out.meta[key] = value;
        }
    }
    return true;
}

}  // namespace xpu::txlog
