#include "analysis/bounds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "analysis/chain_bound.h"
#include "analysis/matrix_groups.h"
#include "analysis/report.h"
#include "traces/link_wire.h"

namespace xpu::analysis {

namespace {

// ps needed to move `bytes` at `gbps` (1 GB/s = 1 byte/ns = 1/1000 byte/ps), rounded down so
// that the bound never exceeds what the resource could do.
Tick transfer_ps(double bytes, double gbps) {
    if (gbps <= 0) return 0;
    return static_cast<Tick>(std::floor(bytes * 1000.0 / gbps));
}

// A link (models/ici.h) carries each transfer's payload plus `packet_overhead_bytes` per packet of
// up to `packet_bytes`: at least bytes x (packet + overhead) / packet on the wire, however the
// bytes are cut into transfers (ceil(len / packet) packets >= len / packet), so no suggestion
// carries them in less. The last of them moves no sooner than all of them at the link's
// bandwidth, and arrives a hop latency after it has moved (cut-through: the far end sees each
// byte that much later); the transfer it belongs to completes no sooner, nor does the run. (A log
// without the link's packets, older than its "link" header lines: the payload alone.)
Tick link_bound_ps(const Unit& link, double bytes) {
    const double wire = link.packet_bytes ? link_least_wire_bytes(bytes, link.packet_bytes, link.packet_overhead_bytes) : bytes;
    return transfer_ps(wire, link.peak_gbps) + link.hop_latency_ps;
}

void keep_max(std::vector<Bound>& out, const char* name, const std::string& where, Tick t) {
    if (t == 0) return;
    for (auto& b : out)
        if (b.name == name) {
            if (t > b.time) b = {name, where, t};
            return;
        }
    out.push_back({name, where, t});
}

// A fixed order (HBM, link, compute, span, chain) whatever came first; the largest sets the
// lower bound and the headroom.
void settle(RunBounds& r, Tick end) {
    auto rank = [](const Bound& b) {
        return b.name == "HBM" ? 0 : b.name == "link" ? 1 : b.name == "compute" ? 2 : b.name == "span" ? 3 : 4;
    };
    std::stable_sort(r.bounds.begin(), r.bounds.end(), [&](const Bound& a, const Bound& b) { return rank(a) < rank(b); });
    r.lower = 0;
    r.limiting = 0;
    for (std::size_t i = 0; i < r.bounds.size(); ++i)
        if (r.bounds[i].time > r.lower) {
            r.lower = r.bounds[i].time;
            r.limiting = i;
        }
    r.headroom = end > r.lower ? end - r.lower : 0;
}

// "the average of 8 alike matrix units (xpu.chip0.core0.mxu0 ...; ...)": a group's bound.
std::string group_name(const RunData& run, const MatrixGroups::Group& g) {
    return "the average of " + std::to_string(g.units.size()) + " alike matrix units (" + run.units[g.units.front()].path + " ...; " +
           "their work can be spread: spread_matmuls)";
}

}  // namespace

RunBounds run_bounds(const RunData& run, Tick end) {
    RunBounds r;
    // HBM, per chip: all its controllers together.
    std::map<int, std::pair<double, double>> hbm;  // chip -> (bytes, peak GB/s)
    std::vector<double> bytes_of(run.units.size(), 0.0);
    for (const HbmPiece& p : run.hbm_pieces)
        if (p.controller < bytes_of.size()) bytes_of[p.controller] += static_cast<double>(p.bytes);
    for (std::size_t u = 0; u < run.hbm_traffic.bytes.size() && u < bytes_of.size(); ++u)  // folded as read
        bytes_of[u] += run.hbm_traffic.bytes[u];
    for (const MemTxn& m : run.mems)
        if (m.target < run.units.size() && run.units[m.target].role == Role::Link) bytes_of[m.target] += static_cast<double>(m.bytes);
    for (std::size_t u = 0; u < run.units.size(); ++u) {
        const Unit& unit = run.units[u];
        if (unit.role == Role::Hbm) {
            hbm[unit.chip].first += bytes_of[u];
            hbm[unit.chip].second += unit.peak_gbps;
        } else if (unit.role == Role::Link && bytes_of[u] > 0) {
            keep_max(r.bounds, "link", unit.path, link_bound_ps(unit, bytes_of[u]));
        }
    }
    for (const auto& [chip, bp] : hbm)
        keep_max(r.bounds, "HBM", "chip" + std::to_string(chip) + " HBM", transfer_ps(bp.first, bp.second));
    // Compute: each matrix unit streams its matmuls' LHS rows one op after another on one
    // in-order path (models/matrix_unit.h), each for as many cycles as its shape says, so their
    // summed occupancy is time no order can avoid. (A unit's busy time is not such a bound: how
    // much of its weight pushes overlap streaming depends on the order.)
    // Where spread_matmuls may move work between alike units (a group not balanced:
    // matrix_groups.h), the busiest of them streams at least their average, whatever is moved.
    r.matmul_streaming = matmul_streaming(run);
    r.matrix_groups = matrix_groups(run, r.matmul_streaming);
    const std::vector<Tick>& streaming = r.matmul_streaming;
    for (std::size_t u = 0; u < run.units.size(); ++u) {
        if (run.units[u].role != Role::Matrix) continue;
        if (const MatrixGroups::Group* g = r.matrix_groups.unbalanced(static_cast<std::uint32_t>(u)))
            keep_max(r.bounds, "compute", group_name(run, *g), g->average());
        else
            keep_max(r.bounds, "compute", run.units[u].path, streaming[u]);
    }
    settle(r, end);
    return r;
}

double hbm_ps_per_byte(const RunData& run, int chip) {
    double gbps = 0;
    for (const Unit& u : run.units)
        if (u.role == Role::Hbm && u.chip == chip) gbps += u.peak_gbps;
    return gbps > 0 ? 1000.0 / gbps : 0.0;  // 1 GB/s = 1 byte/ns = 1 byte per 1000 ps
}

void add_span_bound(RunBounds& r, const RunData& run, const ChainBound& chain, Tick end) {
    // run_bounds's (empty for bounds made otherwise: no span then).
    const std::vector<Tick>& streaming = r.matmul_streaming;
    Bound best{"span", "", 0};
    // Alike units whose work may be spread (a group not balanced): the group's earliest first
    // operands, its average streaming and its shortest chain after a matmul, whichever unit ends
    // up streaming what.
    std::map<int, std::pair<Tick, Tick>> group_ends;  // group -> (least first, least after)
    for (const auto& [unit, first] : chain.first_matmul) {
        auto after = chain.after_last_matmul.find(unit);
        if (unit >= streaming.size() || after == chain.after_last_matmul.end() || streaming[unit] == 0) continue;
        if (r.matrix_groups.unbalanced(unit)) {
            auto [g, fresh] = group_ends.emplace(r.matrix_groups.group_of[unit], std::make_pair(first, after->second));
            if (!fresh) g->second = {std::min(g->second.first, first), std::min(g->second.second, after->second)};
            continue;
        }
        const Tick t = first + streaming[unit] + after->second;
        if (t > best.time) {
            best.time = t;
            best.where = run.units[unit].path + ": its first operands " + format_time(first) + ", matmuls " +
                         format_time(streaming[unit]) + ", after the last " + format_time(after->second);
        }
    }
    for (const auto& [g, ends] : group_ends) {
        const MatrixGroups::Group& group = r.matrix_groups.groups[static_cast<std::size_t>(g)];
        const Tick t = ends.first + group.average() + ends.second;
        if (t > best.time) {
            best.time = t;
            best.where = group_name(run, group) + ": their first operands " + format_time(ends.first) + ", matmuls " +
                         format_time(group.average()) + ", after the last " + format_time(ends.second);
        }
    }
    // The last tiles: a tile's matmuls start no sooner than `first` plus the unit's other matmuls'
    // streaming. Grouped by that start, latest first, each group of the tiles from the k-th latest
    // on: what reads any of them starts after the earliest of the group and the least streaming
    // its first result needs (LastTiles::Work::after: the tile's matmuls that wrote the
    // accumulator it reads), and each unit (or HBM) does its share of that one piece of work
    // after the other.
    const LastTiles& lt = chain.last_tiles;
    struct Tile {
        Tick start;
        int bit;
    };
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < lt.unit_of_bit.size(); ++b) {
        const std::uint32_t unit = lt.unit_of_bit[b];
        auto first = chain.first_matmul.find(unit);
        auto last = lt.streaming.find(unit);
        if (first == chain.first_matmul.end() || last == lt.streaming.end() || unit >= streaming.size() ||
            last->second > streaming[unit] || r.matrix_groups.unbalanced(unit))  // its last tile may move: no fixed start
            continue;
        tiles.push_back({first->second + streaming[unit] - last->second, static_cast<int>(b)});
    }
    std::sort(tiles.begin(), tiles.end(), [](const Tile& x, const Tile& y) { return x.start > y.start || (x.start == y.start && x.bit < y.bit); });
    std::uint64_t group = 0;
    for (const Tile& t : tiles) {
        group |= std::uint64_t{1} << t.bit;
        struct Sum {
            Tick time = 0, after = ~Tick{0};
        };
        std::map<std::uint64_t, Sum> work;  // unit or HBM -> its work on the group's results, and when the first can start
        for (const LastTiles::Work& w : lt.work)
            if (w.bits & group) {
                Sum& x = work[w.where];
                x.time += w.time;
                x.after = std::min(x.after, w.after);
            }
        for (const auto& [where, sum] : work) {
            if (t.start + sum.after + sum.time <= best.time) continue;
            best.time = t.start + sum.after + sum.time;
            const std::uint64_t unit = where & 0xffffffffu;
            const std::string name = where & LastTiles::kHbm ? "chip" + std::to_string(where & 0xffff) + " HBM"
                                     : unit < run.units.size()
                                         ? run.units[unit].path +
                                               (run.units[unit].role == Role::Vector
                                                    ? std::string(" ") + LastTiles::pipeline_name(static_cast<unsigned>(where >> 32)) + " pipeline"
                                                    : "")
                                         : "?";
            best.where = std::to_string(__builtin_popcountll(group)) + " matrix units' last weight tiles from " + format_time(t.start) +
                         " on, " + (sum.after > 0 ? "their first result complete " + format_time(sum.after) + " later, " : std::string()) +
                         "then " + name + " for what reads their results " + format_time(sum.time);
        }
    }
    add_bound(r, std::move(best), end);
}

