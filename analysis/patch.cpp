#include "analysis/patch.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "analysis/relower.h"
#include "traces/trace_writer.h"

namespace xpu::analysis {

// Sorted vectors rather than sets and maps: the finders count every candidate they build
// (reorder: a list-scheduled window moves each of its instructions, ~1.9 M moves on a 32-layer
// decode), and the tree nodes were most of the cost.
PatchCount count_changes(const RunData& run, const Suggestion& s) {
    PatchCount c;
    if (s.relowering) {  // every instruction goes, the other lowering's come in
        for (const Stream& st : run.streams) c.deleted += st.code.size();
        c.inserted = s.relowering->instructions;
        return c;
    }
    // The moves that count, as indices into s.moves (4 bytes each, not a copy: a reorder of a
    // 32-layer decode has ~1.9 M moves, and its count ran beside the finders' other results at the
    // analysis's peak): the first move of each instruction (as the patch applies it), sorted by
    // stream and instruction.
    if (s.moves.size() > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("count_changes: more than 2^32 moves");
    const auto& mv = s.moves;
    std::vector<std::uint32_t> taken;
    taken.reserve(mv.size());
    // Sorted as plain integers: each move's place in the whole trace (its stream's offset plus
    // its index) above its own index, in one 64-bit word. A sort through the moves (a comparator
    // reading two moves per step) was most of count_changes' time on a reorder's 1.9 M moves, and
    // count_changes runs for every candidate and again for report.html. (A trace of 2^32
    // instructions would not fit in memory to be analysed: its Life records alone are 128 GiB.)
    std::vector<std::uint64_t> offset(run.streams.size() + 1, 0);
    for (std::size_t t = 0; t < run.streams.size(); ++t) offset[t + 1] = offset[t] + run.streams[t].code.size();
    if (offset.back() > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("count_changes: more than 2^32 instructions");
    {
        std::vector<std::uint64_t> packed;
        packed.reserve(mv.size());
        for (std::size_t i = 0; i < mv.size(); ++i) {
            const Move& m = mv[i];
            if (m.stream >= run.streams.size() || m.from >= run.streams[m.stream].code.size()) continue;
            packed.push_back((offset[m.stream] + m.from) << 32 | i);
        }
        if (!std::is_sorted(packed.begin(), packed.end())) std::sort(packed.begin(), packed.end());
        for (std::size_t k = 0; k < packed.size(); ++k)  // the first move of each instruction
            if (k == 0 || packed[k] >> 32 != packed[k - 1] >> 32) taken.push_back(static_cast<std::uint32_t>(packed[k]));
    }
    // Per stream (a run of `taken`): the instructions that leave their place and those deleted
    // (both sorted, as `taken` is by from), and the changed ones.
    struct PerStream {
        std::uint32_t stream;
        std::vector<std::uint64_t> deleted, changed_place;  // sorted
    };
    std::vector<PerStream> per;
    std::vector<std::uint32_t> before;  // the moves put in front of an instruction (not deleted)
    for (std::size_t a = 0; a < taken.size();) {
        std::size_t b = a;
        while (b < taken.size() && mv[taken[b]].stream == mv[taken[a]].stream) ++b;
        PerStream p{mv[taken[a]].stream, {}, {}};
        before.clear();
        for (std::size_t i = a; i < b; ++i) {
            if (mv[taken[i]].before == Move::kDelete) p.deleted.push_back(mv[taken[i]].from);
            else before.push_back(taken[i]);
        }
        c.deleted += p.deleted.size();
        // How many of this stream's instructions that leave their place come before x.
        auto gone_below = [&](std::uint64_t x) {
            return static_cast<std::uint64_t>(
                std::lower_bound(taken.begin() + static_cast<std::ptrdiff_t>(a), taken.begin() + static_cast<std::ptrdiff_t>(b), x,
                                 [&](std::uint32_t k, std::uint64_t v) { return mv[k].from < v; }) -
                (taken.begin() + static_cast<std::ptrdiff_t>(a)));
        };
        auto deleted_below = [&](std::uint64_t x) {
            return static_cast<std::uint64_t>(std::lower_bound(p.deleted.begin(), p.deleted.end(), x) - p.deleted.begin());
        };
        // Position in the patched stream among the instructions that are not deleted, against the
        // position in the original among the same instructions. In front of one index, moved
        // instructions go in rank order, then program order.
        auto in_front = [&](std::uint32_t i, std::uint32_t j) {
            const Move &x = mv[i], &y = mv[j];
            return x.before != y.before ? x.before < y.before : x.rank != y.rank ? x.rank < y.rank : x.from < y.from;
        };
        if (!std::is_sorted(before.begin(), before.end(), in_front)) {  // as above: (before, rank) and (from, move) as integers
            std::vector<std::pair<std::uint64_t, std::uint64_t>> keyed(before.size());
            for (std::size_t k = 0; k < before.size(); ++k) {
                const Move& m = mv[before[k]];
                keyed[k] = {m.before << 32 | m.rank, m.from << 32 | before[k]};
            }
            std::sort(keyed.begin(), keyed.end());
            for (std::size_t k = 0; k < before.size(); ++k) before[k] = static_cast<std::uint32_t>(keyed[k].second);
        }
        std::uint64_t inserted_before = 0;  // moved instructions put in front of an earlier index
        for (std::size_t i = 0; i < before.size();) {
            const std::uint64_t at = mv[before[i]].before;
            std::size_t j = i;
            while (j < before.size() && mv[before[j]].before == at) ++j;
            const std::uint64_t base = at - gone_below(at) + inserted_before;
            for (std::size_t k = i; k < j; ++k) {
                const std::uint64_t from = mv[before[k]].from;
                if (base + (k - i) != from - deleted_below(from)) p.changed_place.push_back(from);
            }
            inserted_before += j - i;
            i = j;
        }
        std::sort(p.changed_place.begin(), p.changed_place.end());  // each from at most once: froms are distinct
        c.moved += p.changed_place.size();
        per.push_back(std::move(p));
        a = b;
    }
    // Rewritten: an edit that changes its instruction (one that only carries inserted
    // instructions after it leaves it as it was).
    std::vector<std::pair<std::uint32_t, std::uint64_t>> edited;
    edited.reserve(s.edits.size());
    for (const Edit& e : s.edits) {
        c.inserted += e.then.size();
        if (e.stream < run.streams.size() && e.index < run.streams[e.stream].code.size() && e.in == run.streams[e.stream].code[e.index])
            continue;
        edited.push_back({e.stream, e.index});
    }
    std::sort(edited.begin(), edited.end());
    edited.erase(std::unique(edited.begin(), edited.end()), edited.end());
    for (const auto& [stream, index] : edited) {
        auto p = std::lower_bound(per.begin(), per.end(), stream, [](const PerStream& x, std::uint32_t v) { return x.stream < v; });
        if (p != per.end() && p->stream == stream &&
            (std::binary_search(p->deleted.begin(), p->deleted.end(), index) ||
             std::binary_search(p->changed_place.begin(), p->changed_place.end(), index)))
            continue;
        ++c.rewritten;
    }
    return c;
}

PatchCount count_and_keep_changes(const RunData& run, Suggestion& s) {
    const PatchCount c = count_changes(run, s);
    s.counted = Suggestion::Counted{c, s.moves.data(), s.moves.size(), s.edits.data(), s.edits.size()};
    return c;
}

PatchCount counted_changes(const RunData& run, const Suggestion& s) {
    const auto& k = s.counted;
    if (k && k->moves == s.moves.data() && k->n_moves == s.moves.size() && k->edits == s.edits.data() && k->n_edits == s.edits.size())
        return k->count;
    return count_changes(run, s);
}

std::string changes_text(const PatchCount& c) {
    std::string out;
    auto part = [&](std::size_t n, const char* one, const char* many) {
        if (!n) return;
        out += (out.empty() ? std::to_string(n) + (n == 1 ? " instruction " : " instructions ") : ", " + std::to_string(n) + " ");
        out += n == 1 ? one : many;
    };
    part(c.moved, "changes place", "change place");
    part(c.deleted, "dropped", "dropped");
    part(c.rewritten, "rewritten", "rewritten");
    part(c.inserted, "inserted", "inserted");
    return out.empty() ? "no instruction changes" : out;
}

void visit_patched(const RunData& run, const Suggestion& s, const std::function<void(std::uint32_t)>& stream_begin,
                   const std::function<void(std::uint32_t, std::uint64_t, const Edit*)>& visit) {
    // Per stream: which instructions leave their place, and what goes in front of each index.
    std::vector<std::vector<bool>> gone(run.streams.size());
    std::vector<std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>> before(run.streams.size());  // (rank, from)
    for (const Move& m : s.moves) {
        if (m.stream >= run.streams.size() || m.from >= run.streams[m.stream].code.size())
            throw std::runtime_error("suggestion moves an instruction that is not in the trace");
        auto& g = gone[m.stream];
        if (g.empty()) g.assign(run.streams[m.stream].code.size(), false);
        if (g[m.from]) continue;
        g[m.from] = true;
        if (m.before != Move::kDelete) before[m.stream][m.before].push_back({m.rank, m.from});
    }
    // Edits: the instruction's new fields, wherever it ends up (same index of the original).
    std::vector<std::map<std::uint64_t, const Edit*>> edited(run.streams.size());
    for (const Edit& e : s.edits) {
        if (e.stream >= run.streams.size() || e.index >= run.streams[e.stream].code.size())
            throw std::runtime_error("suggestion edits an instruction that is not in the trace");
        edited[e.stream].emplace(e.index, &e);
    }
    for (std::uint32_t si = 0; si < run.streams.size(); ++si) {
        const Stream& st = run.streams[si];
        stream_begin(si);
        const auto& ed = edited[si];
        auto emit = [&](std::uint64_t i) {
            auto e = ed.find(i);
            visit(si, i, e == ed.end() ? nullptr : e->second);
        };
        auto& ins = before[si];
        for (auto& [at, v] : ins) std::sort(v.begin(), v.end());
        for (std::uint64_t i = 0; i <= st.code.size(); ++i) {
            auto it = ins.find(i);
            if (it != ins.end())
                for (const auto& [rank, m] : it->second) emit(m);
            if (i < st.code.size() && (gone[si].empty() || !gone[si][i])) emit(i);
        }
    }
}

PatchCount write_patched_trace(const RunData& run, const Suggestion& s, const std::string& path) {
    if (s.relowering) {  // the collective lowered the other way: xpu_tracegen's trace, byte for byte
        try {
            write_collective(s.relowering->params, path);
        } catch (const trace::TraceError& e) {
            throw std::runtime_error(e.what());
        }
        return count_changes(run, s);
    }
    try {
        trace::TraceWriter w(path);
        std::vector<std::uint32_t> ann(run.strings.size());
        for (std::size_t i = 0; i < run.strings.size(); ++i) ann[i] = w.add_string(run.strings[i]);
        std::size_t out = 0;
        auto put = [&](Instruction in) {
            if (in.has(kAnn) && in.ann < ann.size()) in.ann = ann[in.ann];
            w.append(out, in);
        };
        visit_patched(
            run, s, [&](std::uint32_t si) { out = w.add_stream(run.streams[si].chip, run.streams[si].core); },
            [&](std::uint32_t si, std::uint64_t i, const Edit* e) {
                if (!e) return put(run.streams[si].code[i]);
                put(e->in);
                for (const Instruction& more : e->then) put(more);
            });
        w.close();
    } catch (const trace::TraceError& e) {
        throw std::runtime_error(e.what());
    }
    return count_changes(run, s);
}

}  // namespace xpu::analysis
