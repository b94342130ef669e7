#include "analysis/split_dma.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>


namespace xpu::analysis {

namespace {

constexpr std::uint64_t kMinBytes = 64 * 1024;  // smaller DMAs are latency, not bandwidth
constexpr std::uint64_t kAlign = 512;

}  // namespace

Suggestion split_suggestion(const Context& cx, const Planner& plan, const std::function<Tick(int, Tick, Tick)>& hbm_idle) {
    const RunData& run = cx.run;
    Suggestion sug;
    // Per chip: its HBM peak, its engines (unit id -> the instructions' unit index, as the run
    // shows them) and how many streams it has.
    struct Chip {
        double hbm_gbps = 0;
        std::map<std::uint32_t, std::uint8_t> engines;
        unsigned streams = 0;
    };
    std::map<std::uint16_t, Chip> chips;
    for (const Unit& u : run.units)
        if (u.role == Role::Hbm && u.chip >= 0) chips[static_cast<std::uint16_t>(u.chip)].hbm_gbps += u.peak_gbps;
    for (const Stream& st : run.streams) ++chips[st.chip].streams;
    for (const Dma& d : run.dmas) {
        const Stream& st = run.streams[d.stream];
        chips[st.chip].engines.emplace(d.engine, st.code[d.index].unit);
    }
    // Flags the rule allows (split_dma.h): monotone, and counted by one stream alone.
    auto countable = [&](std::uint32_t s, std::uint16_t f) {
        const FlagCounting& c = plan.flag_counting(run.streams[s].chip, f);
        return c.monotone && c.one_stream;
    };
    // Candidates, and per wait the saving.
    std::map<std::pair<std::uint32_t, std::uint64_t>, unsigned> split;  // DMA -> pieces
    std::map<std::uint32_t, Tick> saving_on;
    std::set<std::string> steps, anns;
    std::uint64_t waits = 0;
    for (const WaitStall& w : cx.waits) {
        const Stream& st = run.streams[w.stream];
        const Chip& chip = chips[st.chip];
        if (chip.streams != 1 || chip.hbm_gbps <= 0) continue;
        Tick latest = 0, latest_new = 0;
        bool any = false;
        for (const Raiser& r : plan.covered(w.stream, w.index)) {
            if (r.dma == kNone) {
                latest = latest_new = std::max(latest, st.life[w.index].issue);
                continue;
            }
            const Dma& d = run.dmas[r.dma];
            latest = std::max(latest, d.complete);
            Tick done = d.complete;
            const Instruction& in = run.streams[r.stream].code[r.index];
            const double engine = run.units[d.engine].peak_gbps;
            const unsigned k = static_cast<unsigned>(
                std::min<double>(static_cast<double>(chip.engines.size()), engine > 0 ? chip.hbm_gbps / engine : 0));
            const Tick t = d.complete - std::min(d.complete, d.start);
            const bool engine_bound = t > 0 && static_cast<double>(d.bytes) * 1000.0 / static_cast<double>(t) >= 0.7 * engine;
            if (r.stream == w.stream && in.mem_dst.chip == kLocalChip && d.bytes >= kMinBytes && engine > 0 &&
                engine < 0.8 * chip.hbm_gbps && k >= 2 && engine_bound && in.has(kFlag) && countable(r.stream, in.flag)) {
                const Tick faster = static_cast<Tick>(static_cast<double>(d.bytes) * 1000.0 / std::min(k * engine, chip.hbm_gbps));
                const Tick gain = std::min(t - std::min(t, faster), hbm_idle(st.chip, d.start, d.complete));
                if (gain > 0) {
                    done -= gain;
                    split[{r.stream, r.index}] = k;
                    any = true;
                    anns.insert(run.annotation(in));
                }
            }
            latest_new = std::max(latest_new, done);
        }
        if (!any || latest_new >= latest) continue;
        saving_on[w.stream] += std::min(w.stall, latest - latest_new);
        ++waits;
        const std::string ann = run.annotation(st.code[w.index]);
        steps.insert(ann.substr(ann.rfind('/') == std::string::npos ? 0 : ann.rfind('/') + 1));
    }
    if (split.empty()) return sug;
    // The number of pieces per flag: the smallest k of its DMAs (every split DMA of the flag
    // gets that many).
    std::map<std::pair<std::uint32_t, std::uint16_t>, unsigned> pieces;  // (stream, flag) -> k
    for (const auto& [dma, k] : split) {
        auto key = std::make_pair(dma.first, run.streams[dma.first].code[dma.second].flag);
        auto it = pieces.find(key);
        pieces[key] = it == pieces.end() ? k : std::min(it->second, k);
    }
    // The edits: the split DMAs into pieces, the other raises and the waits of those flags scaled.
    std::uint64_t dmas = 0, moved_bytes = 0;
    for (const auto& [key, k] : pieces) {
        const auto [s, f] = key;
        const Stream& st = run.streams[s];
        const Chip& chip = chips[st.chip];
        for (std::uint64_t j : plan.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (!in.has(kFlag) || in.flag != f) continue;
            Edit e{s, j, in, {}};
            if (in.op == Opcode::SWait) {
                e.in.value = in.cond == Cond::Gt ? static_cast<std::int64_t>(k) * (in.value + 1) : static_cast<std::int64_t>(k) * in.value;
                e.in.cond = Cond::Ge;
            } else if (!split.count({s, j})) {
                e.in.value = static_cast<std::int64_t>(k) * flag_increment(in);
                e.in.set(kValue);
            } else {
                // Pieces: this DMA's engine first, then the chip's other engines.
                std::vector<std::uint8_t> units{in.unit};
                for (const auto& [engine, unit] : chip.engines)
                    if (std::find(units.begin(), units.end(), unit) == units.end()) units.push_back(unit);
                const std::uint64_t step = (in.bytes / k + kAlign - 1) / kAlign * kAlign;
                std::uint64_t off = 0;
                for (unsigned p = 0; p < k && off < in.bytes; ++p) {
                    Instruction piece = in;
                    piece.unit = units[p % units.size()];
                    piece.mem_src.addr = in.mem_src.addr + off;
                    piece.mem_dst.addr = in.mem_dst.addr + off;
                    piece.bytes = p + 1 == k ? in.bytes - off : std::min(step, in.bytes - off);
                    piece.value = flag_increment(in);
                    piece.set(kValue);
                    off += piece.bytes;
                    if (p == 0) e.in = piece;
                    else e.then.push_back(piece);
                }
                // (k pieces, none empty: bytes >= kMinBytes, so (k - 1) steps stay below them.)
                ++dmas;
                moved_bytes += in.bytes;
            }
            sug.edits.push_back(std::move(e));
        }
    }
    if (sug.edits.empty()) return sug;
    sug.kind = "split_dma";
    // Roofline over the whole run: faster transfers shorten it only into time the HBM was idle.
    for (const auto& [s, t] : saving_on)
        sug.estimated_saving = std::max(sug.estimated_saving, std::min(t, hbm_idle(run.streams[s].chip, 0, run.end)));
    std::string where;
    for (const auto& x : steps) where += (where.empty() ? "" : ",") + x;
    sug.where = steps.size() == 1 ? *steps.begin() : "*/" + where;
    std::string a;
    for (const auto& x : anns) a += (a.empty() ? "" : ", ") + (x.empty() ? std::string("(no annotation)") : x);
    std::ostringstream cause, action;
    cause << waits << " sync-flag waits on DMAs that one engine moved more slowly than the HBM could (" << a << ")";
    action << "split " << dmas << " DMAs (" << moved_bytes << " bytes) into pieces over the chip's other DMA engines (each raise of their flags counted "
           << "that many times, and the waits scaled to match)";
    sug.cause = cause.str();
    sug.action = action.str();
    return sug;
}

}  // namespace xpu::analysis