void add_bound(RunBounds& r, Bound b, Tick end) {
    if (b.time == 0) return;
    r.bounds.push_back(std::move(b));
    settle(r, end);
}

void cap_estimates(const RunBounds& b, std::vector<Suggestion>& s) {
    for (auto& x : s)
        if (x.estimated_saving > b.headroom) {
            x.estimated_saving = b.headroom;
            x.estimate_capped = true;
        }
    s.erase(std::remove_if(s.begin(), s.end(), [](const Suggestion& x) { return x.estimated_saving == 0; }), s.end());
    std::stable_sort(s.begin(), s.end(), [](const Suggestion& x, const Suggestion& y) { return x.estimated_saving > y.estimated_saving; });
    for (std::size_t i = 0; i < s.size(); ++i) s[i].candidate = static_cast<std::uint32_t>(i + 1);
}

const char* capped_note(const Suggestion& s) { return s.estimate_capped ? ", capped at the headroom" : ""; }

std::string describe_headroom(const RunBounds& b, Tick end) {
    std::ostringstream os;
    if (b.bounds.empty()) {
        os << "no resource bound known for this run (no HBM, link or unit work was logged)";
        return os.str();
    }
    const Bound& l = b.bounds[b.limiting];
    const double over = l.time > 0 ? 100.0 * (static_cast<double>(end) - static_cast<double>(l.time)) / static_cast<double>(l.time) : 0;
    os.setf(std::ios::fixed);
    os.precision(1);
    os << "this run is " << over << "% above its " << l.name << " bound (" << l.where << ", "
       << format_time(l.time) << "): at most " << format_time(b.headroom) << " can be saved";
    return os.str();
}

}  // namespace xpu::analysis
