// analyze(): the core pass (stall attribution per instruction, roll-ups), the unit pass (every
// unit's time tiled by cause), DMA views and time series; then critical path and suggestions.
// The passes that do not depend on each other run on two threads (see analyze() at the end).
#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <queue>
#include <sstream>
#include <stdexcept>

#include "analysis/beside.h"
#include "analysis/bounds.h"
#include "analysis/chain_bound.h"
#include "analysis/context.h"
#include "analysis/intervals.h"
#include "analysis/large_array.h"
#include "analysis/names.h"
#include "traces/mostly_sorted.h"
#include "traces/trace_text.h"
#include "traces/vmem_liveness.h"

namespace xpu::analysis {

const char* cause_name(Cause c) {
    switch (c) {
        case Cause::Busy: return "busy";
        case Cause::Supply: return "instruction supply";
        case Cause::DataDep: return "data dependency";
        case Cause::UnitBusy: return "unit busy";
        case Cause::SyncWait: return "sync-flag wait";
        case Cause::Hbm: return "HBM bandwidth/queueing";
        case Cause::Link: return "inter-chip link";
        case Cause::Vmem: return "VMEM port";
        case Cause::Idle: return "idle";
    }
    return "?";
}

const char* cause_key(Cause c) {
    switch (c) {
        case Cause::Busy: return "busy";
        case Cause::Supply: return "instruction_supply";
        case Cause::DataDep: return "data_dependency";
        case Cause::UnitBusy: return "unit_busy";
        case Cause::SyncWait: return "sync_wait";
        case Cause::Hbm: return "hbm";
        case Cause::Link: return "link";
        case Cause::Vmem: return "vmem";
        case Cause::Idle: return "idle";
    }
    return "?";
}

Tick Rollup::total() const {
    Tick t = 0;
    for (Tick v : time) t += v;
    return t;
}

std::string describe(const RunData& run, std::uint32_t stream, std::uint64_t index) {
    const Stream& st = run.streams[stream];
    std::ostringstream os;
    os << st.label() << " #" << index;
    if (index < st.code.size()) {
        Instruction in = st.code[index];
        const std::string ann = run.annotation(in);
        in.present = static_cast<std::uint16_t>(in.present & ~(kAnn | kTimestamp));
        os << " " << trace::format_instruction(in);
        if (!ann.empty()) os << " [" << ann << "]";
    }
    return os.str();
}

namespace {

const std::string kNoString;

void push_segment(std::vector<Segment>& v, Tick b, Tick e, Cause c) {
    if (e <= b) return;
    if (e > Segment::kMaxTime)
        throw LogError("the run's log has a time of " + std::to_string(e) + " ps, past the 2^56 ps (about 20 hours of simulated time) the analysis holds");
    if (!v.empty() && v.back().cause == c && v.back().end == b) {
        v.back().end = e;
        return;
    }
    append_large(v, Segment{b, e, c});
}

// A timeline being built and its time per cause, summed as segments are added (rather than
// again over its millions of segments afterwards). `busy_only`: of the segments, only the busy
// ones are kept (a unit other than a core: UnitAccount::timeline).
struct Tiling {
    std::vector<Segment>& segments;
    CauseTimes& time;
    bool busy_only = false;
    void add(Tick b, Tick e, Cause c) {
        if (e <= b) return;
        time[static_cast<std::size_t>(c)] += e - b;
        if (!busy_only || c == Cause::Busy) push_segment(segments, b, e, c);
    }
};

// The module of role `role` beside a stream's core (the core itself, its Vmem), found by the
// hierarchy name (xpu.chipC.coreK...); nullptr if the header lists none.
const Unit* unit_of_core(const RunData& run, const Stream& st, Role role) {
    const std::string core = ".core" + std::to_string(st.core) + ".";
    const Unit* found = nullptr;
    for (const auto& u : run.units)
        if (u.role == role && u.chip == st.chip && u.path.find(core) != std::string::npos) found = &u;
    return found;
}

std::string layer_of(const std::string& ann) {
    if (ann.empty()) return "(no annotation)";
    const auto p = ann.find('/');
    return p == std::string::npos ? ann : ann.substr(0, p);
}

std::string why(const Context& cx, std::uint32_t s, std::uint64_t i, const StallSplit& sp) {
    const RunData& run = cx.run;
    std::ostringstream os;
    CauseTimes by{};
    for (int k = 0; k < sp.n; ++k) by[static_cast<std::size_t>(sp.pieces[k].cause)] += sp.pieces[k].end - sp.pieces[k].begin;
    const Instruction& in = run.streams[s].code[i];
    const char* sep = "";
    if (by[static_cast<std::size_t>(Cause::DataDep)]) {
        const std::uint64_t p = producer_of(run, s, i);
        os << sep << "data dependency on " << (p == kNoInstr ? std::string("an earlier instruction") : "#" + std::to_string(p) + " (" + std::string(mnemonic(run.streams[s].code[p].op)) + ")");
        sep = "; ";
    }
    if (in.op == Opcode::SWait) {
        os << sep << "waits for flag " << in.flag;
        if (sp.raise != kNone) {
            const FlagChange& fc = run.flags[sp.raise];
            if (sp.raiser_dma != kNone) {
                const Dma& d = run.dmas[sp.raiser_dma];
                os << ", raised by the DMA " << describe(run, d.stream, d.index) << " on " << run.units[d.engine].path;
            } else if (fc.by_stream != kNone) {
                os << ", raised by " << describe(run, fc.by_stream, fc.by_index);
            }
        }
        sep = "; ";
    } else if (by[static_cast<std::size_t>(Cause::UnitBusy)]) {
        const std::uint32_t op = cx.ix.op_of(s, i);
        os << sep << "unit busy: " << (op != kNone ? run.units[run.unit_ops[op].unit].path : std::string(mnemonic(in.op)) + " unit") << " queue full";
        sep = "; ";
    }
    if (by[static_cast<std::size_t>(Cause::Supply)]) os << sep << "instruction supply";
    return os.str();
}

// Largest first; ties in natural order of the key (layer2 before layer10).
void sort_rollups(std::vector<Rollup>& v) {
    std::sort(v.begin(), v.end(), [](const Rollup& x, const Rollup& y) {
        const Tick tx = x.total(), ty = y.total();
        return tx != ty ? tx > ty : natural_less(x.key, y.key);
    });
}

// The ops of every layer added up: "layer3/attn/qkv_proj/load_b" counts for
// "layer*/attn/qkv_proj/load_b" (analysis/names.h), `layers` the number of ops it adds up.
std::vector<Rollup> merge_layers(const std::vector<Rollup>& by_op) {
    std::map<std::string, Rollup> m;
    for (const Rollup& r : by_op) {
        auto [it, fresh] = m.emplace(layer_pattern(r.key), r);
        if (fresh) continue;  // keeps its own key while it is alone (a pattern of one op shows the op)
        Rollup& x = it->second;
        x.instructions += r.instructions;
        for (std::size_t c = 0; c < kCauses; ++c) x.time[c] += r.time[c];
        ++x.layers;
    }
    std::vector<Rollup> out;
    out.reserve(m.size());
    for (auto& [k, r] : m) {
        if (r.layers > 1) r.key = k;
        out.push_back(std::move(r));
    }
    sort_rollups(out);
    return out;
}

struct StallLess {
    bool operator()(const Stall& a, const Stall& b) const { return a.total > b.total; }  // min-heap
};

// The core pass: every stream's time, instruction by instruction.
void core_pass(Context& cx, Analysis& a, const AnalyzeOptions& opt) {
    const RunData& run = cx.run;
    cx.core_segments.resize(run.streams.size());
    cx.core_time.assign(run.streams.size(), CauseTimes{});
    cx.dma_caused.assign(run.dmas.size(), 0);
    std::map<std::string, Rollup> by_ann, by_layer, by_chip;
    std::priority_queue<Stall, std::vector<Stall>, StallLess> top;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        std::vector<Segment>& seg = cx.core_segments[s];
        const Tick slot = cx.ix.issue_slot(s);
        Rollup& chip = by_chip["chip" + std::to_string(st.chip)];
        chip.key = "chip" + std::to_string(st.chip);
        // About two segments per instruction (its stall, its issue slot).
        reserve_large(seg, 2 * st.code.size() + 1);
        Tiling core{seg, cx.core_time[s]};
        Tick t0 = 0;
        // The annotation's id, compared per instruction (ids of equal strings find the same
        // roll-ups: only cheaper than comparing the strings).
        std::uint32_t last_ann = kNone;
        Rollup* ann_r = nullptr;
        Rollup* layer_r = nullptr;
        std::uint64_t i = 0;
        for (; i < st.code.size() && st.life[i].seen; ++i) {
            const Life& l = st.life[i];
            const StallSplit sp = split_stall(cx.ix, s, i, t0);
            const Tick issue = std::max(l.issue, t0);
            const std::uint32_t ann_id = st.code[i].has(kAnn) && st.code[i].ann < run.strings.size() ? st.code[i].ann : kNone;
            if (ann_id != last_ann || !ann_r) {
                last_ann = ann_id;
                const std::string& ann = ann_id == kNone ? kNoString : run.strings[ann_id];
                const std::string key = ann.empty() ? "(no annotation)" : ann;
                ann_r = &by_ann[key];
                ann_r->key = key;
                const std::string lk = layer_of(ann);
                layer_r = &by_layer[lk];
                layer_r->key = lk;
            }
            Tick total = 0;
            for (int k = 0; k < sp.n; ++k) {
                const Piece& p = sp.pieces[k];
                core.add(p.begin, p.end, p.cause);
                const Tick d = p.end - p.begin;
                total += d;
                const auto c = static_cast<std::size_t>(p.cause);
                ann_r->time[c] += d;
                layer_r->time[c] += d;
                chip.time[c] += d;
                a.core_total[c] += d;
            }
            if (sp.raiser_dma != kNone) {
                Tick w = 0;
                for (int k = 0; k < sp.n; ++k)
                    if (sp.pieces[k].cause != Cause::Supply && sp.pieces[k].cause != Cause::DataDep) w += sp.pieces[k].end - sp.pieces[k].begin;
                cx.dma_caused[sp.raiser_dma] += w;
            }
            if (st.code[i].op == Opcode::SWait && total > 0) {
                WaitStall w;
                w.stream = s;
                w.index = i;
                for (int k = 0; k < sp.n; ++k)
                    if (sp.pieces[k].cause != Cause::Supply && sp.pieces[k].cause != Cause::DataDep) w.stall += sp.pieces[k].end - sp.pieces[k].begin;
                w.raise = sp.raise;
                w.raiser_dma = sp.raiser_dma;
                if (w.stall) cx.waits.push_back(w);
            }
            if (total > 0 && (top.size() < opt.top_stalls || total > top.top().total)) {
                Stall x;
                x.stream = s;
                x.index = i;
                x.total = total;
                for (int k = 0; k < sp.n; ++k) x.by[static_cast<std::size_t>(sp.pieces[k].cause)] += sp.pieces[k].end - sp.pieces[k].begin;
                x.why = why(cx, s, i, sp);
                top.push(std::move(x));
                if (top.size() > opt.top_stalls) top.pop();
            }
            // The issue slot: busy, unless the next instruction issues sooner (then it is cut).
            Tick busy_end = issue + slot;
            if (i + 1 < st.code.size() && st.life[i + 1].seen) busy_end = std::min(busy_end, std::max(st.life[i + 1].issue, issue));
            busy_end = std::min(busy_end, std::max(run.end, issue));
            core.add(issue, busy_end, Cause::Busy);
            const Tick b = busy_end - issue;
            ann_r->time[0] += b;
            layer_r->time[0] += b;
            chip.time[0] += b;
            a.core_total[0] += b;
            ++ann_r->instructions;
            ++layer_r->instructions;
            ++chip.instructions;
            t0 = busy_end;
        }
        a.instructions += i;
        // After the last issued instruction: draining (idle), or blocked if the run stopped
        // with this stream unfinished (deadlock, time limit).
        const Tick end = std::max(run.end, t0);
        Cause tail = Cause::Idle;
        if (i < st.code.size()) {
            const Opcode op = st.code[i].op;
            tail = op == Opcode::SWait || op == Opcode::Barrier ? Cause::SyncWait : Cause::UnitBusy;
        }
        core.add(t0, end, tail);
        chip.time[static_cast<std::size_t>(tail)] += end - t0;
        a.core_total[static_cast<std::size_t>(tail)] += end - t0;
    }
    for (auto* m : {&by_ann, &by_layer, &by_chip}) {
        std::vector<Rollup>& out = m == &by_ann ? a.by_op : m == &by_layer ? a.by_layer : a.by_chip;
        for (auto& [k, r] : *m) out.push_back(r);
        if (m != &by_chip) sort_rollups(out);
        else std::sort(out.begin(), out.end(), [](const Rollup& x, const Rollup& y) { return natural_less(x.key, y.key); });
    }
    a.by_op_merged = merge_layers(a.by_op);
    while (!top.empty()) {
        a.top_stalls.push_back(top.top());
        top.pop();
    }
    std::reverse(a.top_stalls.begin(), a.top_stalls.end());
}

// The first segment of a tiling that ends after t. `hint`: a segment every one before which
// ends at or before t (the previous answer, for callers whose t never decreases): the search
// gallops forward from there, amortised constant time instead of a binary search over the
// millions of segments of a core.
std::size_t first_ending_after(const std::vector<Segment>& seg, Tick t, std::size_t hint) {
    if (hint > seg.size() || (hint > 0 && seg[hint - 1].end > t)) hint = 0;  // t went back
    std::size_t lo = hint, step = 1;
    while (lo < seg.size() && seg[lo].end <= t) {
        const std::size_t probe = std::min(seg.size(), lo + step);
        if (seg[probe - 1].end > t)
            return static_cast<std::size_t>(std::upper_bound(seg.begin() + static_cast<std::ptrdiff_t>(lo), seg.begin() + static_cast<std::ptrdiff_t>(probe), t,
                                                             [](Tick x, const Segment& g) { return x < g.end; }) -
                                            seg.begin());
        lo = probe;
        step *= 2;
    }
    return lo;
}

// core_labels, starting the search at `hint` (updated).
void core_labels_from(const Context& cx, std::uint32_t stream, Tick b, Tick e, Tiling& out, std::size_t& hint) {
    if (e <= b) return;
    const auto& seg = cx.core_segments[stream];
    hint = first_ending_after(seg, b, hint);
    Tick at = b;
    for (auto it = seg.begin() + static_cast<std::ptrdiff_t>(hint); it != seg.end() && at < e; ++it) {
        const Tick sb = std::max(at, it->begin), se = std::min(e, it->end);
        if (sb > at) out.add(at, sb, Cause::Idle);  // (no core segment: cannot happen, tiles)
        // A unit waits for what its core waits for; while the core issues other work, the
        // unit simply has none (idle).
        const Cause c = it->cause == Cause::Busy ? Cause::Idle : it->cause;
        if (se > sb) out.add(sb, se, c);
        at = std::max(at, se);
    }
    if (at < e) out.add(at, e, Cause::Idle);
}

}  // namespace

