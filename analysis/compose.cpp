#include "analysis/compose.h"

#include <algorithm>

#include "analysis/dependencies.h"
#include "analysis/names.h"

namespace xpu::analysis {

namespace {

// Byte ranges of memory, by memory (space, chip, VMEM): does any overlap a given range?
class Ranges {
public:
    void add(const Access& x) {
        if (x.hi > x.lo) v_.push_back({key(x), x.lo, x.hi});
    }
    // After the last add(): sorted by memory then start, overlapping ranges of a memory joined (a
    // list-scheduled window moves thousands of loads of a few buffers): disjoint, so their ends
    // ascend too.
    void seal() {
        std::sort(v_.begin(), v_.end(), [](const R& a, const R& b) { return a.key != b.key ? a.key < b.key : a.lo < b.lo; });
        std::size_t w = 0;
        for (const R& r : v_) {
            if (w > 0 && v_[w - 1].key == r.key && r.lo <= v_[w - 1].hi) v_[w - 1].hi = std::max(v_[w - 1].hi, r.hi);
            else v_[w++] = r;
        }
        v_.resize(w);
        v_.shrink_to_fit();
    }
    bool overlaps(std::uint64_t k, std::uint64_t lo, std::uint64_t hi) const {
        // The last range of memory k that starts before hi: does it reach past lo?
        auto first = std::lower_bound(v_.begin(), v_.end(), k, [](const R& r, std::uint64_t key) { return r.key < key; });
        auto end = std::lower_bound(first, v_.end(), std::make_pair(k, hi),
                                    [](const R& r, const std::pair<std::uint64_t, std::uint64_t>& x) { return r.key == x.first && r.lo < x.second; });
        return end != first && (end - 1)->hi > lo;
    }
    bool overlaps(const Ranges& o) const {
        const Ranges& few = v_.size() < o.v_.size() ? *this : o;
        const Ranges& many = &few == this ? o : *this;
        for (const R& r : few.v_)
            if (many.overlaps(r.key, r.lo, r.hi)) return true;
        return false;
    }

private:
    static std::uint64_t key(const Access& x) {
        return static_cast<std::uint64_t>(x.space) | std::uint64_t{x.chip} << 8 | std::uint64_t{x.vmem} << 24;
    }
    struct R {
        std::uint64_t key, lo, hi;
    };
    std::vector<R> v_;
};

using Stretches = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // [first, last] touched, sorted, disjoint

void merge(Stretches& s) {
    std::sort(s.begin(), s.end());
    std::size_t w = 0;
    for (const auto& x : s) {
        if (w > 0 && x.first <= s[w - 1].second + 1) s[w - 1].second = std::max(s[w - 1].second, x.second);
        else s[w++] = x;
    }
    s.resize(w);
    s.shrink_to_fit();
}

bool overlap(const Stretches& a, const Stretches& b) {
    for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
        if (a[i].second < b[j].first) ++i;
        else if (b[j].second < a[i].first) ++j;
        else return true;
    }
    return false;
}

std::uint32_t flag_key(std::uint16_t chip, std::uint16_t flag) { return std::uint32_t{chip} << 16 | flag; }

}  // namespace

struct Composition::Footprint {
    bool patch = false;                            // has moves or edits
    bool whole = false;                            // writes the whole trace again (a relowering)
    std::map<std::uint32_t, Stretches> stretches;  // per stream
    std::set<std::uint32_t> flags;                 // flags it takes (flag_key)
    Ranges taken;                                  // memory it takes
    Ranges reached;                                // memory the program's instructions it moves or rewrites access
};

Composition::Composition(const RunData& run, const std::vector<Suggestion>& suggestions)
    : run_(run), suggestions_(suggestions), footprints_(suggestions.size()) {}

// Read from the whole program once, and only when a rewritten instruction names a flag (the
// verification asks whether suggestions compose on every run).
bool Composition::named(std::uint32_t flag) {
    if (!named_read_) {
        for (const Stream& st : run_.streams)
            for (const Instruction& in : st.code)
                if (in.has(kFlag)) named_.insert(flag_key(flag_chip(in, st.chip), in.flag));
        named_read_ = true;
    }
    return named_.count(flag) != 0;
}

Composition::~Composition() = default;

