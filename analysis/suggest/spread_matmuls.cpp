// spread_matmuls: matrix units of one core loaded unevenly while alike units stand idle (a
// GEMM whose N is not a multiple of the units' columns: N = 1536 on 8 units of 128 columns is
// 12 column tiles, a first pass on all 8 units and a second on 4 while the other 4 wait). Move
// some of the busy units' accumulators to idle alike units, with the weight tiles they are
// multiplied by, so that every unit streams about the same.
//
// When (the finding): a group of alike matrix units (analysis/matrix_groups.h: the same
// parameters, driven by one stream) that is not balanced (its busiest and least busy units'
// streaming differ by more than an eighth).
// The change: for a unit u above the group's average and a unit v below it, some accumulators
// of u move to v whole: every matmul that writes or reads one and every pop of one runs on v
// instead (the same register, the same shape: an accumulator is named by its register, and
// the core orders its uses by that register wherever they run; a register reused pass after
// pass moves one life at a time: analysis/suggest/spread_matmuls.cpp, StreamMatrixUse). Each weight push of u that a
// moved matmul multiplies by is issued to v as well, right after it (the same source register).
// The rule (legality): v mirrors u's weights wherever a moved matmul runs. From the push of u a
// moved accumulator's first matmul follows, to its last matmul, v runs nothing of its own that
// uses or loads weights (no matmul, no push: its pops may run, they read accumulators, not
// weights), and after it v's own next weight user is a push (it never multiplies by u's
// tile). The life's own pops after its last matmul need no weights either: v's own work may
// resume before them (the rule ran to the last pop before 2026-11-30, and a GEMM's pipelined
// epilogue pops a row block's accumulators during the next block's first pass, so only the
// last block's lives could move: 3000x1200x900 on xpu.yaml gained 1.70 us of its 18.9 us
// headroom, 4.92 us since). v may take lives of several units, where the spans over which it
// mirrors them (first push to last matmul) do not overlap; spans of one unit may (v then
// mirrors every push of u a moved matmul multiplies by, and a matmul's last push before it is
// the same on both). A life moves only if every instruction naming it is a matmul or pop of u.
// Which: balanced where the time is, not over the whole run. The stream is cut at its waits
// into stretches of at least as many lives as the group has units (consecutive pieces merged),
// each life in the stretch of its first use; in each stretch, for each unit above the
// stretch's average, the units below it (the least busy in the stretch first, then the least
// given so far: the next stretch prefers others) take the lives of u's accumulators in order of
// their first use, from the last, each if v may take it and neither u nor v ends more than
// half of it away from the average. Balancing the whole run's sums instead (until 2026-11-30)
// moved the last layers' lives, where other units were busy too, and left the layers that
// used one unit alone: the convolutions of resnet50 (N = 64 on one 128-column unit) kept
// mxu0 busy 185 us of a 463 us run, and the spread saved 3.5 us of it; 96 us now.
// The estimate: per stretch, its busiest unit's streaming before less after, times the share
// of the stretch's span in the run (its matmuls' first start to last end) that unit streamed
// (a stretch bound by something else gains that much less); summed over the stretches. A
// model of the compute bound, not of the run; the verification measures.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/matrix_groups.h"
#include "analysis/names.h"
#include "analysis/report.h"
#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

bool is_matrix_reg(std::uint8_t r) { return r >= kMatrixRegBase && r < kMatrixRegBase + kRegsPerClass; }

// One stream's matrix instructions by unit, and each accumulator's lives: from a matmul into it
// (the first, or the first after a pop of it with a weight push of its unit in between: a new
// pass over the output, the previous one popped) to the last pop before the next such matmul. A
// life moves whole; a register reused pass after pass has one per pass. (A pop between matmuls
// of one tile is no boundary: a bank holds several row blocks, and the last K step's matmuls of
// later rows still add to what it holds while the first rows are popped.)
struct StreamMatrixUse {
    struct Acc {
        std::uint32_t unit = kNone;  // into RunData::units; kNone - 1: more than one, or not movable
        std::vector<std::uint64_t> uses;  // indices naming it, ascending
        Tick work = 0;  // its matmuls' streaming
    };
    std::map<std::uint32_t, std::vector<std::uint64_t>> weight_users;  // unit -> its pushes and matmuls, ascending
    std::map<std::uint32_t, std::vector<std::uint64_t>> pushes;        // unit -> its pushes
    std::vector<Acc> accs;                                            // every life of every accumulator
};

