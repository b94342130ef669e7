#include "analysis/matrix_groups.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace xpu::analysis {

std::vector<Tick> matmul_streaming(const RunData& run) {
    std::vector<Tick> streaming(run.units.size(), 0);
    for (const UnitOp& op : run.unit_ops)
        if (op.op == Opcode::MatMul && op.unit < run.units.size() && op.end > op.start) streaming[op.unit] += op.end - op.start;
    return streaming;
}

MatrixGroups matrix_groups(const RunData& run, const std::vector<Tick>& streaming) {
    MatrixGroups out;
    out.group_of.assign(run.units.size(), -1);
    // The stream that drove each matrix unit (kNone: none; kNone - 1: more than one).
    constexpr std::uint32_t kShared = kNone - 1;
    std::vector<std::uint32_t> driver(run.units.size(), kNone);
    for (const UnitOp& op : run.unit_ops) {
        if (op.unit >= run.units.size() || op.stream == kNone || run.units[op.unit].role != Role::Matrix) continue;
        std::uint32_t& d = driver[op.unit];
        d = d == kNone || d == op.stream ? op.stream : kShared;
    }
    // A unit the run never used: the stream of the core whose socket it is bound to.
    for (std::uint32_t u = 0; u < run.units.size() && u < run.matrix_socket.size(); ++u)
        if (driver[u] == kNone && run.matrix_socket[u].core >= 0 && run.units[u].chip >= 0)
            driver[u] = run.stream_of(static_cast<std::uint16_t>(run.units[u].chip), static_cast<std::uint16_t>(run.matrix_socket[u].core));
    std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::size_t> index;  // (stream, chip, parameters) -> group
    for (std::uint32_t u = 0; u < run.units.size(); ++u) {
        if (run.units[u].role != Role::Matrix || driver[u] == kNone || driver[u] == kShared) continue;
        if (u >= run.unit_config.size() || run.unit_config[u] == 0) continue;
        auto [it, fresh] = index.emplace(std::make_tuple(driver[u], run.units[u].chip, run.unit_config[u]), out.groups.size());
        if (fresh) {
            out.groups.emplace_back();
            out.groups.back().stream = driver[u];
        }
        out.groups[it->second].units.push_back(u);
        out.group_of[u] = static_cast<int>(it->second);
    }
    for (auto& g : out.groups) {
        g.most = 0;
        g.least = ~Tick{0};
        for (std::uint32_t u : g.units) {
            const Tick s = u < streaming.size() ? streaming[u] : 0;
            g.most = std::max(g.most, s);
            g.least = std::min(g.least, s);
            g.sum += s;
        }
        g.balanced = g.units.size() < 2 || g.most - g.least <= g.most / 8;
    }
    return out;
}

}  // namespace xpu::analysis
