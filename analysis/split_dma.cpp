#include "analysis/split_dma.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/names.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kMinBytes = 64 * 1024;  // smaller DMAs are latency, not bandwidth
constexpr std::uint64_t kAlign = 512;

// Per chip: its HBM peak, its engines (unit id -> the instructions' unit index, as the run
// shows them) and how many streams it has.
struct Chip {
    double hbm_gbps = 0;
    std::map<std::uint32_t, std::uint8_t> engines;
    unsigned streams = 0;
};

std::map<std::uint16_t, Chip> chips_of(const RunData& run) {
    std::map<std::uint16_t, Chip> chips;
    for (const Unit& u : run.units)
        if (u.role == Role::Hbm && u.chip >= 0) chips[static_cast<std::uint16_t>(u.chip)].hbm_gbps += u.peak_gbps;
    for (const Stream& st : run.streams) ++chips[st.chip].streams;
    for (const Dma& d : run.dmas) {
        const Stream& st = run.streams[d.stream];
        chips[st.chip].engines.emplace(d.engine, st.code[d.index].unit);
    }
    return chips;
}

// The DMAs to split, and what splitting them saves.
struct Candidates {
    std::map<std::pair<std::uint32_t, std::uint64_t>, unsigned> split;  // DMA (stream, index) -> pieces
    std::map<std::uint32_t, Tick> saving_on;                            // per stream
    std::set<std::string> steps, anns;  // of the waits, of the DMAs
    std::set<std::string> wait_anns;    // the waits' ops (Suggestion::ops)
    std::uint64_t waits = 0;
};

class CandidateFinder {
public:
    CandidateFinder(const Context& cx, const Planner& plan, const std::map<std::uint16_t, Chip>& chips,
                    const std::function<Tick(int, Tick, Tick)>& hbm_idle)
        : cx_(cx), run_(cx.run), plan_(plan), chips_(chips), hbm_idle_(hbm_idle) {}

    Candidates find() {
        for (const WaitStall& w : cx_.waits) wait(w);
        return std::move(c_);
    }

private:
    const Context& cx_;
    const RunData& run_;
    const Planner& plan_;
    const std::map<std::uint16_t, Chip>& chips_;
    const std::function<Tick(int, Tick, Tick)>& hbm_idle_;
    Candidates c_;

    // Flags the rule allows (split_dma.h): monotone, and counted by one stream alone.
    bool countable(std::uint32_t s, std::uint16_t f) const {
        const FlagCounting& c = plan_.flag_counting(run_.streams[s].chip, f);
        return c.monotone && c.one_stream;
    }

    // How much earlier DMA raiser r of wait w lands split into k pieces (0: not split); k is set.
    Tick split_gain(const WaitStall& w, const Raiser& r, const Chip& chip, unsigned& k) const {
        const Dma& d = run_.dmas[r.dma];
        const Instruction& in = run_.streams[r.stream].code[r.index];
        const double engine = run_.units[d.engine].peak_gbps;
        k = static_cast<unsigned>(std::min<double>(static_cast<double>(chip.engines.size()), engine > 0 ? chip.hbm_gbps / engine : 0));
        const Tick t = d.complete - std::min(d.complete, d.start);
        const bool engine_bound = t > 0 && static_cast<double>(d.bytes) * 1000.0 / static_cast<double>(t) >= 0.7 * engine;
        if (!(r.stream == w.stream && in.mem_dst.chip == kLocalChip && d.bytes >= kMinBytes && engine > 0 &&
              engine < 0.8 * chip.hbm_gbps && k >= 2 && engine_bound && in.has(kFlag) && countable(r.stream, in.flag)))
            return 0;
        const Tick faster = static_cast<Tick>(static_cast<double>(d.bytes) * 1000.0 / std::min(k * engine, chip.hbm_gbps));
        return std::min(t - std::min(t, faster), hbm_idle_(run_.streams[w.stream].chip, d.start, d.complete));
    }