constexpr std::uint32_t kMixed = kNone - 1;

StreamMatrixUse matrix_use(const SuggestContext& sc, std::uint32_t s) {
    const RunData& run = sc.run;
    const Stream& st = run.streams[s];
    StreamMatrixUse u;
    std::map<std::uint8_t, std::size_t> life;             // register -> its current life in u.accs
    std::map<std::uint8_t, std::uint64_t> last_pop;       // register -> 1 + its last pop's index since its last matmul (0: none)
    std::map<std::uint32_t, std::uint64_t> last_push;     // unit -> 1 + its last push's index
    for (std::uint64_t i = 0; i < st.code.size(); ++i) {
        const Instruction& in = st.code[i];
        const bool matrix = in.op == Opcode::MatMul || in.op == Opcode::MPush || in.op == Opcode::MPop;
        std::uint32_t unit = kNone;
        const std::uint32_t op = matrix ? sc.cx.ix.op_of(s, i) : kNone;
        if (op != kNone && op < run.unit_ops.size()) unit = run.unit_ops[op].unit;
        auto name = [&](std::uint8_t r) {
            if (!is_matrix_reg(r)) return;
            auto l = life.find(r);
            const std::uint64_t popped = last_pop[r];
            if (l == life.end() || (in.op == Opcode::MatMul && popped > 0 && last_push[unit] > popped)) {  // a new life
                life[r] = u.accs.size();
                u.accs.emplace_back();
                l = life.find(r);
            }
            if (in.op == Opcode::MPop) last_pop[r] = i + 1;
            if (in.op == Opcode::MatMul) last_pop[r] = 0;  // pops before it counted once: for the life it opens, or none
            StreamMatrixUse::Acc& a = u.accs[l->second];
            a.uses.push_back(i);
            const bool ok = (in.op == Opcode::MatMul || in.op == Opcode::MPop) && unit != kNone;
            a.unit = !ok ? kMixed : a.unit == kNone || a.unit == unit ? unit : kMixed;
        };
        if (in.has(kDst)) name(in.dst);
        if (in.has(kSrc0)) name(in.src[0]);
        if (in.has(kSrc1)) name(in.src[1]);
        if (in.has(kSrc2)) name(in.src[2]);
        if (unit == kNone) continue;
        if (in.op == Opcode::MPush) {
            last_push[unit] = i + 1;
            u.pushes[unit].push_back(i);
            u.weight_users[unit].push_back(i);
        } else if (in.op == Opcode::MatMul) {
            u.weight_users[unit].push_back(i);
            const UnitOp& uo = run.unit_ops[op];
            if (in.has(kDst) && is_matrix_reg(in.dst) && uo.end > uo.start) u.accs[life.at(in.dst)].work += uo.end - uo.start;
        }
    }
    return u;
}

// The socket (the instruction's unit field) the stream drives `unit` through: as its
// instructions did, or as the platform binds a unit they never used (RunData::matrix_socket).
std::map<std::uint32_t, std::uint8_t> sockets(const SuggestContext& sc, std::uint32_t s) {
    std::map<std::uint32_t, std::uint8_t> out;
    const RunData& run = sc.run;
    for (const UnitOp& op : run.unit_ops)
        if (op.stream == s && op.unit < run.units.size() && run.units[op.unit].role == Role::Matrix && op.index < run.streams[s].code.size())
            out.emplace(op.unit, run.streams[s].code[op.index].unit);
    const Stream& st = run.streams[s];
    std::set<int> used;
    for (const auto& [u, socket] : out) used.insert(socket);
    for (std::uint32_t u = 0; u < run.units.size() && u < run.matrix_socket.size(); ++u) {
        const RunData::Socket& b = run.matrix_socket[u];
        if (b.core == st.core && run.units[u].chip == st.chip && b.socket >= 0 && b.socket < 256 && !out.count(u) && !used.count(b.socket))
            out.emplace(u, static_cast<std::uint8_t>(b.socket));
    }
    return out;
}

class Planning {
public:
    Planning(const SuggestContext& sc, std::uint32_t s, const MatrixGroups::Group& g) : sc_(sc), s_(s), g_(g), use_(matrix_use(sc, s)), socket_(sockets(sc, s)) {}

