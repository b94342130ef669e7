// pipeline_store: a write-back the core waits for, whose bytes were final part by part long
// before it was issued (a result written block by block, then stored whole at the end: the
// store is the run's tail). Split it into pieces, each issued right after the last instruction
// that writes its bytes, so that the store overlaps the work producing the rest.
//
// When (the finding): a swait stalled on a DMA of its own stream that reads its core's VMEM, of
// more than 2 kMinPiece bytes, on a flag of its own chip counted by waits for all (FlagCounting:
// monotone, one stream, every wait `ge` the sum of the increments issued before it), on a chip
// with a flag its program never names; and at least one piece can be issued earlier than the
// DMA.
// The change: the DMA becomes contiguous pieces of kMinPiece to 2 kMinPiece bytes (cut at
// kAlign), on its engine, each raising that unnamed flag g by 1 and placed at its hoist
// point: as far up as the dependency rules let a DMA of its bytes move (dependencies.h: not
// above an instruction writing them, nor a swait covering a raiser that conflicts, nor a swait
// on the DMA's own flag). Every swait on the DMA's flag f after the first split DMA keeps its
// meaning in two parts: on f, its value less the increments of the split DMAs before it; on g
// (a swait right after it), the pieces of those DMAs. Since no piece passes a swait on f, the
// pieces issued before a swait are exactly those of the split DMAs before it: each wait waits
// for what it did before, and the pieces read and write what the DMA did.
// The estimate: per stalled wait, how much earlier the split DMAs it waits for land, the pieces
// one after another on the DMA's engine, each from the issue time of the instruction it goes
// before, those issued before the DMA was at the HBM's peak (or the engine's bandwidth), the
// others at the rate the DMA moved; at most the wait's stall and the HBM time left idle from the
// first piece on (the roofline). Per stream the sum; the suggestion the largest over streams
// (streams run side by side). A model of the engine, not a replay: the verification measures.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "analysis/names.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

// Pieces of kMinPiece to 2 kMinPiece bytes (a piece still moves at the HBM's rate, not at its
// latency), and only DMAs above 2 kMinPiece are split: a piece is never split again (applying
// the suggestion and analysing the patched run does not propose it again).
constexpr std::uint64_t kMinPiece = 128 * 1024;
constexpr std::uint64_t kAlign = 512;

struct Piece {
    Instruction in;
    std::uint64_t at = 0;  // placed in front of instruction `at` of the original program
    Tick ready = 0;        // when it could issue (the run's issue time of instruction `at`)
};

struct Split {
    std::vector<Piece> pieces;
    Tick first_ready = 0, complete = 0;  // the pieces' earliest issue; when the last would land
};

class Planning {
public:
    explicit Planning(const SuggestContext& sc) : sc_(sc), run_(sc.run) { find_unnamed_flags(); }

    // The stalled waits on DMAs worth splitting: the suggestion's parts.
    void run() {
        for (const WaitStall& w : sc_.cx.waits)
            if (w.stall > 0) wait(w);
    }

    Suggestion suggestion() {
        Suggestion sug;
        if (split_.empty()) return sug;
        edits(sug);
        if (sug.edits.empty()) return sug;
        sug.kind = "pipeline_store";
        for (const auto& [s, t] : saving_on_) sug.estimated_saving = std::max(sug.estimated_saving, t);
        set_places(sug, wait_anns_, dma_anns_);
        std::uint64_t bytes = 0, pieces = 0, early = 0;
        for (const auto& [key, sp] : split_) {
            bytes += run_.streams[key.first].code[key.second].bytes;
            pieces += sp.pieces.size();
            for (const Piece& p : sp.pieces) early += p.at < key.second;
        }
        std::ostringstream cause, action;
        cause << waits_ << (waits_ == 1 ? " wait" : " waits") << " for write-backs whose bytes were written part by part well before the DMA was issued ("
              << rolled_list(sug.dma_ops, 100) << ")";
        action << "pipeline the write-back: " << split_.size() << (split_.size() == 1 ? " DMA" : " DMAs") << " (" << bytes
               << " bytes) as " << pieces << " pieces, " << early
               << " of them issued earlier, each right after the last instruction writing its bytes (the pieces on a flag of "
                  "their own, and the waits after them waiting for them)";
        sug.cause = cause.str();
        sug.action = action.str();
        return sug;
    }

private:
    const SuggestContext& sc_;
    const RunData& run_;
    std::map<std::uint16_t, std::vector<std::uint16_t>> unnamed_;           // per chip, flags no instruction names (not yet taken)
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::uint16_t> g_of_;  // (chip, a split DMA's flag) -> its pieces' flag
    std::map<std::pair<std::uint32_t, std::uint64_t>, Split> split_;        // DMA (stream, index) -> its pieces
    std::set<std::pair<std::uint32_t, std::uint64_t>> refused_;             // DMAs looked at, not worth splitting
    std::map<std::uint32_t, Tick> saving_on_;
    std::set<std::string> wait_anns_, dma_anns_;
    std::uint64_t waits_ = 0;

