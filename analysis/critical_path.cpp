// The critical path: from the event that ends the run, walk back along whatever made each
// event as late as it was (the binding constraint of the stall split), to time 0. Each step
// is a node (an instruction issuing or executing, a DMA queued or transferring) and the cause
// of its edge. Runs of instructions that simply issued in order are merged into one step.
#include <algorithm>
#include <map>

#include "analysis/context.h"

namespace xpu::analysis {

namespace {

enum class At { Issue, Complete, DmaDone };

struct Walker {
    const Context& cx;
    Analysis& a;
    std::size_t keep;  // steps held with their text (the latest); the rest counted (AnalyzeOptions)
    std::vector<std::vector<std::uint32_t>> by_engine;  // DMA records per engine, by start
    Tick cur = 0;  // how far back the chain has been followed: steps tile [0, end], latest first
    bool in_order_run_ = false;  // the last step is an "issued in order" one
    bool merged_ = false;        // ... into which earlier instructions were merged, the first being:
    std::pair<std::uint32_t, std::uint64_t> run_first_{0, 0};
    // The last step when it is past `keep` (counted, not held): its cause and time, added to
    // critical_by_cause once no merge can lengthen it any more.
    bool last_counted_ = false;
    Cause last_cause_ = Cause::Busy;
    Tick last_begin_ = 0, last_end_ = 0;

    // A step begins at `b` and ends where the later step began (`cur`): steps tile the run. It
    // reaches up to the later step (a DMA queued behind another finished before the later one
    // started: that gap is still its wait), and covers only time no later step covers (a
    // producer may complete after its consumer's stall began: the overlap is the later step's).
    // Sets [b, e]; false if nothing is left.
    bool clip(Tick& b, Tick& e) {
        e = cur;
        b = std::min(b, e);
        cur = b;
        return e > b;
    }

    // Ends the last step (its time goes to its cause) and starts a new one: held with its text
    // while fewer than `keep` are, else counted. `node` and `edge` make the texts (only when held:
    // a 100 M-instruction GEMM's path has 9.3 M steps, two strings each).
    template <class Node, class Edge>
    void add(const Node& node, const Edge& edge, Cause c, Tick b, Tick e) {
        settle_last();
        ++a.critical_path_steps;
        if (a.critical_path.size() < keep) {
            a.critical_path.push_back({node(), edge(), c, b, e});
            return;
        }
        last_counted_ = true;
        last_cause_ = c;
        last_begin_ = b;
        last_end_ = e;
    }
    void settle_last() {
        if (last_counted_) a.critical_by_cause[static_cast<std::size_t>(last_cause_)] += last_end_ - last_begin_;
        last_counted_ = false;
    }

    template <class Node, class Edge>
    void step(const Node& node, const Edge& edge, Cause c, Tick b) {
        Tick e = 0;
        if (!clip(b, e)) return;
        end_in_order_run();
        add(node, edge, c, b, e);
    }
    void step(const char* node, const char* edge, Cause c, Tick b) {
        step([&] { return std::string(node); }, [&] { return std::string(edge); }, c, b);
    }

    // Instruction i of stream s issued in order after its predecessor: merged with the step
    // before (later in time) if that is one too and begins where this one ends, into one step
    // "chipC.coreK #FIRST .. NODE OF THE LAST". While the walk goes back only FIRST changes, so
    // the merged node's text is written once, when the run of merges ends.
    void in_order(std::uint32_t s, std::uint64_t i, Tick b) {
        Tick e = 0;
        if (!clip(b, e)) return;
        Tick* last_begin = !in_order_run_ ? nullptr : last_counted_ ? &last_begin_ : &a.critical_path.back().begin;
        if (last_begin && *last_begin == e) {
            *last_begin = b;
            run_first_ = {s, i};
            merged_ = true;
            return;
        }
        end_in_order_run();
        add([&] { return short_node(s, i); }, [] { return std::string("issued in order"); }, Cause::Busy, b, e);
        in_order_run_ = true;
    }

    void end_in_order_run() {
        if (in_order_run_ && merged_ && !last_counted_) {
            std::string& node = a.critical_path.back().node;
            const auto p = node.find(" .. ");  // (in an annotation: the text after it is kept, as ever)
            node = cx.run.streams[run_first_.first].label() + " #" + std::to_string(run_first_.second) + " .. " +
                   (p == std::string::npos ? node : node.substr(p + 4));
        }
        in_order_run_ = merged_ = false;
    }

    std::string short_node(std::uint32_t s, std::uint64_t i) const {
        const RunData& run = cx.run;
        const Instruction& in = run.streams[s].code[i];
        std::string t = run.streams[s].label() + " #" + std::to_string(i) + " " + std::string(mnemonic(in.op));
        const std::string ann = run.annotation(in);
        if (!ann.empty()) t += " [" + ann + "]";
        return t;
    }

