#include "analysis/collective_choice.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/intervals.h"
#include "analysis/names.h"
#include "analysis/patch.h"
#include "analysis/relower.h"
#include "analysis/report.h"
#include "traces/gen/target.h"

namespace xpu::analysis {

namespace {

// "xpu.links.chip3_xp" -> "xp" (platform/builder.cpp names the links chipN_<dim><p|m>).
std::string direction_of(const std::string& path) {
    const auto u = path.rfind('_');
    return u == std::string::npos ? std::string() : path.substr(u + 1);
}


// The collective algorithms xpu_tracegen lowers (traces/gen/collective.h), named as the second
// component of their ops' annotations ("all-reduce/torus2d/reduce_scatter").
constexpr const char* kAlgorithms[] = {"ring", "bidir-ring", "torus2d", "torus3d", "bidir-torus2d", "bidir-torus3d", "direct"};

// The known algorithms the ops name: what the trace already uses.
std::set<std::string> algorithms_in(const std::map<std::string, std::uint64_t>& ops) {
    std::set<std::string> out;
    for (const auto& [op, bytes] : ops) {
        std::size_t b = 0;
        for (;;) {
            const std::size_t e = op.find('/', b);
            const std::string c = op.substr(b, e == std::string::npos ? std::string::npos : e - b);
            for (const char* a : kAlgorithms)
                if (c == a) out.insert(c);
            if (e == std::string::npos) break;
            b = e + 1;
        }
    }
    return out;
}

}  // namespace

Suggestion collective_algorithm(const RunData& run) {
    Suggestion s;
    std::map<std::string, std::uint64_t> bytes_by_dir;  // every direction the platform has
    std::map<std::uint32_t, std::vector<Interval>> busy;
    std::map<std::string, std::uint64_t> bytes_by_op;
    std::set<std::uint16_t> senders;  // the chips whose streams issued the inter-chip traffic
    Tick first = ~Tick(0), last = 0;
    for (const Unit& u : run.units)
        if (u.role == Role::Link) bytes_by_dir[direction_of(u.path)] += 0;
    for (const MemTxn& m : run.mems) {
        const Unit& u = run.units[m.target];
        if (u.role != Role::Link) continue;
        bytes_by_dir[direction_of(u.path)] += m.bytes;
        busy[m.target].push_back({m.arrival, m.done});
        first = std::min(first, m.arrival);
        last = std::max(last, m.done);
        if (m.stream != kNone) {
            bytes_by_op[op_of(run.annotation(run.streams[m.stream].code[m.index]))] += m.bytes;
            senders.insert(run.streams[m.stream].chip);
        }
    }
    if (busy.empty() || last <= first) return s;
    // A collective has several chips sending (each its share, or forwarding along a ring); the
    // traffic of one chip alone is point-to-point: no collective algorithm to pick.
    if (senders.size() < 2) return s;
    Tick busiest = 0;
    std::string busiest_link;
    for (auto& [link, v] : busy) {
        merge_intervals(v);
        Tick t = 0;
        for (const Interval& x : v) t += x.second - x.first;
        if (t > busiest) {
            busiest = t;
            busiest_link = run.units[link].path;
        }
    }
    const Tick span = last - first;
    std::uint64_t most = 0;
    for (const auto& [d, b] : bytes_by_dir) most = std::max(most, b);
    std::size_t used = 0;
    for (const auto& [d, b] : bytes_by_dir)
        if (10 * b >= most) ++used;  // a direction carrying a tenth of the busiest one's bytes counts as used
    const std::size_t total = bytes_by_dir.size();
    std::string op;
    std::uint64_t op_bytes = 0;
    for (const auto& [o, b] : bytes_by_op)
        if (b > op_bytes) {
            op = o;
            op_bytes = b;
        }
    s.where = op.empty() ? "(inter-chip traffic)" : op;
    for (const auto& [o, b] : bytes_by_op) s.ops.push_back(o);
    s.ops = sorted_names(std::move(s.ops));
    const bool ring = total == 2;
    std::ostringstream cause, action;
    cause << "inter-chip traffic uses " << used << " of the " << total << " link directions (";
    bool firstd = true;
    for (const auto& [d, b] : bytes_by_dir) {
        cause << (firstd ? "" : ", ") << d << " " << (most ? 100 * b / most : 0) << "%";
        firstd = false;
    }
    cause << " of the busiest direction's bytes); the busiest link (" << busiest_link << ") was busy " << format_time(busiest)
          << " of the " << format_time(span) << " the traffic lasted";
    const std::string platform = run.dir + "/platform.yaml";  // as the reports name it; read where it is now:
    const std::set<std::string> in_use = algorithms_in(bytes_by_op);
    std::optional<gen::CollectiveParams> mine;
    std::optional<gen::Target> chip;  // the platform as the generator reads it: its DMA engines, its torus
    if (in_use.size() == 1) {
        try {
            chip = gen::read_target(run.files_dir + "/platform.yaml");
        } catch (const gen::TargetError&) {  // a description the generator cannot read: no engines, no torus to name
        }
        mine = recognise_collective(run.streams, run.strings, chip ? chip->dma_engines : 0);
    }
    // A collective xpu_tracegen wrote: the lowerings it has for it here (the algorithms, more
    // pieces per shard), each simulated; the fastest is the suggestion, measured, not estimated.
    // Whether the directions are idle or not: a lowering of fewer, pipelined steps can shorten a
    // run whose links all carry bytes (a bidir-ring all-gather of one piece per shard on 8
    // chips: 13.18 -> 10.67 us at four).
    if (mine) {
        std::uint64_t instructions = 0;
        for (const Stream& st : run.streams) instructions += st.code.size();
        // A run that did not complete (deadlock, time limit) has no end to compare with: not searched.
        const RelowerSearch found = fastest_relowering(relowering_alternatives(*mine, chip ? chip->torus_dims : std::vector<unsigned>{}),
                                                       run.status == 0 ? run.end : 0, instructions, run.files_dir + "/platform.yaml", platform);
        if (found.ran) {
            if (!found.best) return Suggestion{};  // measured: none of them is faster here
            const gen::CollectiveParams& b = found.best->params;
            s.kind = "collective_algorithm";
            s.relowering = found.best;
            s.estimated_saving = run.end - found.best_end;
            const PatchCount c = count_changes(run, s);  // every instruction dropped, the other lowering's inserted
            cause << "; the trace is the one `" << tracegen_command(*mine, platform) << "` writes";
            action << "lower it as " << b.algo << " with " << b.chunks << (b.chunks == 1 ? " piece" : " pieces")
                   << " per shard: the whole trace written again by `" << found.best->command << "` (" << c.inserted
                   << " instructions instead of " << c.deleted << "); the fastest of " << found.measured << " other lowering" << (found.measured == 1 ? "" : "s")
                   << " xpu_tracegen has for it on this platform, each simulated: " << format_time(run.end) << " -> "
                   << format_time(found.best_end);
            if (found.left_out)
                action << " (" << found.left_out << " more not simulated: refused by the generator for this tensor, or over the search's budget)";
            s.cause = cause.str();
            s.action = action.str();
            return s;
        }
        // No simulator to measure with: the lowering named below, as before.
    }
    // Advice from the link directions: where some are idle, and the traffic is link-bound.
    if (total < 2) return Suggestion{};  // one link per chip (a switch): no direction left idle
    if (2 * busiest < span) return Suggestion{};  // not link-bound: more links would not shorten it
    if (used >= total) return Suggestion{};
    s.kind = "collective_algorithm";
    s.estimated_saving = busiest - busiest * used / total;
    // Name a lowering xpu_tracegen has, never the one the trace uses already: the one that uses
    // every direction of every dimension (a one-way torus algorithm moves as many bytes over
    // the busiest direction as a ring: no gain once a ring step's fixed cost is one link latency).
    const std::string other = ring ? "bidir-ring" : total > 4 ? "bidir-torus3d" : "bidir-torus2d";
    action << "another collective algorithm could spread the bytes over every "
           << (ring ? "direction of the ring (half each way)" : "dimension and direction of the torus") << ": the busiest link's time down to "
           << used << "/" << total << ", ~" << format_time(s.estimated_saving)
           << " less (an estimate of the links' time alone, not of the steps' latency, for that lowering, which moves the bytes over other "
              "links: this run's headroom does not bound it); ";
    // Without a simulator: the trace is a collective xpu_tracegen wrote with a one-way algorithm:
    // the other lowering is the generator's, replayed and applied as a change of the whole trace.
    // Its dimensions: the trace's own (a ring on a ring, torus2d or torus3d on a torus of as
    // many), or, for a ring over every chip of a torus, the platform's (OUT/platform.yaml's topology).
    const std::string same_shape = ring ? "ring" : total > 4 ? "torus3d" : "torus2d";
    if (mine && (mine->algo == same_shape || (!ring && mine->algo == "ring"))) {
        gen::CollectiveParams target = *mine;
        target.algo = other;
        if (!ring && mine->algo == "ring") {
            const std::vector<unsigned> dims = chip ? chip->torus_dims : std::vector<unsigned>{};
            unsigned product = 1;
            for (unsigned d : dims) product *= d;
            if (dims.size() == (total > 4 ? 3u : 2u) && product == mine->chips) target.set_torus_dims(dims);
            else target.algo.clear();  // not the platform's torus: no lowering to name
        }
        if (!target.algo.empty()) s.relowering = relower(target, platform);
    }
    if (s.relowering) {
        const PatchCount c = count_changes(run, s);  // every instruction dropped, the other lowering's inserted
        cause << "; the trace is the one `" << tracegen_command(*mine, platform) << "` writes";
        action << "lower it as " << other << ": the whole trace written again by `" << s.relowering->command << "` (" << c.inserted
               << " instructions instead of " << c.deleted << ")";
    } else if (!in_use.count(other))
        action << "e.g. xpu_tracegen collective --algo " << other << ", then xpu_analyze --compare";
    else
        action << "the trace's " << other << " runs each " << (ring ? "ring" : "dimension")
               << " one way (xpu_tracegen has no lowering that runs both ways)";
    s.cause = cause.str();
    s.action = action.str();
    return s;
}

}  // namespace xpu::analysis
