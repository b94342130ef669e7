#include "analysis/patch.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "traces/trace_writer.h"

namespace xpu::analysis {

// Sorted vectors rather than sets and maps: the finders count every candidate they build
// (reorder: a list-scheduled window moves each of its instructions, ~1.3 M moves on a 32-layer
// decode), and the tree nodes were most of the cost.
PatchCount count_changes(const RunData& run, const Suggestion& s) {
    PatchCount c;
    struct Taken {  // a move that counts: the first one of its instruction (as the patch applies it)
        std::uint32_t stream;
        std::uint64_t from, before, rank;
        std::size_t order;  // its position in s.moves
    };
    std::vector<Taken> taken;
    taken.reserve(s.moves.size());
    for (std::size_t i = 0; i < s.moves.size(); ++i) {
        const Move& m = s.moves[i];
        if (m.stream >= run.streams.size() || m.from >= run.streams[m.stream].code.size()) continue;
        taken.push_back({m.stream, m.from, m.before, m.rank, i});
    }
    std::sort(taken.begin(), taken.end(), [](const Taken& a, const Taken& b) {
        return a.stream != b.stream ? a.stream < b.stream : a.from != b.from ? a.from < b.from : a.order < b.order;
    });
    taken.erase(std::unique(taken.begin(), taken.end(), [](const Taken& a, const Taken& b) { return a.stream == b.stream && a.from == b.from; }),
                taken.end());
    // Per stream (a run of `taken`): the instructions that leave their place and those deleted
    // (both sorted, as `taken` is by from), and the changed ones.
    struct PerStream {
        std::uint32_t stream;
        std::vector<std::uint64_t> deleted, changed_place;  // sorted
    };
    std::vector<PerStream> per;
    std::vector<std::uint64_t> gone;
    struct Insert {
        std::uint64_t at, rank, from;
    };
    std::vector<Insert> before;
    for (std::size_t a = 0; a < taken.size();) {
        std::size_t b = a;
        while (b < taken.size() && taken[b].stream == taken[a].stream) ++b;
        PerStream p{taken[a].stream, {}, {}};
        gone.clear();
        before.clear();
        for (std::size_t i = a; i < b; ++i) {
            gone.push_back(taken[i].from);
            if (taken[i].before == Move::kDelete) p.deleted.push_back(taken[i].from);
            else before.push_back({taken[i].before, taken[i].rank, taken[i].from});
        }
        c.deleted += p.deleted.size();
        auto below = [](const std::vector<std::uint64_t>& v, std::uint64_t x) {
            return static_cast<std::uint64_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
        };
        // Position in the patched stream among the instructions that are not deleted, against the
        // position in the original among the same instructions. In front of one index, moved
        // instructions go in rank order, then program order.
        std::sort(before.begin(), before.end(), [](const Insert& x, const Insert& y) {
            return x.at != y.at ? x.at < y.at : x.rank != y.rank ? x.rank < y.rank : x.from < y.from;
        });
        std::uint64_t inserted_before = 0;  // moved instructions put in front of an earlier index
        for (std::size_t i = 0; i < before.size();) {
            std::size_t j = i;
            while (j < before.size() && before[j].at == before[i].at) ++j;
            const std::uint64_t base = before[i].at - below(gone, before[i].at) + inserted_before;
            for (std::size_t k = i; k < j; ++k) {
                const std::uint64_t from = before[k].from;
                if (base + (k - i) != from - below(p.deleted, from)) p.changed_place.push_back(from);
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