void core_labels(const Context& cx, std::uint32_t stream, Tick b, Tick e, std::vector<Segment>& out) {
    CauseTimes unused{};
    Tiling t{out, unused};
    std::size_t hint = 0;
    core_labels_from(cx, stream, b, e, t, hint);
}

namespace {

// Every unit's time tiled: busy (union of its operations), and between operations whatever
// held its next operation back: its core's state before the core issued it, a dependency
// inside the unit after.
struct Work {
    Tick issue = 0, start = 0, end = 0;
    std::uint32_t stream = 0;
};

// A unit's operations in start order (a stable sort of the log's order). The log lists them
// nearly in that order already (about 1% are not): those in order are kept as they come, the
// others set aside and sorted, and the two are merged as they are visited (kept first on
// ties: stable, see traces/mostly_sorted.h), which spares a pass over millions of them.
struct WorkInOrder {
    std::vector<Work> kept, aside;

    void clear() {
        kept.clear();
        aside.clear();
    }
    void add(const Work& w) {
        if (kept.empty() || w.start >= kept.back().start) kept.push_back(w);
        else aside.push_back(w);
    }
    void sort() {
        std::stable_sort(aside.begin(), aside.end(), [](const Work& x, const Work& y) { return x.start < y.start; });
    }
    template <class F>
    void for_each(F&& f) const {
        std::size_t i = 0, j = 0;
        while (i < kept.size() || j < aside.size()) {
            if (i == kept.size() || (j < aside.size() && aside[j].start < kept[i].start)) f(aside[j++]);
            else f(kept[i++]);
        }
    }
};

// Walks a unit's operations in start order and tiles its time: gap(stream, from, issued,
// gap_end) for the time before an operation ([from, issued]: its core had not issued it yet;
// [issued, gap_end]: issued, waiting inside the unit), busy(from, to) for its execution.
// Returns how far it tiled (the rest, to the end of the run, is idle).
template <class Gap, class Busy>
Tick walk_unit(const RunData& run, const WorkInOrder& work, Gap&& gap, Busy&& busy) {
    const Tick end = run.end;
    Tick at = 0;  // tiled up to here
    work.for_each([&](const Work& w) {
        if (w.end <= at) return;  // inside the busy run already
        if (w.start > at) {
            const Tick gap_end = std::min(w.start, end);
            const Tick issued = std::clamp(w.issue, at, gap_end);
            gap(w.stream, at, issued, gap_end);
            at = gap_end;
        }
        const Tick be = std::min(w.end, end);
        if (be > at) {
            busy(at, be);
            at = be;
        }
    });
    return at;
}

// One operation of a unit, by its index in RunData: a unit op, or a DMA on an engine (kDmaRef
// set): 4 bytes an operation in the lists per unit, where its Work takes 32 (a run has about
// one per instruction). A unit's Works are gathered when it is accounted.
using OpRef = std::uint32_t;
constexpr OpRef kDmaRef = 0x80000000u;

Work work_at(const RunData& run, OpRef r) {
    if (r & kDmaRef) {
        const Dma& d = run.dmas[r & ~kDmaRef];
        return {d.issue, d.start, d.complete, d.stream};
    }
    const UnitOp& o = run.unit_ops[r];
    return {run.op_accept(r), o.start, o.end, o.stream};
}

// One unit's account from its operations (`work`: buffers the caller reuses).
UnitAccount account(const Context& cx, std::uint32_t unit, const std::vector<OpRef>& ops, WorkInOrder& work) {
    const RunData& run = cx.run;
    UnitAccount u;
    u.unit = unit;
    u.name = run.units[unit].path;
    u.kind = run.units[unit].kind;
    u.role = run.units[unit].role;
    u.chip = run.units[unit].chip;
    work.clear();
    for (const OpRef r : ops) work.add(work_at(run, r));
    work.sort();
    // Its time is tiled by cause, but only its busy segments are kept: at most one per
    // operation. The stalls between them copy its core's segments, which nothing reads but the
    // time per cause summed here; kept, they took xpu_analyze's peak on a 32-layer decode from
    // 1038 to 1270 MB (docs/analysis.md, "Speed and memory").
    std::vector<std::size_t> hint(run.streams.size(), 0);  // per stream: where the search left off
    reserve_large(u.timeline, ops.size() + 1);
    Tiling t{u.timeline, u.time, true};
    const Tick at = walk_unit(
        run, work,
        [&](std::uint32_t stream, Tick from, Tick issued, Tick gap_end) {
            core_labels_from(cx, stream, from, issued, t, hint[stream]);
            t.add(issued, gap_end, Cause::DataDep);
        },
        [&](Tick from, Tick to) { t.add(from, to, Cause::Busy); });
    t.add(at, run.end, Cause::Idle);
    return u;
}


// Busy intervals of the matrix units, per chip (merged), for DMA/compute overlap.
std::map<int, std::vector<Interval>> mxu_busy(const Analysis& a) {
    std::map<int, std::vector<Interval>> by_chip;
    for (const auto& u : a.units) {
        if (u.role != Role::Matrix) continue;
        for (const auto& s : u.timeline)
            if (s.cause == Cause::Busy) by_chip[u.chip].push_back({s.begin, s.end});
    }
    for (auto& [c, v] : by_chip) merge_intervals(v);
    return by_chip;
}

void dma_pass(Context& cx, Analysis& a) {
    const RunData& run = cx.run;
    const auto busy = mxu_busy(a);
    std::vector<std::uint32_t> order(run.dmas.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return cx.dma_caused[x] > cx.dma_caused[y]; });
    if (order.size() > 200) order.resize(200);
    for (std::uint32_t i : order) {
        const Dma& d = run.dmas[i];
        DmaView v;
        v.stream = d.stream;
        v.index = d.index;
        v.engine = run.units[d.engine].path;
        v.annotation = run.annotation(run.streams[d.stream].code[d.index]);
        v.bytes = d.bytes;
        v.earliest_issue = v.issue;  // make_suggestions sets it to its hoist point's time
        v.issue = d.issue;
        v.start = d.start;
        v.complete = d.complete;
        v.achieved_gbps = d.complete > d.start ? static_cast<double>(d.bytes) / (static_cast<double>(d.complete - d.start) / 1000.0) : 0;
        const int chip = run.streams[d.stream].chip;
        auto it = busy.find(chip);
        if (it != busy.end()) v.overlap_compute = covered(it->second, d.start, d.complete);
        v.caused_stall = cx.dma_caused[i];
        a.dmas.push_back(v);
    }
}

