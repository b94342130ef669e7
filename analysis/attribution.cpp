#include "analysis/attribution.h"

#include <algorithm>

#include "traces/issue_stall.h"

namespace xpu::analysis {

Tick StallSplit::total() const {
    Tick t = 0;
    for (int i = 0; i < n; ++i) t += pieces[i].end - pieces[i].begin;
    return t;
}

Cause transfer_cause(const RunIndex& ix, const Dma& d) {
    const Stream& st = ix.run().streams[d.stream];
    const Instruction& in = st.code[d.index];
    if (ix.dma_remote(in, st.chip)) return Cause::Link;
    if (in.mem_src.space == Space::Hbm || in.mem_dst.space == Space::Hbm) return Cause::Hbm;
    return Cause::Vmem;
}

Tick could_issue(const RunIndex& ix, std::uint32_t stream, std::uint64_t index) {
    const Stream& st = ix.run().streams[stream];
    if (index == 0) return 0;
    const Tick t = st.life[index - 1].issue + ix.issue_slot(stream);
    return std::min(t, st.life[index].issue);
}

StallSplit split_stall(const RunIndex& ix, std::uint32_t stream, std::uint64_t index, Tick t0) {
    const RunData& run = ix.run();
    const Stream& st = run.streams[stream];
    const Life& l = st.life[index];
    const Instruction& in = st.code[index];
    StallSplit s;
    const Tick end = std::max(l.issue, t0);
    auto add = [&](Tick b, Tick e, Cause c) {
        b = std::clamp(b, t0, end);
        e = std::clamp(e, b, end);
        if (e > b) s.pieces[s.n++] = {b, e, c};
    };
    // Supply, then operands (the rule the waveforms' stall signal uses too); what follows
    // (acceptance) is refined below.
    trace::IssueGap gap[3];
    const int ng = trace::split_issue_gap(t0, l.arrival, l.ready, l.issue, gap);
    Tick r = end;
    for (int k = 0; k < ng; ++k) {
        if (gap[k].why == trace::IssueWait::Acceptance) {
            r = gap[k].begin;
            break;
        }
        add(gap[k].begin, gap[k].end, gap[k].why == trace::IssueWait::Supply ? Cause::Supply : Cause::DataDep);
    }
    if (r >= end) return s;
    if (in.op == Opcode::SWait) {
        s.raise = ix.satisfying_raise(stream, index);
        if (s.raise != kNone) {
            const FlagChange& fc = run.flags[s.raise];
            if (fc.by_stream != kNone) s.raiser_dma = ix.dma_of(fc.by_stream, fc.by_index);
        }
        if (s.raiser_dma != kNone) {
            const Dma& d = run.dmas[s.raiser_dma];
            add(r, d.issue, Cause::SyncWait);
            add(std::max(r, d.issue), d.start, Cause::UnitBusy);
            add(std::max({r, d.issue, d.start}), end, transfer_cause(ix, d));
        } else {
            add(r, end, Cause::SyncWait);
        }
    } else if (in.op == Opcode::Barrier || in.op == Opcode::SSet || in.op == Opcode::SAdd) {
        add(r, end, Cause::SyncWait);
    } else {
        add(r, end, Cause::UnitBusy);
    }
    return s;
}

std::uint64_t producer_of(const RunData& run, std::uint32_t stream, std::uint64_t index) {
    const Stream& st = run.streams[stream];
    const Instruction& in = st.code[index];
    std::uint8_t srcs[3];
    int ns = 0;
    if (in.has(kSrc0)) srcs[ns++] = in.src[0];
    if (in.has(kSrc1)) srcs[ns++] = in.src[1];
    if (in.has(kSrc2)) srcs[ns++] = in.src[2];
    const bool has_dst = in.has(kDst);
    bool found[3] = {false, false, false};
    std::uint64_t best = kNoInstr;
    Tick best_t = 0;
    // Producers are near: a register written further back than this has long completed
    // (thousands of issue slots), and the reader of a WAR is nearer still.
    const std::uint64_t limit = index > 4096 ? index - 4096 : 0;
    int left = ns;
    bool war_found = !has_dst;
    for (std::uint64_t j = index; j-- > limit && (left > 0 || (!war_found && index - j <= 256));) {
        const Instruction& p = st.code[j];
        if (p.has(kDst))
            for (int k = 0; k < ns; ++k)
                if (!found[k] && p.dst == srcs[k]) {
                    found[k] = true;
                    --left;
                    if (st.life[j].complete >= best_t) {
                        best_t = st.life[j].complete;
                        best = j;
                    }
                }
        if (!war_found && ((p.has(kSrc0) && p.src[0] == in.dst) || (p.has(kSrc1) && p.src[1] == in.dst) ||
                           (p.has(kSrc2) && p.src[2] == in.dst))) {
            war_found = true;
            if (best == kNoInstr) best = j;  // a reader still holding the destination register (WAR)
        }
    }
    return best;
}

}  // namespace xpu::analysis
