// analyze(): the core pass (stall attribution per instruction, roll-ups), the unit pass (every
// unit's time tiled by cause), DMA views and time series; then critical path and suggestions.
#include <algorithm>
#include <map>
#include <queue>
#include <sstream>

#include "analysis/context.h"
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

void push_segment(std::vector<Segment>& v, Tick b, Tick e, Cause c) {
    if (e <= b) return;
    if (!v.empty() && v.back().cause == c && v.back().end == b) {
        v.back().end = e;
        return;
    }
    v.push_back({b, e, c});
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

struct StallLess {
    bool operator()(const Stall& a, const Stall& b) const { return a.total > b.total; }  // min-heap
};

// The core pass: every stream's time, instruction by instruction.
void core_pass(Context& cx, Analysis& a, const AnalyzeOptions& opt) {
    const RunData& run = cx.run;
    cx.core_segments.resize(run.streams.size());
    cx.dma_caused.assign(run.dmas.size(), 0);
    std::map<std::string, Rollup> by_ann, by_layer, by_chip;
    std::priority_queue<Stall, std::vector<Stall>, StallLess> top;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        std::vector<Segment>& seg = cx.core_segments[s];
        const Tick slot = cx.ix.issue_slot(s);
        Rollup& chip = by_chip["chip" + std::to_string(st.chip)];
        chip.key = "chip" + std::to_string(st.chip);
        Tick t0 = 0;
        std::string last_ann = "\x01";
        Rollup* ann_r = nullptr;
        Rollup* layer_r = nullptr;
        std::uint64_t i = 0;
        for (; i < st.code.size() && st.life[i].seen; ++i) {
            const Life& l = st.life[i];
            const StallSplit sp = split_stall(cx.ix, s, i, t0);
            const Tick issue = std::max(l.issue, t0);
            const std::string& ann = st.code[i].has(kAnn) && st.code[i].ann < run.strings.size() ? run.strings[st.code[i].ann] : std::string();
            if (ann != last_ann || !ann_r) {
                last_ann = ann;
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
                push_segment(seg, p.begin, p.end, p.cause);
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
            if (total > 0) {
                Tick s2 = 0;
                for (int k = 0; k < sp.n; ++k)
                    if (sp.pieces[k].cause != Cause::Supply) s2 += sp.pieces[k].end - sp.pieces[k].begin;
                if (s2) cx.stalled.push_back({s, i, s2});
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
            push_segment(seg, issue, busy_end, Cause::Busy);
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
        push_segment(seg, t0, end, tail);
        chip.time[static_cast<std::size_t>(tail)] += end - t0;
        a.core_total[static_cast<std::size_t>(tail)] += end - t0;
    }
    for (auto* m : {&by_ann, &by_layer, &by_chip}) {
        std::vector<Rollup>& out = m == &by_ann ? a.by_op : m == &by_layer ? a.by_layer : a.by_chip;
        for (auto& [k, r] : *m) out.push_back(r);
        if (m != &by_chip)
            std::stable_sort(out.begin(), out.end(), [](const Rollup& x, const Rollup& y) { return x.total() > y.total(); });
    }
    while (!top.empty()) {
        a.top_stalls.push_back(top.top());
        top.pop();
    }
    std::reverse(a.top_stalls.begin(), a.top_stalls.end());
}

}  // namespace

void core_labels(const Context& cx, std::uint32_t stream, Tick b, Tick e, std::vector<Segment>& out) {
    if (e <= b) return;
    const auto& seg = cx.core_segments[stream];
    auto it = std::upper_bound(seg.begin(), seg.end(), b, [](Tick t, const Segment& s) { return t < s.end; });
    Tick at = b;
    for (; it != seg.end() && at < e; ++it) {
        const Tick sb = std::max(at, it->begin), se = std::min(e, it->end);
        if (sb > at) push_segment(out, at, sb, Cause::Idle);  // (no core segment: cannot happen, tiles)
        // A unit waits for what its core waits for; while the core issues other work, the
        // unit simply has none (idle).
        const Cause c = it->cause == Cause::Busy ? Cause::Idle : it->cause;
        if (se > sb) push_segment(out, sb, se, c);
        at = std::max(at, se);
    }
    if (at < e) push_segment(out, at, e, Cause::Idle);
}

namespace {

// Every unit's time tiled: busy (union of its operations), and between operations whatever
// held its next operation back: its core's state before the core issued it, a dependency
// inside the unit after.
struct Work {
    Tick issue = 0, start = 0, end = 0;
    std::uint32_t stream = 0;
};

UnitAccount account(const Context& cx, std::uint32_t unit, std::vector<Work> work) {
    const RunData& run = cx.run;
    UnitAccount u;
    u.unit = unit;
    u.name = run.units[unit].path;
    u.kind = run.units[unit].kind;
    u.chip = run.units[unit].chip;
    std::stable_sort(work.begin(), work.end(), [](const Work& x, const Work& y) { return x.start < y.start; });
    const Tick end = run.end;
    Tick at = 0;  // tiled up to here
    for (const Work& w : work) {
        if (w.end <= at) continue;  // inside the busy run already
        if (w.start > at) {
            const Tick gap_end = std::min(w.start, end);
            const Tick issued = std::clamp(w.issue, at, gap_end);
            core_labels(cx, w.stream, at, issued, u.timeline);
            push_segment(u.timeline, issued, gap_end, Cause::DataDep);
            at = gap_end;
        }
        const Tick be = std::min(w.end, end);
        if (be > at) {
            push_segment(u.timeline, at, be, Cause::Busy);
            at = be;
        }
    }
    if (at < end) push_segment(u.timeline, at, end, Cause::Idle);
    for (const Segment& s : u.timeline) u.time[static_cast<std::size_t>(s.cause)] += s.end - s.begin;
    return u;
}

void unit_pass(Context& cx, Analysis& a) {
    const RunData& run = cx.run;
    // Cores first (their own partition), then units, then DMA engines.
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        UnitAccount u;
        const Stream& st = run.streams[s];
        u.name = st.label();
        u.kind = "ScalarCore";
        u.chip = st.chip;
        for (const auto& u2 : run.units)
            if (u2.kind == "ScalarCore" && u2.chip == st.chip && u2.path.find(".core" + std::to_string(st.core) + ".") != std::string::npos) u.name = u2.path;
        u.timeline = cx.core_segments[s];
        for (const Segment& g : u.timeline) u.time[static_cast<std::size_t>(g.cause)] += g.end - g.begin;
        a.units.push_back(std::move(u));
    }
    std::vector<std::vector<Work>> work(run.units.size());
    for (const UnitOp& o : run.unit_ops) work[o.unit].push_back({o.accept, o.start, o.end, o.stream});
    for (const Dma& d : run.dmas) work[d.engine].push_back({d.issue, d.start, d.complete, d.stream});
    for (std::uint32_t u = 0; u < run.units.size(); ++u) {
        const std::string& k = run.units[u].kind;
        if (k == "VectorUnit" || k == "MatrixUnit" || k == "DmaEngine") a.units.push_back(account(cx, u, std::move(work[u])));
    }
    std::map<std::string, Rollup> kinds;
    for (const auto& u : a.units) {
        Rollup& r = kinds[u.kind];
        r.key = u.kind;
        for (std::size_t c = 0; c < kCauses; ++c) r.time[c] += u.time[c];
        ++r.instructions;  // here: units of the kind
    }
    for (auto& [k, r] : kinds) a.by_unit_kind.push_back(r);
}

// Busy intervals of the matrix units, per chip (merged), for DMA/compute overlap.
std::map<int, std::vector<std::pair<Tick, Tick>>> mxu_busy(const Analysis& a) {
    std::map<int, std::vector<std::pair<Tick, Tick>>> by_chip;
    for (const auto& u : a.units) {
        if (u.kind != "MatrixUnit") continue;
        for (const auto& s : u.timeline)
            if (s.cause == Cause::Busy) by_chip[u.chip].push_back({s.begin, s.end});
    }
    for (auto& [c, v] : by_chip) {
        std::sort(v.begin(), v.end());
        std::vector<std::pair<Tick, Tick>> m;
        for (const auto& p : v) {
            if (!m.empty() && p.first <= m.back().second) m.back().second = std::max(m.back().second, p.second);
            else m.push_back(p);
        }
        v.swap(m);
    }
    return by_chip;
}

Tick overlap(const std::vector<std::pair<Tick, Tick>>& v, Tick b, Tick e) {
    Tick t = 0;
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(b, Tick(0)));
    if (it != v.begin()) --it;
    for (; it != v.end() && it->first < e; ++it) {
        const Tick x = std::max(b, it->first), y = std::min(e, it->second);
        if (y > x) t += y - x;
    }
    return t;
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
        if (it != busy.end()) v.overlap_compute = overlap(it->second, d.start, d.complete);
        v.caused_stall = cx.dma_caused[i];
        a.dmas.push_back(v);
    }
}