// The time axis of the series (run_data.h).
using Buckets = SeriesAxis;

// Never above the peak: the models' calendars carry at most peak x calendar bucket in each of
// their buckets, but a record only says when a transfer ended (a piece's drawn interval, its
// service time before that end, may overlap a neighbour's on the same channel when the calendar
// filled a gap, and an HBM piece's record runs on to its data's return); spread evenly over those
// intervals, a chart bucket shorter than a few calendar buckets could show more than the peak
// (112.6% on the quickstart's HBM chart, issue 15). What a bucket shows above `ceiling` x its
// length moved, at the peak, in the next bucket (and what would run past the end, in the
// previous ones): the series keeps every byte and never exceeds the peak.
void cap_at_peak(std::vector<double>& bytes, double ceiling_bytes) {
    if (ceiling_bytes <= 0) return;
    double carry = 0;
    for (double& x : bytes) {
        x += carry;
        carry = x > ceiling_bytes ? x - ceiling_bytes : 0;
        if (carry > 0) x = ceiling_bytes;
    }
    for (auto it = bytes.rbegin(); it != bytes.rend() && carry > 0; ++it) {
        const double take = std::min(carry, ceiling_bytes - *it);
        if (take > 0) {
            *it += take;
            carry -= take;
        }
    }
    if (carry > 0 && !bytes.empty()) bytes.back() += carry;  // more bytes than peak x run: never lose them
}