    void find_unnamed_flags() {
        for (const Stream& st : run_.streams) {
            if (unnamed_.count(st.chip)) continue;
            const std::vector<bool> named = sc_.renamer.named_flags(st.chip);
            std::vector<std::uint16_t>& free = unnamed_[st.chip];
            for (std::size_t f = 0; f < named.size(); ++f)
                if (!named[f]) free.push_back(static_cast<std::uint16_t>(f));
        }
    }

    // A DMA the rule admits; its flag gets the unnamed flag its pieces will raise (when the
    // chip still has one).
    bool qualifies(std::uint32_t s, const Instruction& in) {
        const Stream& st = run_.streams[s];
        if (in.op != Opcode::Dma || in.mem_src.space != Space::Vmem || in.bytes <= 2 * kMinPiece || !in.has(kFlag)) return false;
        if (in.mem_src.chip != kLocalChip && in.mem_src.chip != st.chip) return false;
        if (flag_chip(in, st.chip) != st.chip) return false;
        const FlagCounting& c = sc_.plan.flag_counting(st.chip, in.flag);
        if (!c.monotone || !c.one_stream || !c.waits_for_all) return false;
        if (g_of_.count({st.chip, in.flag})) return true;
        auto u = unnamed_.find(st.chip);
        if (u == unnamed_.end() || u->second.empty()) return false;
        g_of_[{st.chip, in.flag}] = u->second.front();
        u->second.erase(u->second.begin());
        return true;
    }

    // DMA (s, k) as pieces at their hoist points, and when they would land; null if no piece
    // can be issued earlier. Planned once per DMA (a DMA may be covered by several waits).
    const Split* plan_split(std::uint32_t s, std::uint64_t k, const Dma& d) {
        const auto key = std::make_pair(s, k);
        if (auto it = split_.find(key); it != split_.end()) return &it->second;
        if (refused_.count(key)) return nullptr;
        std::optional<Split> sp = make_split(s, k, d);
        if (!sp) {
            refused_.insert(key);
            return nullptr;
        }
        return &split_.emplace(key, std::move(*sp)).first->second;
    }

    std::optional<Split> make_split(std::uint32_t s, std::uint64_t k, const Dma& d) const {
        const Stream& st = run_.streams[s];
        const Instruction& in = st.code[k];
        const std::uint64_t n = in.bytes / kMinPiece;  // >= 2: in.bytes > 2 kMinPiece
        // bytes / n is in [kMinPiece, 2 kMinPiece); cut at kAlign, at most 2 kMinPiece.
        const std::uint64_t step = std::min(2 * kMinPiece, (in.bytes / n + kAlign - 1) / kAlign * kAlign);
        Split sp;
        bool earlier = false;
        for (std::uint64_t off = 0; off < in.bytes; off += step) {
            Piece p;
            p.in = in;
            p.in.mem_src.addr += off;
            p.in.mem_dst.addr += off;
            p.in.bytes = std::min(step, in.bytes - off);
            // Its hoist point with the DMA's own flag: it stays below every swait on that flag.
            Planner::Edited ed;
            ed.set(k, p.in);
            p.at = sc_.plan.hoist_point(s, k, ed);
            if (p.at == 0) return std::nullopt;  // nothing in front of it to follow
            p.ready = p.at < k ? st.life[p.at].issue : d.start;
            earlier = earlier || p.at < k;
            sp.pieces.push_back(p);
        }
        if (!earlier) return std::nullopt;
        // The pieces one after another on the engine: those issued before the DMA was at the
        // HBM's peak (or the engine's bandwidth, the lower), the HBM time idle then bounding the
        // whole (wait()); the others at the rate the DMA moved.
        const double per_byte = static_cast<double>(d.complete - std::min(d.complete, d.start)) / static_cast<double>(in.bytes);
        const double engine = run_.units[d.engine].peak_gbps;
        auto alone = [&](std::uint64_t bytes) {
            const Tick at_engine = engine > 0 ? static_cast<Tick>(static_cast<double>(bytes) * 1000.0 / engine) : 0;
            return std::max(sc_.hbm.transfer(st.chip, bytes), at_engine);
        };
        std::vector<const Piece*> order;
        for (const Piece& p : sp.pieces) order.push_back(&p);
        std::stable_sort(order.begin(), order.end(), [](const Piece* a, const Piece* b) { return a->ready < b->ready; });
        Tick t = 0;
        for (const Piece* p : order)
            t = std::max(t, p->ready) +
                (p->ready < d.start ? alone(p->in.bytes) : static_cast<Tick>(per_byte * static_cast<double>(p->in.bytes)));
        sp.first_ready = order.front()->ready;
        sp.complete = std::min(t, d.complete);
        return sp;
    }

