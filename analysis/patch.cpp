#include "analysis/patch.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "traces/trace_writer.h"

namespace xpu::analysis {

PatchCount count_changes(const RunData& run, const Suggestion& s) {
    PatchCount c;
    struct PerStream {
        std::vector<std::uint64_t> gone, deleted;                                       // sorted
        std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> before;  // at -> (rank, from)
        std::set<std::uint64_t> seen;
    };
    std::map<std::uint32_t, PerStream> per;
    for (const Move& m : s.moves) {
        if (m.stream >= run.streams.size() || m.from >= run.streams[m.stream].code.size()) continue;
        PerStream& p = per[m.stream];
        if (!p.seen.insert(m.from).second) continue;  // the first move of an instruction counts (as the patch applies it)
        p.gone.push_back(m.from);
        if (m.before == Move::kDelete) p.deleted.push_back(m.from);
        else p.before[m.before].push_back({m.rank, m.from});
    }
    std::map<std::uint32_t, std::set<std::uint64_t>> changed_place;
    for (auto& [stream, p] : per) {
        std::sort(p.gone.begin(), p.gone.end());
        std::sort(p.deleted.begin(), p.deleted.end());
        c.deleted += p.deleted.size();
        auto below = [](const std::vector<std::uint64_t>& v, std::uint64_t x) {
            return static_cast<std::uint64_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
        };
        // Position in the patched stream among the instructions that are not deleted, against the
        // position in the original among the same instructions.
        std::uint64_t inserted_before = 0;  // moved instructions put in front of an earlier index
        for (auto& [at, v] : p.before) {
            std::sort(v.begin(), v.end());
            const std::uint64_t base = at - below(p.gone, at) + inserted_before;
            for (std::size_t k = 0; k < v.size(); ++k) {
                const std::uint64_t from = v[k].second;
                if (base + k != from - below(p.deleted, from)) changed_place[stream].insert(from);
            }
            inserted_before += v.size();
        }
        c.moved += changed_place[stream].size();
    }
    std::set<std::pair<std::uint32_t, std::uint64_t>> edited;
    for (const Edit& e : s.edits) {
        if (!edited.insert({e.stream, e.index}).second) continue;
        auto p = per.find(e.stream);
        if (p != per.end() && std::binary_search(p->second.deleted.begin(), p->second.deleted.end(), e.index)) continue;
        auto ch = changed_place.find(e.stream);
        if (ch != changed_place.end() && ch->second.count(e.index)) continue;
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
    return out.empty() ? "no instruction changes" : out;
}

PatchCount write_patched_trace(const RunData& run, const Suggestion& s, const std::string& path) {
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
    try {
        trace::TraceWriter w(path);
        std::vector<std::uint32_t> ann(run.strings.size());
        for (std::size_t i = 0; i < run.strings.size(); ++i) ann[i] = w.add_string(run.strings[i]);
        for (std::size_t si = 0; si < run.streams.size(); ++si) {
            const Stream& st = run.streams[si];
            const std::size_t out = w.add_stream(st.chip, st.core);
            const auto& ed = edited[si];
            auto put = [&](Instruction in) {
                if (in.has(kAnn) && in.ann < ann.size()) in.ann = ann[in.ann];
                w.append(out, in);
            };
            auto emit = [&](std::uint64_t i) {
                auto e = ed.find(i);
                if (e == ed.end()) return put(st.code[i]);
                put(e->second->in);
                for (const Instruction& more : e->second->then) put(more);
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
        w.close();
    } catch (const trace::TraceError& e) {
        throw std::runtime_error(e.what());
    }
    return count_changes(run, s);
}

}  // namespace xpu::analysis