// Bandwidth of each HBM controller and link, GB/s per bucket.
// Links: a transaction's record is its serialisation on the wire. HBM: each interleave
// piece's transfer on its channel. Bytes are spread evenly over those intervals, then capped
// at the peak (cap_at_peak).
void bandwidth_series(const RunData& run, Buckets bk, std::vector<Series>& out) {
    const Tick bucket = bk.bucket;
    const std::size_t n = bk.n;
    // Per unit (in unit order, as the series are listed); empty: no traffic.
    std::vector<std::vector<double>> bytes(run.units.size());
    std::vector<char> is_link(run.units.size());
    for (std::size_t u = 0; u < run.units.size(); ++u) is_link[u] = run.units[u].role == Role::Link;
    for (const MemTxn& m : run.mems) {
        if (!is_link[m.target]) continue;
        auto& v = bytes[m.target];
        if (v.empty()) v.assign(n, 0.0);
        spread(v, bucket, m.arrival, m.done, static_cast<double>(m.bytes));
    }
    for (const HbmPiece& p : run.hbm_pieces) {
        auto& v = bytes[p.controller];
        if (v.empty()) v.assign(n, 0.0);
        spread(v, bucket, p.start, p.done, static_cast<double>(p.bytes));
    }
    const HbmTraffic& folded = run.hbm_traffic;  // load_run folded the pieces as it read them
    if (folded.axis.n) {
        if (!(folded.axis == bk))
            throw std::logic_error("the HBM traffic was folded on " + std::to_string(folded.axis.n) + " buckets, the series want " +
                                   std::to_string(n) + " (load_run's LoadOptions::series_buckets, or keep_hbm_records)");
        for (std::size_t u = 0; u < folded.series.size(); ++u)
            if (!folded.series[u].empty()) bytes[u] = folded.series[u];
    }
    for (std::uint32_t u = 0; u < run.units.size(); ++u) {
        std::vector<double>& v = bytes[u];
        if (v.empty()) continue;
        Series s;
        s.name = run.units[u].path + " bandwidth";
        s.chip = run.units[u].chip;
        s.unit = "GB/s";
        s.bucket = bucket;
        s.ceiling = run.units[u].peak_gbps;
        cap_at_peak(v, s.ceiling * static_cast<double>(bucket) / 1000.0);
        for (double& x : v) x = x / (static_cast<double>(bucket) / 1000.0);  // bytes per ns = GB/s
        s.values = std::move(v);
        for (double x : s.values) s.high_water = std::max(s.high_water, x);
        out.push_back(std::move(s));
    }
}