// Bytes of a transaction spread evenly over [arrival, done] into buckets.
void spread(std::vector<double>& v, Tick bucket, Tick b, Tick e, double bytes) {
    if (v.empty() || bucket == 0) return;
    if (e <= b) e = b + 1;
    const double rate = bytes / static_cast<double>(e - b);
    for (std::size_t k = static_cast<std::size_t>(b / bucket); k < v.size() && k * bucket < e; ++k) {
        const Tick x = std::max<Tick>(b, k * bucket), y = std::min<Tick>(e, (k + 1) * bucket);
        if (y > x) v[k] += rate * static_cast<double>(y - x);
    }
}

void series_pass(Context& cx, Analysis& a, std::size_t buckets) {
    const RunData& run = cx.run;
    if (run.end == 0 || buckets == 0) return;
    const Tick bucket = std::max<Tick>(1, (run.end + buckets - 1) / buckets);
    const std::size_t n = static_cast<std::size_t>((run.end + bucket - 1) / bucket);
    // Bandwidth of each HBM controller and link, GB/s per bucket.
    // Links: a transaction's record is its serialisation on the wire. HBM: each interleave
    // piece's transfer on its channel. Bytes are spread evenly over those intervals.
    std::map<std::uint32_t, std::vector<double>> bytes;
    for (const MemTxn& m : run.mems) {
        if (run.units[m.target].kind != "IciLink") continue;
        auto& v = bytes[m.target];
        if (v.empty()) v.assign(n, 0.0);
        spread(v, bucket, m.arrival, m.done, static_cast<double>(m.bytes));
    }
    for (const HbmPiece& p : run.hbm_pieces) {
        auto& v = bytes[p.controller];
        if (v.empty()) v.assign(n, 0.0);
        spread(v, bucket, p.start, p.done, static_cast<double>(p.bytes));
    }
    for (auto& [u, v] : bytes) {
        Series s;
        s.name = run.units[u].path + " bandwidth";
        s.unit = "GB/s";
        s.bucket = bucket;
        s.ceiling = run.units[u].peak_gbps;
        for (double& x : v) x = x / (static_cast<double>(bucket) / 1000.0);  // bytes per ns = GB/s
        s.values = std::move(v);
        for (double x : s.values) s.high_water = std::max(s.high_water, x);
        a.series.push_back(std::move(s));
    }
    // VMEM occupancy per stream (allocation by liveness, traces/vmem_liveness.h): a range is
    // allocated from its write's start to its last reader's completion. The series holds the
    // largest occupancy within each bucket, so the high-water mark shows.
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const Stream& st = run.streams[s];
        std::vector<std::pair<Tick, std::int64_t>> steps;
        auto start_of = [&](std::uint64_t i) {
            const std::uint32_t d = cx.ix.dma_of(s, i);
            return d != kNone ? run.dmas[d].start : st.life[i].issue;
        };
        auto end_of = [&](std::uint64_t i) {
            const std::uint32_t d = cx.ix.dma_of(s, i);
            return d != kNone ? run.dmas[d].complete : st.life[i].complete;
        };
        for (const trace::VmemLive& l : trace::vmem_liveness(st.code, st.chip)) {
            if (!st.life[l.writer].seen) continue;
            const Tick b = start_of(l.writer);
            const Tick e = std::max(end_of(l.writer), l.read && st.life[l.last_reader].seen ? end_of(l.last_reader) : run.end);
            steps.push_back({b, static_cast<std::int64_t>(l.bytes)});
            steps.push_back({e, -static_cast<std::int64_t>(l.bytes)});
        }
        if (steps.empty()) continue;
        std::stable_sort(steps.begin(), steps.end(), [](const auto& x, const auto& y) { return x.first < y.first || (x.first == y.first && x.second < y.second); });
        Series v;
        v.name = run.streams[s].label() + " VMEM allocated";
        v.unit = "bytes";
        v.bucket = bucket;
        v.values.assign(n, 0.0);
        for (const auto& u : run.units)
            if (u.kind == "Vmem" && u.chip == st.chip && u.path.find(".core" + std::to_string(st.core) + ".") != std::string::npos) v.ceiling = static_cast<double>(u.capacity);
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
        a.series.push_back(std::move(v));
    }
    // Utilisation (busy share) of every accounted unit.
    for (const UnitAccount& u : a.units) {
        Series s;
        s.name = u.name + " utilisation";
        s.unit = "%";
        s.bucket = bucket;
        s.ceiling = 100;
        s.values.assign(n, 0.0);
        for (const Segment& g : u.timeline)
            if (g.cause == Cause::Busy) spread(s.values, bucket, g.begin, g.end, static_cast<double>(g.end - g.begin));
        for (double& x : s.values) {
            x = 100.0 * x / static_cast<double>(bucket);
            s.high_water = std::max(s.high_water, x);
        }
        a.series.push_back(std::move(s));
    }
}

}  // namespace
}  // namespace xpu::analysis
#include <chrono>
#include <cstdio>
namespace xpu::analysis {
namespace {
struct TT { std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now(); void lap(const char* n) { auto x = std::chrono::steady_clock::now(); std::fprintf(stderr, "  TT %s %.3f\n", n, std::chrono::duration<double>(x - t).count()); t = x; } };
}
Analysis analyze(const RunData& run, const AnalyzeOptions& opt) {
    std::fprintf(stderr, "sizes: unit_ops %zu dmas %zu flags %zu mems %zu hbm %zu instr %zu\n", run.unit_ops.size(), run.dmas.size(), run.flags.size(), run.mems.size(), run.hbm_pieces.size(), run.streams[0].code.size());
    TT tt;
    Context cx(run);
    tt.lap("index");
    Analysis a;
    a.end = run.end;
    a.status = run.status;
    a.records = run.records;
    core_pass(cx, a, opt);
    tt.lap("core");
    unit_pass(cx, a);
    tt.lap("unit");
    dma_pass(cx, a);
    tt.lap("dma");
    series_pass(cx, a, opt.series_buckets);
    tt.lap("series");
    find_critical_path(cx, a);
    tt.lap("critical");
    make_suggestions(cx, a, opt.max_suggestions);
    tt.lap("suggest");
    return a;
}

}  // namespace xpu::analysis
