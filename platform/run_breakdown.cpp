#include "platform/run_breakdown.h"

#include <algorithm>
#include <map>

#include "models/sim_time.h"

namespace xpu::platform {

std::string op_of(const std::string& a) {
    std::string s = a;
    if (s.rfind("layer", 0) == 0) {
        auto slash = s.find('/');
        if (slash != std::string::npos) s = s.substr(slash + 1);
    }
    auto last = s.rfind('/');
    if (last != std::string::npos) s = s.substr(0, last);
    return s;
}

bool is_communication(const std::string& op) {
    return op.find("all_reduce") != std::string::npos || op.find("all_gather") != std::string::npos ||
           op.find("reduce_scatter") != std::string::npos || op.find("all-gather") != std::string::npos ||
           op.find("all-reduce") != std::string::npos || op.find("reduce-scatter") != std::string::npos;
}

Breakdown breakdown(const Platform& p, const std::vector<std::string>& annotations) {
    Breakdown b;
    std::map<unsigned, ChipFigure> chips;
    std::map<std::string, double> ops;
    double total = 0;
    for (auto* core : p.cores()) {
        ChipFigure& c = chips[core->config().chip];
        c.chip = core->config().chip;
        c.instructions += core->retired();
        c.finish_ns = std::max(c.finish_ns, ticks_to_ns(core->finish_time()));
        const auto& t = core->time_by_annotation();
        for (std::size_t i = 0; i < t.size() && i < annotations.size(); ++i) {
            if (!t[i]) continue;
            ops[op_of(annotations[i])] += ticks_to_ns(t[i]);
            total += ticks_to_ns(t[i]);
        }
    }
    // HBM traffic counts for the chip it sits on, a link's for the chip it leaves.
    for (auto* m : p.modules()) {
        const Role role = m->role();
        if (role != Role::Hbm && role != Role::Link) continue;
        const ModuleFacts f = m->facts();
        const int chip = role == Role::Link ? f.from_chip : m->chip();
        ChipFigure& c = chips[chip < 0 ? 0u : static_cast<unsigned>(chip)];
        c.hbm_bytes_read += f.bytes_read;
        c.hbm_bytes_written += f.bytes_written;
        c.link_bytes_sent += f.bytes_sent;
    }
    for (auto& [id, c] : chips) {
        c.chip = id;
        b.chips.push_back(c);
    }
    double comm = 0;
    for (auto& [op, ns] : ops) {
        b.ops.push_back({op, ns, total > 0 ? ns / total : 0});
        if (is_communication(op)) comm += ns;
    }
    std::stable_sort(b.ops.begin(), b.ops.end(), [](const OpFigure& x, const OpFigure& y) { return x.core_ns > y.core_ns; });
    b.communication_share = total > 0 ? comm / total : 0;
    return b;
}

}  // namespace xpu::platform