// VMEM occupancy per stream (allocation by liveness, traces/vmem_liveness.h): a range is
// allocated from its write's start to its last reader's completion. The series holds the
// largest occupancy within each bucket, so the high-water mark shows.
void vmem_series(const Context& cx, Buckets bk, std::vector<Series>& out) {
    const RunData& run = cx.run;
    const Tick bucket = bk.bucket;
    const std::size_t n = bk.n;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        // Allocations (+bytes) and frees (-bytes) in time order. Each kind comes nearly in
        // order already (liveness lists ranges by writer): sorted apart, then merged. (Ordered
        // on both members: steps that compare equal are equal, so this is the one order.)
        using Step = std::pair<Tick, std::int64_t>;
        std::vector<Step> allocs, frees;
        auto start_of = [&](std::uint64_t i) {
            const std::uint32_t d = cx.ix.dma_of(s, i);
            return d != kNone ? run.dmas[d].start : st.life[i].issue;
        };
        auto end_of = [&](std::uint64_t i) {
            const std::uint32_t d = cx.ix.dma_of(s, i);
            return d != kNone ? run.dmas[d].complete : st.life[i].complete;
        };
        std::vector<trace::VmemLive> computed;
        if (run.vmem_live.size() != run.streams.size()) computed = trace::vmem_liveness(st.code, st.chip);
        const auto& live = run.vmem_live.size() == run.streams.size() ? run.vmem_live[s] : computed;
        for (const trace::VmemLive& l : live) {
            if (!st.life[l.writer].seen) continue;
            const Tick b = start_of(l.writer);
            const Tick e = std::max(end_of(l.writer), l.read && st.life[l.last_reader].seen ? end_of(l.last_reader) : run.end);
            allocs.push_back({b, static_cast<std::int64_t>(l.bytes)});
            frees.push_back({e, -static_cast<std::int64_t>(l.bytes)});
        }
        if (allocs.empty()) continue;
        sort_mostly_sorted(allocs, std::less<Step>());
        sort_mostly_sorted(frees, std::less<Step>());
        std::vector<Step> steps;
        steps.reserve(allocs.size() + frees.size());
        std::merge(allocs.begin(), allocs.end(), frees.begin(), frees.end(), std::back_inserter(steps));
        Series v;
        v.name = run.streams[s].label() + " VMEM allocated";
        v.chip = st.chip;
        v.unit = "bytes";
        v.bucket = bucket;
        v.values.assign(n, 0.0);
        if (const Unit* vm = unit_of_core(run, st, Role::Vmem)) v.ceiling = static_cast<double>(vm->capacity);
        std::int64_t cur = 0;
        for (const auto& [t, d] : steps) {
            cur += d;
            const std::size_t k = std::min<std::size_t>(n - 1, static_cast<std::size_t>(t / bucket));
            v.values[k] = std::max(v.values[k], static_cast<double>(cur));
            v.high_water = std::max(v.high_water, static_cast<double>(cur));
        }
        // Buckets without a change hold the level reached before them.
        cur = 0;
        std::size_t j = 0;
        for (std::size_t k = 0; k < n; ++k) {
            double level_max = static_cast<double>(cur);
            while (j < steps.size() && steps[j].first < (k + 1) * bucket) {
                cur += steps[j].second;
                level_max = std::max(level_max, static_cast<double>(cur));
                ++j;
            }
            v.values[k] = level_max;
        }
        out.push_back(std::move(v));
    }
}