    void run() {
        const std::vector<Life> lives = movable_lives();
        if (lives.empty()) return;
        // Stretches: the stream cut at its waits, consecutive pieces merged until each holds at
        // least as many lives as the group has units (a lone life has nowhere to spread).
        const Stream& st = sc_.run.streams[s_];
        std::vector<std::uint64_t> waits;
        for (std::uint64_t i = 0; i < st.code.size(); ++i)
            if (st.code[i].op == Opcode::SWait) waits.push_back(i);
        std::vector<std::vector<const Life*>> stretches;
        std::size_t piece = ~std::size_t{0};
        for (const Life& l : lives) {
            const std::size_t p = static_cast<std::size_t>(std::upper_bound(waits.begin(), waits.end(), l.first) - waits.begin());
            if (stretches.empty() || (p != piece && stretches.back().size() >= g_.units.size())) stretches.emplace_back();
            piece = p;
            stretches.back().push_back(&l);
        }
        for (const auto& r : stretches) balance(r);
    }

    bool empty() const { return moved_.empty(); }
    Tick estimate() const { return estimate_; }
    Tick most_before() const { return most_before_; }
    Tick most_after() const { return most_after_; }

    // The edits: moved matmuls and pops on v's socket, u's pushes issued to v as well.
    void edits(Suggestion& sug, std::uint64_t& matmuls, std::uint64_t& pops, std::uint64_t& pushes, std::set<std::string>& ops) const {
        const Stream& st = sc_.run.streams[s_];
        std::map<std::uint64_t, Edit> at;
        for (const auto& [i, v] : moved_) {
            Edit e{s_, i, st.code[i], {}};
            e.in.unit = socket_.at(v);
            (e.in.op == Opcode::MatMul ? matmuls : pops) += 1;
            ops.insert(sc_.run.annotation(st.code[i]));
            at.emplace(i, std::move(e));
        }
        for (const auto& [j, targets] : dup_) {
            auto it = at.find(j);
            if (it == at.end()) it = at.emplace(j, Edit{s_, j, st.code[j], {}}).first;
            for (std::uint32_t v : targets) {
                Instruction p = st.code[j];
                p.unit = socket_.at(v);
                it->second.then.push_back(p);
                ++pushes;
            }
            ops.insert(sc_.run.annotation(st.code[j]));
        }
        for (auto& [i, e] : at) sug.edits.push_back(std::move(e));
    }
    std::string units_text() const {  // "mxu0 -> mxu4, mxu1 -> mxu5"
        std::string t;
        for (const auto& [u, v] : pairs_) {
            auto leaf = [&](std::uint32_t x) {
                const std::string& p = sc_.run.units[x].path;
                return p.substr(p.rfind('.') + 1);
            };
            t += (t.empty() ? "" : ", ") + leaf(u) + " -> " + leaf(v);
        }
        return t;
    }
    std::size_t accumulators() const { return accumulators_; }
    std::size_t stretches() const { return stretches_; }

private:
    // A life that may move: its unit, its matmuls' streaming, and the program span over which a
    // unit taking it must mirror its unit's weights: from the first push its matmuls multiply by
    // to its last matmul (the pushes between are all its own unit's).
    struct Life {
        const StreamMatrixUse::Acc* acc = nullptr;
        std::uint64_t first = 0, lo = 0, hi = 0;
        std::set<std::uint64_t> pushes;
        Tick start = 0, end = 0;  // the run's first start and last end of its matmuls
        std::uint32_t unit() const { return acc->unit; }
        Tick work() const { return acc->work; }  // its matmuls' streaming
    };
    // A span of the program over which a unit mirrors another's weights (moved lives).
    struct Mirror {
        std::uint64_t lo = 0, hi = 0;
        std::uint32_t from = kNone;
    };

    const SuggestContext& sc_;
    std::uint32_t s_;
    const MatrixGroups::Group& g_;
    StreamMatrixUse use_;
    std::map<std::uint32_t, std::uint8_t> socket_;
    std::map<std::uint32_t, Tick> total_;                        // per unit, streaming assigned so far (ties)
    std::map<std::uint32_t, std::vector<Mirror>> mirrors_;       // per unit, the spans it mirrors another unit
    std::map<std::uint64_t, std::uint32_t> moved_;               // matmul or pop -> its new unit
    std::map<std::uint64_t, std::vector<std::uint32_t>> dup_;    // push of u -> the units it is issued to as well
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs_;  // (from, to), each pair once
    std::size_t accumulators_ = 0, stretches_ = 0;
    Tick estimate_ = 0, most_before_ = 0, most_after_ = 0;

