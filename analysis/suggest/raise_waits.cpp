#include "analysis/suggest/raise_waits.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/attribution.h"
#include "analysis/dependencies.h"
#include "analysis/patch.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kNear = 16;  // the loads right after a wait, and their readers right after them
constexpr Tick kMinStall = 5000;     // 5 ns: a reader's stall below it is an issue slot or two
constexpr std::uint64_t kReach = 4096;  // the most instructions a wait moves up (a GEMM step is ~650)

std::uint64_t key(std::uint32_t stream, std::uint64_t index) { return (std::uint64_t(stream) << 40) | index; }

bool reads_register(const Instruction& y, std::uint8_t reg) {
    for (int k = 0; k < 3; ++k)
        if (y.has(static_cast<Field>(kSrc0 << k)) && y.src[k] == reg) return true;
    return false;
}

// Adds the raises to `s` (moves, after its own) for the waits `waits` serves ((stream, index)),
// and the savings to `saving_on` (per stream). Returns how many waits it raised.
std::size_t raise_waits(const SuggestContext& sc, std::vector<std::pair<std::uint32_t, std::uint64_t>> waits, Suggestion& s,
                        std::map<std::uint32_t, Tick>& saving_on) {
    // Looked up for every instruction a wait's scan passes (a decode's double_buffer moves and
    // edits tens of thousands): hashed by (stream, index).
    std::unordered_map<std::uint64_t, std::uint64_t> anchor;  // a moved instruction: where it goes
    anchor.reserve(s.moves.size());
    for (const Move& m : s.moves) anchor[key(m.stream, m.from)] = m.before;
    std::unordered_map<std::uint64_t, const Instruction*> edited;
    edited.reserve(s.edits.size());
    for (const Edit& e : s.edits) edited[key(e.stream, e.index)] = &e.in;
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    std::map<std::uint32_t, std::uint64_t> fence;  // per stream: no raise goes above the previous one's place
    std::vector<Move> raises;
    std::size_t raised = 0;
    for (const auto& sw : waits) {
        const std::uint32_t sid = sw.first;  // plain variables: a lambda below captures them (clang
        const std::uint64_t w = sw.second;   // does not capture structured bindings in C++17)
        const Stream& st = sc.run.streams[sid];
        auto code = [&](std::uint64_t j) -> const Instruction& {
            auto it = edited.find(key(sid, j));
            return it != edited.end() ? *it->second : st.code[j];
        };
        if (anchor.count(key(sid, w)) || !st.life[w].seen) continue;
        // Its raisers: where they are now, and when they are estimated to be done.
        std::uint64_t floor = std::max(fence[sid], w > kReach ? w - kReach : 0);
        Tick done = 0;
        bool own = true;
        for (const Raiser& r : sc.plan.covered(sid, w)) {
            if (r.dma == kNone || r.stream != sid) {
                own = false;
                break;
            }
            const Dma& d = sc.run.dmas[r.dma];
            auto it = anchor.find(key(sid, r.index));
            const std::uint64_t at = it != anchor.end() ? it->second : r.index + 1;
            floor = std::max(floor, at);
            const Tick issue = it != anchor.end() && st.life[it->second].seen ? std::min(d.issue, st.life[it->second].issue) : d.issue;
            done = std::max(done, issue + (d.complete - d.issue));
        }
        if (!own || done == 0) continue;
        // The loads right after it that it orders, and how long their readers stalled on them.
        std::vector<std::uint64_t> loads;
        std::vector<Access> reads;
        Tick need = 0;
        for (std::uint64_t k = w + 1; k < st.code.size() && k <= w + kNear && code(k).op == Opcode::VLoad && !anchor.count(key(sid, k));
             ++k) {
            Access acc[2];
            const int na = accesses(st.code[k], st, acc);
            if (na == 0 || !sc.plan.wait_blocks(sid, w, acc, na)) break;
            loads.push_back(k);
            reads.push_back(acc[0]);
            const Instruction& in = code(k);
            for (std::uint64_t r = k + 1; r < st.code.size() && r <= k + kNear; ++r)
                if (in.has(kDst) && reads_register(code(r), in.dst)) {
                    const Life& lr = st.life[r];
                    if (lr.seen && lr.ready > lr.arrival && producer_of(sc.run, sid, r) == k) need = std::max(need, lr.ready - lr.arrival);
                    break;
                }
        }
        if (loads.empty() || need < kMinStall) continue;
        // Where to: the earliest place issued no sooner than `target`, within the rules.
        const Tick w_new = std::max(st.life[w].ready, done);  // the wait's issue once its DMAs land earlier
        const Tick target = std::max(done, w_new - std::min(w_new, need));
        const Instruction& wi = code(w);
        std::uint64_t to = w;
        for (std::uint64_t j = w; j-- > floor;) {
            if (anchor.count(key(sid, j))) continue;  // moved away: not there any more
            const Instruction& y = code(j);
            if (!st.life[j].seen || st.life[j].issue < target || is_barrier_like(y.op)) break;
            if ((y.op == Opcode::Dma || y.op == Opcode::SWait) && y.has(kFlag) && wi.has(kFlag) && y.flag == wi.flag &&
                flag_chip(y, st.chip) == flag_chip(wi, st.chip))
                break;
            bool stop = false;
            Access ya[2];
            const int ny = y.op == Opcode::SWait ? 0 : accesses(st.code[j], st, ya);
            for (std::size_t x = 0; x < loads.size() && !stop; ++x) {
                const Instruction& ld = code(loads[x]);
                if (ld.has(kDst) && ((y.has(kDst) && y.dst == ld.dst) || reads_register(y, ld.dst))) stop = true;
                else if (y.op == Opcode::SWait) stop = sc.plan.wait_blocks(sid, j, &reads[x], 1);
                else stop = ny && conflict(ya, ny, &reads[x], 1);
            }
            if (stop) break;
            to = j;
        }
        if (to >= w) continue;
        raises.push_back({sid, w, to});
        for (std::uint64_t k : loads) raises.push_back({sid, k, to});
        // What the raise adds to the suggestion under it: the loads issue when the raised wait
        // does (no sooner than `target`), instead of when the wait issues once its DMAs land
        // earlier (w_new). Counted from the run's issue of the loads instead, it counted again the
        // stall the suggestion under it already saves (a 70b TP-8 decode's double_buffer: 8.2 us
        // estimated, its hoist_wait 40.9, capped at the headroom).
        const Tick raised_at = std::max(target, st.life[to].issue);
        const Tick earlier = w_new - std::min(w_new, raised_at);
        saving_on[sid] += std::min(need, earlier);
        fence[sid] = to;
        ++raised;
    }
    for (Move& m : raises) s.moves.push_back(m);
    return raised;
}

}  // namespace

std::optional<Suggestion> with_raised_waits(const SuggestContext& sc, const WaitGroup& g) {
    Suggestion v = g.s;
    std::map<std::uint32_t, Tick> saving_on = g.saving_on;
    const std::size_t raised = raise_waits(sc, g.served, v, saving_on);
    if (!raised) return std::nullopt;
    v.estimated_saving = 0;
    for (const auto& [stream, t] : saving_on) v.estimated_saving = std::max(v.estimated_saving, t);
    // The base's own action is long (its suggestion is listed beside this one): named, not
    // repeated. The changes counted in all, as --apply and report.html count them.
    v.action = "as " + g.s.kind + " at " + g.s.where + ", and " + std::to_string(raised) +
               " of its waits moved up, each with the register loads after it, to where those DMAs are estimated to be done (" +
               changes_text(count_and_keep_changes(sc.run, v)) + ")";
    v.kind = "hoist_wait";
    v.variant = true;
    return v;
}

}  // namespace xpu::analysis