    // Wait w: the DMAs it waits for that split, and how much earlier the latest lands.
    void wait(const WaitStall& w) {
        const Stream& st = run_.streams[w.stream];
        const Chip& chip = chips_.at(st.chip);
        if (chip.streams != 1 || chip.hbm_gbps <= 0) return;
        bool any = false;
        const auto [latest, latest_new] = wait_landing(plan_, run_, w, [&](const Raiser& r, const Dma& d) {
            unsigned k = 0;
            const Tick gain = split_gain(w, r, chip, k);
            if (gain > 0) {
                c_.split[{r.stream, r.index}] = k;
                any = true;
                c_.anns.insert(run_.annotation(run_.streams[r.stream].code[r.index]));
            }
            return d.complete - gain;
        });
        if (!any || latest_new >= latest) return;
        c_.saving_on[w.stream] += std::min(w.stall, latest - latest_new);
        ++c_.waits;
        const std::string ann = run_.annotation(st.code[w.index]);
        c_.steps.insert(step_of(ann));
        c_.wait_anns.insert(ann);
    }
};

// The number of pieces per flag: the smallest k of its DMAs (every split DMA of the flag gets
// that many).
std::map<std::pair<std::uint32_t, std::uint16_t>, unsigned> pieces_per_flag(const RunData& run, const Candidates& c) {
    std::map<std::pair<std::uint32_t, std::uint16_t>, unsigned> pieces;  // (stream, flag) -> k
    for (const auto& [dma, k] : c.split) {
        auto key = std::make_pair(dma.first, run.streams[dma.first].code[dma.second].flag);
        auto it = pieces.find(key);
        pieces[key] = it == pieces.end() ? k : std::min(it->second, k);
    }
    return pieces;
}

// DMA `in` as k contiguous pieces: the first in e.in, the others in e.then; this DMA's engine
// first, then the chip's other engines.
void split_into_pieces(const Instruction& in, unsigned k, const Chip& chip, Edit& e) {
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
}

}  // namespace

Suggestion split_suggestion(const Context& cx, const Planner& plan, const std::function<Tick(int, Tick, Tick)>& hbm_idle) {
    const RunData& run = cx.run;
    Suggestion sug;
    const std::map<std::uint16_t, Chip> chips = chips_of(run);
    const Candidates c = CandidateFinder(cx, plan, chips, hbm_idle).find();
    if (c.split.empty()) return sug;
    // The edits: the split DMAs into pieces, the other raises and the waits of those flags scaled.
    std::uint64_t dmas = 0, moved_bytes = 0;
    for (const auto& [key, k] : pieces_per_flag(run, c)) {
        const auto [s, f] = key;
        const Stream& st = run.streams[s];
        for (std::uint64_t j : plan.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (!in.has(kFlag) || in.flag != f) continue;
            Edit e{s, j, in, {}};
            if (in.op == Opcode::SWait) {
                e.in.value = in.cond == Cond::Gt ? static_cast<std::int64_t>(k) * (in.value + 1) : static_cast<std::int64_t>(k) * in.value;
                e.in.cond = Cond::Ge;
            } else if (!c.split.count({s, j})) {
                e.in.value = static_cast<std::int64_t>(k) * flag_increment(in);
                e.in.set(kValue);
            } else {
                split_into_pieces(in, k, chips.at(st.chip), e);
                ++dmas;
                moved_bytes += in.bytes;
            }
            sug.edits.push_back(std::move(e));
        }
    }
    if (sug.edits.empty()) return sug;
    sug.kind = "split_dma";
    // Roofline over the whole run: faster transfers shorten it only into time the HBM was idle.
    for (const auto& [s, t] : c.saving_on)
        sug.estimated_saving = std::max(sug.estimated_saving, std::min(t, hbm_idle(run.streams[s].chip, 0, run.end)));
    std::string where;
    for (const auto& x : c.steps) where += (where.empty() ? "" : ",") + x;
    sug.where = c.steps.size() == 1 ? *c.steps.begin() : "*/" + where;
    sug.ops = sorted_names(std::vector<std::string>(c.wait_anns.begin(), c.wait_anns.end()));
    sug.dma_ops = sorted_names(std::vector<std::string>(c.anns.begin(), c.anns.end()));
    const std::string a = rolled_list(sug.dma_ops, 100);  // across layers; the full list: dma_ops
    std::ostringstream cause, action;
    cause << c.waits << " sync-flag waits on DMAs that one engine moved more slowly than the HBM could (" << a << ")";
    action << "split " << dmas << " DMAs (" << moved_bytes << " bytes) into pieces over the chip's other DMA engines (each raise of their flags counted "
           << "that many times, and the waits scaled to match)";
    sug.cause = cause.str();
    sug.action = action.str();
    return sug;
}

}  // namespace xpu::analysis