const Composition::Footprint& Composition::footprint(std::size_t i) {
    std::unique_ptr<Footprint>& slot = footprints_.at(i);
    if (slot) return *slot;
    const Suggestion& s = suggestions_[i];
    slot = std::make_unique<Footprint>();
    Footprint& f = *slot;
    f.patch = !s.moves.empty() || !s.edits.empty();
    f.whole = s.relowering != nullptr;
    Access acc[2];
    auto reach = [&](std::uint32_t stream, std::uint64_t i) {
        if (stream >= run_.streams.size() || i >= run_.streams[stream].code.size()) return;
        const Stream& st = run_.streams[stream];
        for (int k = 0, n = accesses(st.code[i], st, acc); k < n; ++k) f.reached.add(acc[k]);
    };
    for (const Move& m : s.moves) {
        const std::uint64_t to = m.before == Move::kDelete ? m.from : m.before;
        f.stretches[m.stream].emplace_back(std::min(m.from, to), std::max(m.from, to));
        reach(m.stream, m.from);
    }
    for (const Edit& e : s.edits) {
        f.stretches[e.stream].emplace_back(e.index, e.index);
        if (e.stream >= run_.streams.size() || e.index >= run_.streams[e.stream].code.size()) continue;
        const Stream& st = run_.streams[e.stream];
        Access was[2];
        const int n_was = accesses(st.code[e.index], st, was);
        for (int w = 0; w < n_was; ++w) f.reached.add(was[w]);
        // What the rewritten instruction, and those emitted after it, take: memory the original
        // did not access, flags the program never names.
        auto take = [&](const Instruction& in) {
            for (int k = 0, n = accesses(in, st, acc); k < n; ++k) {
                bool inside = false;
                for (int w = 0; w < n_was && !inside; ++w)
                    inside = was[w].space == acc[k].space && was[w].chip == acc[k].chip && was[w].vmem == acc[k].vmem &&
                             was[w].lo <= acc[k].lo && acc[k].hi <= was[w].hi;
                if (!inside) f.taken.add(acc[k]);
            }
            if (in.has(kFlag)) {
                const std::uint32_t key = flag_key(flag_chip(in, st.chip), in.flag);
                if (!named(key)) f.flags.insert(key);
            }
        };
        take(e.in);
        for (const Instruction& in : e.then) take(in);
    }
    for (auto& [stream, v] : f.stretches) merge(v);
    f.taken.seal();
    f.reached.seal();
    return f;
}

std::string Composition::conflict(std::size_t i, std::size_t j) {
    const Footprint& fa = footprint(i);
    const Footprint& fb = footprint(j);
    const std::string other = "[" + suggestions_[i].kind + "]";
    if (fb.whole) return "lowers the collective again, which no other change composes with";
    if (fa.whole) return "changes instructions of the trace " + other + " lowers again";
    if (!fb.patch) return "is advice without a patch";
    if (!fa.patch) return other + " is advice without a patch";
    for (const auto& [stream, x] : fa.stretches) {
        auto y = fb.stretches.find(stream);
        if (y != fb.stretches.end() && overlap(x, y->second)) return "changes instructions among those that " + other + " changes";
    }
    for (std::uint32_t flag : fa.flags)
        if (fb.flags.count(flag))
            return "takes flag " + std::to_string(flag & 0xFFFF) + " of chip " + std::to_string(flag >> 16) +
                   " (which the program never names), as " + other + " does";
    if (fa.taken.overlaps(fb.taken)) return "takes memory that " + other + " takes";
    if (fb.taken.overlaps(fa.reached)) return "takes memory that an instruction " + other + " changes accesses";
    if (fa.taken.overlaps(fb.reached)) return "changes an instruction that accesses memory " + other + " takes";
    return "";
}

Suggestion compose(const std::vector<const Suggestion*>& parts, Tick headroom) {
    Suggestion c;
    c.kind = "combined";
    for (const Suggestion* p : parts) {
        const std::string sep = c.where.empty() ? "" : "; ";
        c.where += sep + p->kind + " at " + p->where;
        c.cause += sep + p->cause;
        c.action += sep + p->action;
        c.estimated_saving += p->estimated_saving;
        c.estimate_capped = c.estimate_capped || p->estimate_capped;
        c.moves.insert(c.moves.end(), p->moves.begin(), p->moves.end());
        c.edits.insert(c.edits.end(), p->edits.begin(), p->edits.end());
        c.ops.insert(c.ops.end(), p->ops.begin(), p->ops.end());
        c.dma_ops.insert(c.dma_ops.end(), p->dma_ops.begin(), p->dma_ops.end());
    }
    if (c.estimated_saving > headroom) {  // no change saves more than the headroom
        c.estimated_saving = headroom;
        c.estimate_capped = true;
    }
    c.ops = sorted_names(std::move(c.ops));
    c.dma_ops = sorted_names(std::move(c.dma_ops));
    return c;
}

}  // namespace xpu::analysis
