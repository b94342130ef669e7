#include "analysis/patch.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "traces/trace_writer.h"

namespace xpu::analysis {

std::size_t write_patched_trace(const RunData& run, const Suggestion& s, const std::string& path) {
    // Per stream: which instructions leave their place, and what goes in front of each index.
    std::vector<std::vector<bool>> gone(run.streams.size());
    std::vector<std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>> before(run.streams.size());  // (rank, from)
    std::size_t changed = 0;
    for (const Move& m : s.moves) {
        if (m.stream >= run.streams.size() || m.from >= run.streams[m.stream].code.size())
            throw std::runtime_error("suggestion moves an instruction that is not in the trace");
        auto& g = gone[m.stream];
        if (g.empty()) g.assign(run.streams[m.stream].code.size(), false);
        if (g[m.from]) continue;
        g[m.from] = true;
        ++changed;
        if (m.before != Move::kDelete) before[m.stream][m.before].push_back({m.rank, m.from});
    }
    // Edits: the instruction's new fields, wherever it ends up (same index of the original).
    std::vector<std::map<std::uint64_t, const Edit*>> edited(run.streams.size());
    for (const Edit& e : s.edits) {
        if (e.stream >= run.streams.size() || e.index >= run.streams[e.stream].code.size())
            throw std::runtime_error("suggestion edits an instruction that is not in the trace");
        const bool moved = !gone[e.stream].empty() && gone[e.stream][e.index];
        if (edited[e.stream].emplace(e.index, &e).second && !moved) ++changed;  // counted once
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
    return changed;
}

}  // namespace xpu::analysis