    // u's push that the matmul at i multiplies by (the last push of u before it), or npos.
    std::uint64_t push_before(std::uint32_t u, std::uint64_t i) const {
        auto p = use_.pushes.find(u);
        if (p == use_.pushes.end()) return ~std::uint64_t{0};
        auto it = std::lower_bound(p->second.begin(), p->second.end(), i);
        return it == p->second.begin() ? ~std::uint64_t{0} : *std::prev(it);
    }

    std::vector<Life> movable_lives() const {
        const Stream& st = sc_.run.streams[s_];
        const std::set<std::uint32_t> group(g_.units.begin(), g_.units.end());
        std::vector<Life> out;
        for (const StreamMatrixUse::Acc& a : use_.accs) {
            if (!group.count(a.unit) || a.work == 0 || a.uses.empty()) continue;
            Life l;
            l.acc = &a;
            l.first = a.uses.front();
            l.start = ~Tick{0};
            bool ok = true;
            for (std::uint64_t i : a.uses) {
                if (st.code[i].op != Opcode::MatMul) continue;
                const std::uint64_t p = push_before(a.unit, i);
                if (p == ~std::uint64_t{0}) {
                    ok = false;
                    break;
                }
                l.pushes.insert(p);
                l.hi = i;
                const std::uint32_t op = sc_.cx.ix.op_of(s_, i);
                if (op != kNone && op < sc_.run.unit_ops.size()) {
                    l.start = std::min(l.start, sc_.run.unit_ops[op].start);
                    l.end = std::max(l.end, sc_.run.unit_ops[op].end);
                }
            }
            if (!ok || l.pushes.empty() || l.start == ~Tick{0}) continue;
            l.lo = *l.pushes.begin();
            out.push_back(std::move(l));
        }
        std::stable_sort(out.begin(), out.end(), [](const Life& x, const Life& y) { return x.first < y.first; });
        return out;
    }

    // v runs nothing of its own that uses or loads weights in (from, to], and its next such
    // instruction after `to` is a push (or there is none).
    bool free_over(std::uint32_t v, std::uint64_t from, std::uint64_t to) const {
        auto w = use_.weight_users.find(v);
        if (w == use_.weight_users.end()) return true;
        auto it = std::upper_bound(w->second.begin(), w->second.end(), from);
        if (it != w->second.end() && *it <= to) return false;
        it = std::upper_bound(w->second.begin(), w->second.end(), to);
        return it == w->second.end() || sc_.run.streams[s_].code[*it].op == Opcode::MPush;
    }

    // May v take a life of u spanning [lo, hi]? v's own weight users stay out of it (and it
    // ends before v's own next push), and no span v mirrors of another unit overlaps it (spans
    // of u's own may: v then mirrors every push of u in both, as u does).
    bool may_take(std::uint32_t v, std::uint32_t u, std::uint64_t lo, std::uint64_t hi) const {
        if (!free_over(v, lo, hi)) return false;
        auto m = mirrors_.find(v);
        if (m == mirrors_.end()) return true;
        for (const Mirror& x : m->second)
            if (x.from != u && x.lo <= hi && lo <= x.hi) return false;
        return true;
    }