// Utilisation (busy share) of every accounted unit.
void utilisation_series(const Analysis& a, Buckets bk, std::vector<Series>& out) {
    const Tick bucket = bk.bucket;
    for (const UnitAccount& u : a.units) {
        Series s;
        s.name = u.name + " utilisation";
        s.chip = u.chip;
        s.unit = "%";
        s.bucket = bucket;
        s.ceiling = 100;
        s.values.assign(bk.n, 0.0);
        for (const Segment& g : u.timeline)
            if (g.cause == Cause::Busy) spread(s.values, bucket, g.begin, g.end, static_cast<double>(g.end - g.begin));
        for (double& x : s.values) {
            x = 100.0 * x / static_cast<double>(bucket);
            s.high_water = std::max(s.high_water, x);
        }
        out.push_back(std::move(s));
    }
}

// The name of a stream's core account: its ScalarCore's path if the header lists one.
std::string core_name(const RunData& run, std::uint32_t s) {
    const Unit* core = unit_of_core(run, run.streams[s], Role::Core);
    return core ? core->path : run.streams[s].label();
}

// The accounts of the units (vector and matrix units, DMA engines): each read its core's
// segments and is independent of the others, so any number of threads can take units from
// here (account_some), each unit by one of them.
class UnitAccounts {
public:
    explicit UnitAccounts(const RunData& run) : run_(run) {
        if (run.unit_ops.size() >= kDmaRef || run.dmas.size() >= kDmaRef) throw std::length_error("analysis: more than 2^31 unit operations or DMAs");
        ops_.resize(run.units.size());
        done_.resize(run.units.size());
        std::vector<char> accounted(run.units.size());
        for (std::size_t u = 0; u < run.units.size(); ++u) accounted[u] = is_execution_unit(run.units[u].role);
        for (std::size_t i = 0; i < run.unit_ops.size(); ++i) {  // in log order
            const std::uint32_t u = run.unit_ops[i].unit;
            if (u < run.units.size() && accounted[u]) append_large(ops_[u], static_cast<OpRef>(i));
        }
        for (std::size_t i = 0; i < run.dmas.size(); ++i) {
            const std::uint32_t u = run.dmas[i].engine;
            if (u < run.units.size() && accounted[u]) append_large(ops_[u], static_cast<OpRef>(i) | kDmaRef);
        }
        for (std::uint32_t u = 0; u < run.units.size(); ++u)
            if (accounted[u]) order_.push_back(u);
        // The busiest first: the threads then finish at about the same time.
        std::stable_sort(order_.begin(), order_.end(), [&](std::uint32_t x, std::uint32_t y) { return ops_[x].size() > ops_[y].size(); });
    }
    // Accounts units no thread has taken yet, until none is left.
    void account_some(const Context& cx) {
        WorkInOrder work;
        for (std::size_t k = next_++; k < order_.size(); k = next_++) {
            const std::uint32_t u = order_[k];
            done_[u] = account(cx, u, ops_[u], work);
            std::vector<OpRef>().swap(ops_[u]);
        }
    }
    // The accounts, in unit order, appended to `out` (after every account_some returned).
    void take(std::vector<UnitAccount>& out) {
        for (std::uint32_t u = 0; u < run_.units.size(); ++u)
            if (is_execution_unit(run_.units[u].role)) out.push_back(std::move(done_[u]));
    }

private:
    const RunData& run_;
    std::vector<std::vector<OpRef>> ops_;  // per unit, in log order
    std::vector<UnitAccount> done_;        // per unit
    std::vector<std::uint32_t> order_;     // the units to account, in the order they are taken
    std::atomic<std::size_t> next_{0};
};