    void wait(const WaitStall& w) {
        const Stream& st = run_.streams[w.stream];
        Tick first = ~Tick{0};
        std::vector<std::pair<std::uint32_t, std::uint64_t>> used;
        const auto [latest, latest_new] = wait_landing(sc_.plan, run_, w, [&](const Raiser& r, const Dma& d) {
            if (r.stream != w.stream || !qualifies(r.stream, run_.streams[r.stream].code[r.index])) return d.complete;
            const Split* sp = plan_split(r.stream, r.index, d);
            if (!sp) return d.complete;
            first = std::min(first, sp->first_ready);
            used.push_back({r.stream, r.index});
            return sp->complete;
        });
        if (used.empty() || latest_new >= latest) return;
        const Tick gain = std::min({w.stall, latest - latest_new, sc_.hbm.idle(st.chip, first, latest)});
        if (gain == 0) return;
        saving_on_[w.stream] += gain;
        ++waits_;
        wait_anns_.insert(run_.annotation(st.code[w.index]));
        for (const auto& key : used) dma_anns_.insert(run_.annotation(run_.streams[key.first].code[key.second]));
    }

    // The patch: per stream and flag, its split DMAs' pieces in place and the flag's later
    // swaits in two parts.
    void edits(Suggestion& sug) {
        std::map<std::pair<std::uint32_t, std::uint64_t>, Edit> at;  // one edit per instruction
        auto edit_of = [&](std::uint32_t s, std::uint64_t j) -> Edit& {
            auto it = at.find({s, j});
            if (it == at.end()) it = at.emplace(std::make_pair(s, j), Edit{s, j, run_.streams[s].code[j], {}}).first;
            return it->second;
        };
        std::map<std::uint32_t, std::vector<std::uint64_t>> by_stream;
        for (const auto& [key, sp] : split_) by_stream[key.first].push_back(key.second);
        for (auto& [s, dmas] : by_stream) {
            const Stream& st = run_.streams[s];
            std::set<std::uint64_t> deleted(dmas.begin(), dmas.end());
            std::map<std::uint16_t, std::uint16_t> g_of;  // the split DMAs' flags -> their pieces' flags
            for (std::uint64_t k : dmas) g_of.emplace(st.code[k].flag, g_of_.at({st.chip, st.code[k].flag}));
            for (std::uint64_t k : deleted) {
                const Split& sp = split_.at({s, k});
                for (const Piece& p : sp.pieces) {
                    Instruction piece = p.in;
                    piece.flag = g_of.at(piece.flag);
                    piece.value = 1;
                    piece.set(kValue);
                    // After the instruction in front of its place (a deleted DMA leaves no place of its own).
                    std::uint64_t j = p.at - 1;
                    while (j > 0 && deleted.count(j)) --j;
                    edit_of(s, j).then.push_back(piece);
                }
                sug.moves.push_back(Move{s, k, Move::kDelete, 0});
            }
            // The swaits on each flag from its first split DMA on.
            for (const auto& [f, g] : g_of) {
                std::int64_t split_increments = 0, pieces = 0;
                for (std::uint64_t j : sc_.plan.sync_and_dma(s)) {
                    const Instruction& in = st.code[j];
                    if (!in.has(kFlag) || in.flag != f) continue;
                    if (in.op == Opcode::Dma && deleted.count(j)) {
                        split_increments += flag_increment(in);
                        pieces += static_cast<std::int64_t>(split_.at({s, j}).pieces.size());
                    } else if (in.op == Opcode::SWait && pieces > 0) {
                        Instruction on_g = in;
                        on_g.flag = g;
                        on_g.value = pieces;
                        on_g.set(kValue);
                        Edit& e = edit_of(s, j);
                        const std::int64_t rest = (in.has(kValue) ? in.value : 0) - split_increments;
                        if (rest > 0) {
                            e.in.value = rest;
                            e.in.set(kValue);
                            e.then.insert(e.then.begin(), on_g);  // before any piece placed after it
                        } else {
                            e.in = on_g;
                        }
                    }
                }
            }
        }
        for (auto& [key, e] : at) sug.edits.push_back(std::move(e));
    }
};

class PipelineStore : public SuggestionFinder {
public:
    const char* kind() const override { return "pipeline_store"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        Planning p(sc);
        p.run();
        Suggestion sug = p.suggestion();
        if (!sug.edits.empty()) out.push_back(std::move(sug));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> pipeline_store_finder() { return std::make_unique<PipelineStore>(); }

}  // namespace xpu::analysis
