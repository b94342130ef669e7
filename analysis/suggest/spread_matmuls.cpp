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
// headroom, 4.92 us since). A life moves only if every instruction naming it is a matmul or pop of u.
// Which: for each unit above the group's average, the units below it, the least busy first, each
// taking from one unit at most: the lives of u's accumulators in order of their first use, from
// the last, each if v is free over it and neither u nor v ends more than half of it away from
// the average.
// The estimate: the group's busiest streaming before less after (each unit streams its matmuls
// one after another, and alike units stream a matmul as long as each other): a model of the
// compute bound, not of the run; the verification measures.
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
    Planning(const SuggestContext& sc, std::uint32_t s, const MatrixGroups::Group& g, const std::vector<Tick>& streaming)
        : sc_(sc), s_(s), g_(g), use_(matrix_use(sc, s)), socket_(sockets(sc, s)) {
        for (std::uint32_t u : g.units) load_[u] = u < streaming.size() ? streaming[u] : 0;
    }

    void run() {
        const Tick avg = g_.average();
        std::vector<std::uint32_t> busy, idle;
        for (const auto& [u, l] : load_) (l > avg ? busy : idle).push_back(u);
        std::stable_sort(busy.begin(), busy.end(), [&](auto a, auto b) { return load_[a] > load_[b]; });
        std::set<std::uint32_t> taken;  // targets already given work
        for (std::uint32_t u : busy) {
            std::stable_sort(idle.begin(), idle.end(), [&](auto a, auto b) { return load_[a] < load_[b]; });
            for (std::uint32_t v : idle) {
                if (load_[u] <= avg) break;
                if (taken.count(v) || !socket_.count(v) || !socket_.count(u)) continue;
                if (move(u, v, avg)) taken.insert(v);
            }
        }
    }

    bool empty() const { return moved_.empty(); }
    Tick most_before() const { return g_.most; }
    Tick most_after() const {
        Tick m = 0;
        for (const auto& [u, l] : load_) m = std::max(m, l);
        return m;
    }

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

private:
    const SuggestContext& sc_;
    std::uint32_t s_;
    const MatrixGroups::Group& g_;
    StreamMatrixUse use_;
    std::map<std::uint32_t, std::uint8_t> socket_;
    std::map<std::uint32_t, Tick> load_;
    std::map<std::uint64_t, std::uint32_t> moved_;               // matmul or pop -> its new unit
    std::map<std::uint64_t, std::vector<std::uint32_t>> dup_;    // push of u -> the units it is issued to as well
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs_;  // (from, to)
    std::size_t accumulators_ = 0;
    std::set<const StreamMatrixUse::Acc*> gone_;                 // the lives already moved

    // u's push that the matmul at i multiplies by (the last push of u before it), or npos.
    std::uint64_t push_before(std::uint32_t u, std::uint64_t i) const {
        auto p = use_.pushes.find(u);
        if (p == use_.pushes.end()) return ~std::uint64_t{0};
        auto it = std::lower_bound(p->second.begin(), p->second.end(), i);
        return it == p->second.begin() ? ~std::uint64_t{0} : *std::prev(it);
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

    bool move(std::uint32_t u, std::uint32_t v, Tick avg) {
        const Stream& st = sc_.run.streams[s_];
        // u's movable accumulators, by first use, last first.
        std::vector<const StreamMatrixUse::Acc*> mine;
        for (const StreamMatrixUse::Acc& a : use_.accs)
            if (a.unit == u && a.work > 0 && !a.uses.empty() && !gone_.count(&a)) mine.push_back(&a);
        std::stable_sort(mine.begin(), mine.end(), [](const auto* x, const auto* y) { return x->uses.front() > y->uses.front(); });
        Tick moved = 0;
        std::set<std::uint64_t> pushes;
        std::vector<std::uint64_t> uses;
        std::size_t n = 0;
        for (const StreamMatrixUse::Acc* a : mine) {
            // Only if neither u nor v ends further than half of it from the average (u then
            // gives the rest to another unit): the gap between them narrows.
            const Tick lu = load_[u] - moved, lv = load_[v] + moved, w = a->work;
            if (lu <= avg || lu - w + w / 2 < avg || lv + w > avg + w / 2) continue;
            // The pushes its matmuls multiply by, and v free from the first of them to its last use.
            std::set<std::uint64_t> its_pushes;
            std::uint64_t last_matmul = 0;
            bool ok = true;
            for (std::uint64_t i : a->uses) {
                if (st.code[i].op != Opcode::MatMul) continue;
                const std::uint64_t p = push_before(u, i);
                if (p == ~std::uint64_t{0}) {
                    ok = false;
                    break;
                }
                its_pushes.insert(p);
                last_matmul = i;
            }
            // v mirrors u's weights up to the life's last matmul; its pops after that read the
            // accumulator, not the weights, so v's own work may resume (with a push) before them.
            if (!ok || its_pushes.empty() || !free_over(v, *its_pushes.begin(), last_matmul)) continue;
            moved += a->work;
            gone_.insert(a);
            pushes.insert(its_pushes.begin(), its_pushes.end());
            uses.insert(uses.end(), a->uses.begin(), a->uses.end());
            ++n;
        }
        if (n == 0) return false;
        for (std::uint64_t i : uses) moved_[i] = v;
        for (std::uint64_t p : pushes) dup_[p].push_back(v);
        load_[u] -= moved;
        load_[v] += moved;
        pairs_.push_back({u, v});
        accumulators_ += n;
        return true;
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
            Planning p(sc, g.stream, g, streaming);
            p.run();
            if (p.empty()) continue;
            p.edits(sug, matmuls, pops, pushes, ops);
            sug.estimated_saving = std::max(sug.estimated_saving, p.most_before() - p.most_after());
            if (cause.tellp() > 0) cause << "; ";
            cause << sc.run.streams[g.stream].label() << ": " << g.units.size() << " alike matrix units stream " << format_time(g.least)
                  << " to " << format_time(g.most) << " each";
            if (action.tellp() > 0) action << "; ";
            action << p.units_text() << " (busiest " << format_time(p.most_before()) << " -> " << format_time(p.most_after()) << ")";
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