// Every unit's account in a.units: the cores first (their segments move there, no copy),
// then the other units in unit order; and the roll-up by kind.
void unit_pass(Context& cx, Analysis& a, UnitAccounts& units) {
    const RunData& run = cx.run;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        UnitAccount u;
        u.name = core_name(run, s);
        u.kind = "ScalarCore";
        u.role = Role::Core;
        u.chip = run.streams[s].chip;
        u.timeline = std::move(cx.core_segments[s]);
        u.time = cx.core_time[s];
        a.units.push_back(std::move(u));
    }
    cx.core_segments.clear();
    units.take(a.units);
    std::map<std::string, Rollup> kinds;
    for (const auto& u : a.units) {
        Rollup& r = kinds[u.kind];
        r.key = u.kind;
        for (std::size_t c = 0; c < kCauses; ++c) r.time[c] += u.time[c];
        ++r.instructions;  // here: units of the kind
    }
    for (auto& [k, r] : kinds) a.by_unit_kind.push_back(r);
}

}  // namespace

Analysis analyze(const RunData& run, const AnalyzeOptions& opt) {
    // Two threads (a 10 M-instruction run takes seconds). Beside the index and the core pass:
    // what reads only the run (the lists of the units' operations, the bandwidth series) or
    // the run and its index (the VMEM series). Then both threads account the units. Then the
    // critical path (which reads the core pass's results) runs beside the rest: utilisation,
    // DMA views, suggestions. Each pass writes only its own result or its own members of
    // Analysis, so the result is the same whatever the timing.
    const Buckets bk = series_axis(run.end, opt.series_buckets);
    auto unit_work = beside([&] { return std::make_unique<UnitAccounts>(run); });
    auto bandwidth = beside([&] {
        std::vector<Series> out;
        if (bk.n) bandwidth_series(run, bk, out);
        return out;
    });
    Context cx(run);
    auto vmem = beside([&] {
        std::vector<Series> out;
        if (bk.n) vmem_series(cx, bk, out);
        return out;
    });
    Analysis a;
    a.end = run.end;
    a.status = run.status;
    a.records = run.records;
    auto step = [&](double done, const char* next) {
        if (opt.progress) opt.progress(done, next);
    };
    step(0, "attributing the cores' time");
    core_pass(cx, a, opt);
    step(0.25, "accounting the units");
    const std::unique_ptr<UnitAccounts> units = unit_work.get();
    {
        auto helper = beside([&] { units->account_some(cx); });
        units->account_some(cx);
        helper.get();
    }
    step(0.4, "the critical path, units, series and DMAs");
    auto path = beside([&] { find_critical_path(cx, a, opt.path_steps_kept); });
    unit_pass(cx, a, *units);
    a.series = bandwidth.get();
    for (Series& s : vmem.get()) a.series.push_back(std::move(s));
    if (bk.n) utilisation_series(a, bk, a.series);
    dma_pass(cx, a);
    step(0.5, "finding suggestions");
    // The chain and span bounds read only the run (as the critical path does): beside the finders.
    auto chain_bound = beside([&] { return data_chain_bound(cx); });
    make_suggestions(cx, a, opt.max_suggestions);
    step(0.95, "the bounds and the critical path");
    a.bounds = run_bounds(run, a.end);
    {
        const ChainBound chain = chain_bound.get();
        add_bound(a.bounds, {"chain", chain.where + " data-dependency chain", chain.time}, a.end);
        add_span_bound(a.bounds, run, chain, a.end);
    }
    cap_estimates(a.bounds, a.suggestions);
    path.get();
    step(1, "done");
    return a;
}

}  // namespace xpu::analysis