    void run() {
        const RunData& run = cx.run;
        by_engine.resize(run.units.size());
        for (std::uint32_t d = 0; d < run.dmas.size(); ++d) by_engine[run.dmas[d].engine].push_back(d);
        for (auto& v : by_engine)
            std::stable_sort(v.begin(), v.end(), [&](std::uint32_t x, std::uint32_t y) { return run.dmas[x].start < run.dmas[y].start; });

        // The last event of the run.
        At at = At::Complete;
        std::uint32_t s = kNone, dma = kNone;
        std::uint64_t i = 0;
        Tick last = 0;
        for (std::uint32_t k = 0; k < run.streams.size(); ++k)
            for (std::uint64_t j = 0; j < run.streams[k].life.size(); ++j)
                if (run.streams[k].life[j].seen && run.streams[k].life[j].complete >= last) {
                    last = run.streams[k].life[j].complete;
                    s = k;
                    i = j;
                }
        for (std::uint32_t d = 0; d < run.dmas.size(); ++d)
            if (run.dmas[d].complete > last) {
                last = run.dmas[d].complete;
                at = At::DmaDone;
                dma = d;
            }
        if (s == kNone && dma == kNone) return;
        cur = run.end;
        if (last < run.end) step("end of the run", "the last event of the run", Cause::Idle, last);

        std::size_t budget = 4 * (a.instructions + run.dmas.size()) + 16;
        while (budget--) {
            if (at == At::DmaDone) {
                const Dma& d = run.dmas[dma];
                const auto node = [&] { return "DMA of " + short_node(d.stream, d.index) + " on " + run.units[d.engine].path; };
                step(node, [&] { return "transfer of " + std::to_string(d.bytes) + " bytes"; }, transfer_cause(cx.ix, d), d.start);
                // Queued behind another DMA on its engine, or waiting only for its own issue?
                const auto& v = by_engine[d.engine];
                auto it = std::lower_bound(v.begin(), v.end(), dma, [&](std::uint32_t x, std::uint32_t y) {
                    return run.dmas[x].start < run.dmas[y].start || (run.dmas[x].start == run.dmas[y].start && x < y);
                });
                std::uint32_t prev = kNone;
                if (it != v.end() && it != v.begin()) prev = *(it - 1);
                if (prev != kNone && run.dmas[prev].complete > d.issue && d.start > d.issue && run.dmas[prev].start < d.start) {
                    step(node, [&] { return "queued behind the DMA of " + short_node(run.dmas[prev].stream, run.dmas[prev].index); }, Cause::UnitBusy, d.issue);
                    dma = prev;
                    continue;
                }
                if (d.start > d.issue) step(node, [] { return std::string("engine setup"); }, Cause::UnitBusy, d.issue);
                s = d.stream;
                i = d.index;
                at = At::Issue;
                continue;
            }
            const Stream& st = run.streams[s];
            const Life& l = st.life[i];
            const auto at_node = [&] { return short_node(s, i); };
            if (at == At::Complete) {
                const std::uint32_t op = cx.ix.op_of(s, i);
                if (op != kNone) {
                    const UnitOp& o = run.unit_ops[op];
                    step(at_node, [&] { return "executes on " + run.units[o.unit].path; }, Cause::Busy, o.start);
                    if (o.start > l.issue)
                        step(at_node, [&] { return "waits inside " + run.units[o.unit].path + " for its operands or pipeline"; }, Cause::DataDep, l.issue);
                } else if (l.complete > l.issue) {
                    step(at_node, [] { return std::string("executes"); }, Cause::Busy, l.issue);
                }
                at = At::Issue;
                continue;
            }
            // At::Issue: what held this instruction's issue back?
            const Tick t0 = could_issue(cx.ix, s, i);
            const StallSplit sp = split_stall(cx.ix, s, i, t0);
            if (sp.n == 0) {
                if (i == 0) {
                    if (l.issue > 0) step(at_node, [] { return std::string("first instruction"); }, Cause::Supply, 0);
                    break;
                }
                in_order(s, i, st.life[i - 1].issue);
                --i;
                continue;
            }
            const Piece& p = sp.pieces[sp.n - 1];
            const Tick b = sp.pieces[0].begin;
            if (p.cause == Cause::DataDep) {
                const std::uint64_t prod = producer_of(run, s, i);
                if (prod != kNoInstr) {
                    step(at_node, [&] { return "data dependency on #" + std::to_string(prod); }, Cause::DataDep, b);
                    i = prod;
                    at = At::Complete;
                    continue;
                }
            }
            if (sp.raiser_dma != kNone) {
                step(at_node, [&] { return "waits for flag " + std::to_string(st.code[i].flag) + ", raised by the DMA"; }, p.cause, b);
                dma = sp.raiser_dma;
                at = At::DmaDone;
                continue;
            }
            if (sp.raise != kNone && run.flags[sp.raise].by_stream != kNone && (run.flags[sp.raise].by_stream != s || run.flags[sp.raise].by_index < i)) {
                const FlagChange& fc = run.flags[sp.raise];
                step(at_node, [&] { return "waits for flag " + std::to_string(st.code[i].flag) + ", set by " + short_node(fc.by_stream, fc.by_index); },
                     Cause::SyncWait, b);
                s = fc.by_stream;
                i = fc.by_index;
                at = At::Issue;
                continue;
            }
            step(at_node, [&] { return std::string(cause_name(p.cause)); }, p.cause, b);
            if (i == 0) break;
            in_order(s, i - 1, st.life[i - 1].issue);
            --i;
        }
        if (cur > 0) step("start of the run", "before the first event on the path", Cause::Supply, 0);
        end_in_order_run();
        settle_last();
        for (const PathStep& ps : a.critical_path) a.critical_by_cause[static_cast<std::size_t>(ps.cause)] += ps.end - ps.begin;
    }
};

}  // namespace

void find_critical_path(const Context& cx, Analysis& a, std::size_t keep) {
    Walker w{cx, a, keep, {}};
    w.run();
    a.critical_path.shrink_to_fit();  // grown by doubling, held to the end of the analysis
}

}  // namespace xpu::analysis