    // One stretch: the lives of its busiest units go to its least busy ones, while that narrows
    // the gap. For each unit above the stretch's average, the units below it, the least busy
    // first (over the whole stream on a tie: the next stretch prefers others): its lives in order
    // of first use from the last, each if the other unit may take it and neither unit ends more
    // than half of it away from the average.
    void balance(const std::vector<const Life*>& lives) {
        std::map<std::uint32_t, Tick> load;
        for (std::uint32_t u : g_.units) load[u] = 0;
        Tick sum = 0, first = ~Tick{0}, last = 0;
        for (const Life* l : lives) {
            load[l->unit()] += l->work();
            sum += l->work();
            first = std::min(first, l->start);
            last = std::max(last, l->end);
        }
        const Tick avg = (sum + g_.units.size() - 1) / g_.units.size();
        Tick before = 0;
        for (const auto& [u, w] : load) before = std::max(before, w);
        std::vector<std::uint32_t> busy, idle;
        for (const auto& [u, w] : load) (w > avg ? busy : idle).push_back(u);
        std::stable_sort(busy.begin(), busy.end(), [&](auto a, auto b) { return load[a] > load[b]; });
        // The stretch's moves, kept only if its busiest unit streams less after them.
        std::vector<std::pair<const Life*, std::uint32_t>> moves;
        std::set<const Life*> gone;
        for (std::uint32_t u : busy) {
            std::stable_sort(idle.begin(), idle.end(), [&](auto a, auto b) { return std::make_pair(load[a], total_[a]) < std::make_pair(load[b], total_[b]); });
            for (std::uint32_t v : idle) {
                if (load[u] <= avg) break;
                if (!socket_.count(v) || !socket_.count(u)) continue;
                for (auto it = lives.rbegin(); it != lives.rend(); ++it) {
                    const Life* l = *it;
                    if (l->unit() != u || gone.count(l)) continue;
                    const Tick lu = load[u], lv = load[v], w = l->work();
                    if (lu <= avg || lu - w + w / 2 < avg || lv + w > avg + w / 2) continue;
                    if (!may_take(v, u, l->lo, l->hi)) continue;
                    load[u] -= w;
                    load[v] += w;
                    mirrors_[v].push_back({l->lo, l->hi, u});
                    moves.push_back({l, v});
                    gone.insert(l);
                }
            }
        }
        Tick after = 0;
        for (const auto& [u, w] : load) after = std::max(after, w);
        if (after >= before) {
            for (const auto& m : moves) mirrors_[m.second].pop_back();  // the stretch's own, appended last
            for (const Life* l : lives) total_[l->unit()] += l->work();
            return;
        }
        for (const auto& [l, v] : moves) {
            for (std::uint64_t i : l->acc->uses) moved_[i] = v;
            for (std::uint64_t p : l->pushes) {
                auto& d = dup_[p];
                if (std::find(d.begin(), d.end(), v) == d.end()) d.push_back(v);
            }
            if (std::find(pairs_.begin(), pairs_.end(), std::make_pair(l->unit(), v)) == pairs_.end()) pairs_.push_back({l->unit(), v});
        }
        accumulators_ += moves.size();
        for (const auto& [u, w] : load) total_[u] += w;
        ++stretches_;
        most_before_ += before;
        most_after_ += after;
        // The stretch's busiest unit streams `before` of the run's span of its matmuls: where it
        // streamed throughout, the stretch is compute-bound and shortens by what its busiest unit
        // sheds; where it streamed less, by that share of it (a model, not the run).
        const Tick span = last > first ? last - first : before;
        const long double share = span > before ? static_cast<long double>(before) / span : 1.0L;
        estimate_ += static_cast<Tick>((before - after) * share);
    }
};

class SpreadMatmuls : public SuggestionFinder {
public:
    const char* kind() const override { return "spread_matmuls"; }
    bool reads_remedies() const override { return false; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        const std::vector<Tick> streaming = matmul_streaming(sc.run);
        const MatrixGroups groups = matrix_groups(sc.run, streaming);
        Suggestion sug;
        std::uint64_t matmuls = 0, pops = 0, pushes = 0;
        std::set<std::string> ops;
        std::ostringstream cause, action;
        std::size_t accs = 0;
        std::string pairs;
        for (const MatrixGroups::Group& g : groups.groups) {
            if (g.balanced) continue;
            Planning p(sc, g.stream, g);
            p.run();
            if (p.empty()) continue;
            p.edits(sug, matmuls, pops, pushes, ops);
            sug.estimated_saving = std::max(sug.estimated_saving, p.estimate());
            if (cause.tellp() > 0) cause << "; ";
            cause << sc.run.streams[g.stream].label() << ": " << g.units.size() << " alike matrix units stream " << format_time(g.least)
                  << " to " << format_time(g.most) << " each";
            if (action.tellp() > 0) action << "; ";
            action << p.units_text() << " (busiest, summed over " << p.stretches() << (p.stretches() == 1 ? " stretch: " : " stretches: ")
                   << format_time(p.most_before()) << " -> " << format_time(p.most_after()) << ")";
            accs += p.accumulators();
        }
        if (sug.edits.empty()) return;
        sug.kind = "spread_matmuls";
        set_places(sug, ops, {});
        sug.cause = "matrix units loaded unevenly while alike ones stand idle (" + cause.str() + ")";
        std::ostringstream a;
        a << "spread the work: " << accs << (accs == 1 ? " accumulator" : " accumulators") << " of the busiest units move to idle alike units, "
          << matmuls << " matmuls and " << pops << " pops with them, and the " << pushes
          << " weight pushes they multiply by issued to both units (" << action.str() << ")";
        sug.action = a.str();
        out.push_back(std::move(sug));
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> spread_matmuls_finder() { return std::make_unique<SpreadMatmuls>(); }

}  // namespace xpu::analysis
