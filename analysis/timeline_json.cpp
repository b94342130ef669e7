#include "analysis/timeline_json.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "analysis/render_util.h"
#include "traces/mostly_sorted.h"
#include "traces/json_writer.h"

namespace xpu::analysis {

namespace {

using namespace render;

// Perfetto reads ts and dur (us) into whole ns, rounding each to the nearest: a slice ends at
// round(ts) + round(dur) there. Two slices that do not overlap in ps could overlap by a ns after
// that rounding only through a tie (x.5 ns), which may round either way; these bounds take both.
std::int64_t ns_low(Tick ps) { return static_cast<std::int64_t>(ps % 1000 == 500 ? ps / 1000 : (ps + 500) / 1000); }
std::int64_t ns_high(Tick ps) { return static_cast<std::int64_t>(ps % 1000 == 500 ? ps / 1000 + 1 : (ps + 500) / 1000); }

class Writer {
public:
    explicit Writer(const std::string& path) : out_(path) { out_.write("{\"traceEvents\":["); }

    std::string& begin_event() {
        std::string& b = out_.buf();
        b += first_ ? "\n" : ",\n";
        first_ = false;
        return b;
    }
    void end_event() { out_.maybe_flush(); }

    void process(std::uint32_t pid, const std::string& name, int sort) {
        std::string& b = begin_event();
        b += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(pid) +
             ",\"ts\":0,\"name\":\"process_name\",\"args\":{\"name\":";
        json_escape_to(b, name);
        b += "}}";
        begin_event();
        b += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(pid) +
             ",\"ts\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" + std::to_string(sort) + "}}";
        end_event();
    }
    void thread(std::uint32_t pid, std::uint32_t tid, const std::string& name) {
        std::string& b = begin_event();
        b += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
             ",\"ts\":0,\"name\":\"thread_name\",\"args\":{\"name\":";
        json_escape_to(b, name);
        b += "}}";
        begin_event();
        b += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
             ",\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(tid) + "}}";
        end_event();
    }
    // Starts a complete event; the caller appends ",\"args\":{...}" or nothing, then close_slice().
    std::string& slice(std::uint32_t pid, std::uint32_t tid, const char* cat, std::string_view name, Tick begin, Tick end) {
        std::string& b = begin_event();
        b += "{\"ph\":\"X\",\"pid\":";
        b += std::to_string(pid);
        b += ",\"tid\":";
        b += std::to_string(tid);
        b += ",\"ts\":";
        micros_to(b, begin);
        b += ",\"dur\":";
        micros_to(b, end - begin);
        b += ",\"cat\":\"";
        b += cat;
        b += "\",\"name\":";
        json_escape_to(b, name);
        return b;
    }
    void close_slice() {
        out_.buf() += '}';
        end_event();
    }
    void counter(std::uint32_t pid, const std::string& name, Tick ts, double value) {
        std::string& b = begin_event();
        b += "{\"ph\":\"C\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(pid) + ",\"ts\":";
        micros_to(b, ts);
        b += ",\"name\":";
        json_escape_to(b, name);
        b += ",\"args\":{\"value\":";
        json_number_to(b, value);
        b += "}}";
        end_event();
    }
    std::string& raw() { return out_.buf(); }
    void close() {
        out_.maybe_flush();
        out_.close();
    }

private:
    FileOut out_;
    bool first_ = true;
};

// One track of the viewer: a name, and as many lanes (threads) as its slices need so that the
// slices of each lane never overlap, even after Perfetto's rounding to ns. First fit: slices
// must come in order of their begin time.
//
// Perfetto ends a slice at round(ts) + round(dur), which can be 1 ns past round(ts + dur): two
// slices that only touch in ps may overlap in Perfetto's ns. Rather than open a lane for that,
// the later slice's begin moves to the first ps that Perfetto rounds to the earlier one's end
// (at most 2 ns later; its end too, if it was shorter than that): `nudged` says so, and the
// caller records the exact times in the slice's args.
class Track {
public:
    Track(Writer& w, std::uint32_t pid, std::string name, std::uint32_t& next_tid, std::size_t max_lanes)
        : w_(w), pid_(pid), name_(std::move(name)), next_tid_(next_tid), max_lanes_(max_lanes) {}

    // The lane's tid for a slice [b, e) (b and e possibly nudged), or 0 if every lane overlaps
    // it and no lane may be added.
    std::uint32_t place(Tick& b, Tick& e, bool& nudged) {
        nudged = false;
        for (std::size_t k = 0; k < tids_.size(); ++k) {
            if (b < exact_end_[k]) continue;  // overlaps in ps: another lane
            Tick b2 = std::max(b, end_ps_[k]);
            if (ns_low(b2) < end_ns_[k]) b2 = std::max<Tick>(b2, static_cast<Tick>(end_ns_[k]) * 1000 - 499);  // rounds up to it
            const Tick e2 = std::max(e, b2);
            exact_end_[k] = e;
            end_ps_[k] = e2;
            end_ns_[k] = ns_high(b2) + ns_high(e2 - b2);
            nudged = b2 != b || e2 != e;
            b = b2;
            e = e2;
            return tids_[k];
        }
        if (tids_.size() >= max_lanes_) {
            ++dropped_;
            return 0;
        }
        const std::uint32_t tid = next_tid_++;
        tids_.push_back(tid);
        exact_end_.push_back(e);
        end_ps_.push_back(e);
        end_ns_.push_back(ns_high(b) + ns_high(e - b));
        w_.thread(pid_, tid, tids_.size() == 1 ? name_ : name_ + " (" + std::to_string(tids_.size()) + ")");
        return tid;
    }
    std::uint32_t pid() const { return pid_; }
    const std::string& name() const { return name_; }
    std::size_t lanes() const { return tids_.size(); }
    std::size_t dropped() const { return dropped_; }

private:
    Writer& w_;
    std::uint32_t pid_;
    std::string name_;
    std::uint32_t& next_tid_;
    std::size_t max_lanes_;
    std::vector<std::uint32_t> tids_;
    std::vector<Tick> exact_end_, end_ps_;  // per lane: the last slice's end, exact and as written
    std::vector<std::int64_t> end_ns_;          // and as Perfetto reads it (at most)
    std::size_t dropped_ = 0;
};

struct Notes {
    std::vector<std::string> merged;
    std::size_t dropped = 0;
    std::size_t nudged = 0;
    std::size_t max_lanes_used = 0;
};

// Adds the exact times of a nudged slice to its args (the object `out` ends with).
void exact(std::string& out, Tick b, Tick e, Notes& notes) {
    out.pop_back();  // '}'
    if (out.back() != '{') out += ',';
    out += "\"exact_ts\":";
    micros_to(out, b);
    out += ",\"exact_dur\":";
    micros_to(out, e - b);
    out += '}';
    ++notes.nudged;
}

// Emits the slices of a source (items 0..n-1 in order of begin time; Src has begin(k), end(k),
// name(k) -> string_view, args(k, out) appending a JSON object) on a track. Past `cap` items,
// runs of consecutive items of one name become one slice; past `cap` runs, groups of runs do.
template <class Src>
void emit(Writer& w, Track& t, const Src& src, std::size_t n, std::size_t cap, const char* cat, Notes& notes) {
    if (n <= cap) {
        for (std::size_t k = 0; k < n; ++k) {
            const Tick b0 = src.begin(k), e0 = std::max(src.end(k), b0);
            Tick b = b0, e = e0;
            bool nudged = false;
            const std::uint32_t tid = t.place(b, e, nudged);
            if (!tid) continue;
            std::string& out = w.slice(t.pid(), tid, cat, src.name(k), b, e);
            out += ",\"args\":";
            src.args(k, out);
            if (nudged) exact(out, b0, e0, notes);
            w.close_slice();
        }
    } else {
        // Two passes, each finding the names again (a random read of the item's instruction):
        // held, they would take 16 bytes per item, 1.6 GB for a 100 M-instruction stream's track.
        std::size_t runs = 0;
        std::string_view previous;
        for (std::size_t k = 0; k < n; ++k) {
            const std::string_view nm = src.name(k);
            if (k == 0 || nm != previous) ++runs;
            previous = nm;
        }
        const std::size_t group = runs <= cap ? 1 : (runs + cap - 1) / cap;
        std::size_t slices = 0;
        // the current group: [gb, ge), its runs, its items, and its most numerous run's name
        Tick gb = 0, ge = 0;
        std::size_t g_runs = 0, g_items = 0, best_count = 0;
        std::string_view best_name;
        std::size_t first_item = 0;
        // the current run
        std::size_t run_count = 0;
        std::string_view run_name;
        auto close_group = [&]() {
            if (!g_items) return;
            if (ge < gb) ge = gb;
            const Tick b0 = gb, e0 = ge;
            bool nudged = false;
            const std::uint32_t tid = t.place(gb, ge, nudged);
            if (tid) {
                std::string& out = w.slice(t.pid(), tid, cat, best_name, gb, ge);
                out += ",\"args\":{\"merged_items\":" + std::to_string(g_items) + ",\"runs\":" + std::to_string(g_runs) +
                       ",\"first\":";
                src.args(first_item, out);
                out += '}';
                if (nudged) exact(out, b0, e0, notes);
                w.close_slice();
                ++slices;
            }
            g_runs = g_items = best_count = 0;
        };
        auto close_run = [&]() {
            if (!run_count) return;
            ++g_runs;
            if (run_count > best_count) {
                best_count = run_count;
                best_name = run_name;
            }
            run_count = 0;
            if (g_runs == group) close_group();
        };
        for (std::size_t k = 0; k < n; ++k) {
            const std::string_view nm = src.name(k);
            if (run_count && nm != run_name) close_run();
            const Tick b = src.begin(k), e = std::max(src.end(k), b);
            if (!g_items) {
                gb = b;
                ge = e;
                first_item = k;
            } else {
                gb = std::min(gb, b);
                ge = std::max(ge, e);
            }
            ++g_items;
            if (!run_count) run_name = nm;
            ++run_count;
        }
        close_run();
        close_group();
        notes.merged.push_back(t.name() + ": " + std::to_string(n) + " slices, more than the cap of " + std::to_string(cap) +
                               ", merged into " + std::to_string(slices) +
                               (group == 1 ? " (one per run of one name)" : " (groups of " + std::to_string(group) + " runs of one name)"));
    }
    notes.dropped += t.dropped();
    notes.max_lanes_used = std::max(notes.max_lanes_used, t.lanes());
}

// The annotation of the instruction of each item of a track (a core's instructions, a unit's
// operations, DMAs, link transactions; empty where it has none), without reading those
// instructions: each stream's program as runs of one annotation (a GEMM's 2.6 M instructions are
// 23 k runs, a 32-layer decode's 1.7 M are 346 k), read once in program order, and a cursor per
// stream that follows a track's items (in time order, their instructions mostly in program
// order too). Read one by one, the instructions (88 bytes each) were a cache miss apiece for a
// matrix unit's operations (every eighth instruction of a GEMM), and twice 900 MB of memory
// traffic for the core's track of a 10.3 M-instruction GEMM: timeline.json took 2.0 s there,
// 1.5 s since.
class AnnotationRuns {
public:
    explicit AnnotationRuns(const RunData& run) : run_(run), runs_(run.streams.size()) {
        for (std::size_t s = 0; s < run.streams.size(); ++s) {
            Runs& r = runs_[s];
            const std::vector<Instruction>& code = run.streams[s].code;
            for (std::uint64_t i = 0; i < code.size(); ++i) {
                const Instruction& in = code[i];
                const std::uint32_t a = in.has(kAnn) && in.ann < run.strings.size() ? in.ann : kNone;
                if (r.begin.empty() || r.ann.back() != a) {
                    r.begin.push_back(i);
                    r.ann.push_back(a);
                }
            }
            r.begin.shrink_to_fit();
            r.ann.shrink_to_fit();
        }
    }
    // A lookup with a cursor of its own per stream (one per track).
    class Cursor {
    public:
        explicit Cursor(const AnnotationRuns& a) : a_(a), at_(a.runs_.size(), 0) {}
        std::string_view operator()(std::uint32_t stream, std::uint64_t index) {
            if (stream >= a_.runs_.size() || index >= a_.run_.streams[stream].code.size()) return {};
            const Runs& r = a_.runs_[stream];
            std::size_t& p = at_[stream];
            // The run holding `index`: from the cursor forwards by doubling steps, then a binary
            // search within the last step (a track's next item is usually a few runs on);
            // backwards, a search from the start.
            if (r.begin[p] > index) p = 0;
            if (p + 1 < r.begin.size() && r.begin[p + 1] <= index) {
                std::size_t lo = p + 1, step = 1;
                while (lo + step < r.begin.size() && r.begin[lo + step] <= index) {
                    lo += step;
                    step *= 2;
                }
                const std::size_t hi = std::min(lo + step, r.begin.size());
                p = static_cast<std::size_t>(std::upper_bound(r.begin.begin() + static_cast<std::ptrdiff_t>(lo),
                                                              r.begin.begin() + static_cast<std::ptrdiff_t>(hi), index) -
                                             r.begin.begin()) - 1;
            }
            return r.ann[p] == kNone ? std::string_view() : std::string_view(a_.run_.strings[r.ann[p]]);
        }

    private:
        const AnnotationRuns& a_;
        std::vector<std::size_t> at_;
    };

private:
    struct Runs {
        std::vector<std::uint64_t> begin;  // first instruction of each run (the first run begins at 0)
        std::vector<std::uint32_t> ann;    // its annotation (a string id), kNone for none
    };
    const RunData& run_;
    std::vector<Runs> runs_;
};

void instr_ref(std::string& out, const RunData& run, std::uint32_t stream, std::uint64_t index) {
    if (stream < run.streams.size()) {
        out += ",\"instr\":";
        json_escape_to(out, run.streams[stream].label() + " #" + std::to_string(index));
    }
}

// Sorts the indices `v` by (begin, end, index): the order the lanes need. The keys are copied
// next to their indices first: sorting the indices through the records read a record at random
// per comparison (on a 10 M-instruction GEMM that sort was a third of writing timeline.json).
template <class F>
void sort_by_time(std::vector<std::uint32_t>& v, F begin_end) {
    auto less = [&](std::uint32_t x, std::uint32_t y) {
        const auto bx = begin_end(x), by = begin_end(y);
        if (bx != by) return bx < by;
        return x < y;
    };
    if (std::is_sorted(v.begin(), v.end(), less)) return;  // logs come nearly in order
    struct Keyed {
        decltype(begin_end(0u)) key;
        std::uint32_t index;
    };
    std::vector<Keyed> keyed;
    keyed.reserve(v.size());
    for (std::uint32_t i : v) keyed.push_back({begin_end(i), i});
    // Nearly in order: the few out of place sorted and merged in (the order is total: the same
    // result as a full sort).
    sort_mostly_sorted(keyed, [](const Keyed& x, const Keyed& y) { return x.key != y.key ? x.key < y.key : x.index < y.index; });
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = keyed[k].index;
}

int number_after(const std::string& s, const std::string& prefix, std::size_t from = 0) {
    for (std::size_t p = s.find(prefix, from); p != std::string::npos; p = s.find(prefix, p + 1)) {
        const bool start_ok = p == 0 || s[p - 1] == '.' || s[p - 1] == ' ' || s[p - 1] == '/';
        std::size_t q = p + prefix.size();
        if (!start_ok || q >= s.size() || !std::isdigit(static_cast<unsigned char>(s[q]))) continue;
        long v = 0;
        while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q])) && v < 1000000) v = v * 10 + (s[q++] - '0');
        if (q == s.size() || s[q] == '.' || s[q] == ' ' || s[q] == '/') return static_cast<int>(v);
    }
    return -1;
}

const char* status_text(unsigned st) {
    switch (st) {
        case 0: return "completed";
        case 1: return "deadlock";
        case 2: return "time limit";
        case 3: return "interrupted";
    }
    return "unknown";
}

}  // namespace

std::string timeline_option_help() {
    return "timeline.json: full (every slice), summary (at most " + std::to_string(kTimelineSummarySlices) +
           " slices, merged) or off; default: summary above " + std::to_string(kTimelineSummaryAbove) +
           " events (instructions, unit operations, DMAs, link transactions, stalls), else full (docs/outputs.md)";
}

bool parse_timeline_mode(const std::string& text, TimelineMode& out) {
    if (text == "full") out = TimelineMode::Full;
    else if (text == "summary") out = TimelineMode::Summary;
    else if (text == "off") out = TimelineMode::Off;
    else return false;
    return true;
}

std::size_t timeline_events(const RunData& run, const Analysis& a) {
    std::size_t n = run.unit_ops.size() + run.dmas.size();
    for (const Stream& st : run.streams)
        for (const Life& l : st.life) n += l.seen ? 1 : 0;
    for (const MemTxn& m : run.mems) n += m.target < run.units.size() && run.units[m.target].role == Role::Link ? 1 : 0;
    for (const UnitAccount& u : a.units) {
        const Role role = u.unit < run.units.size() ? run.units[u.unit].role : u.role;
        if (role != Role::Core) continue;
        for (const Segment& g : u.timeline) n += g.cause != Cause::Busy && g.cause != Cause::Idle && g.end > g.begin ? 1 : 0;
    }
    return n;
}

TimelineMode resolve_timeline_mode(TimelineMode mode, const RunData& run, const Analysis& a, std::size_t summary_above) {
    if (mode != TimelineMode::Auto) return mode;
    return timeline_events(run, a) > summary_above ? TimelineMode::Summary : TimelineMode::Full;
}

void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a) {
    write_timeline_json(path, run, a, TimelineOptions{});
}

void write_timeline_json(const std::string& path, const RunData& run, const Analysis& a, const TimelineOptions& opt) {
    std::size_t cap = std::max<std::size_t>(opt.max_slices_per_track, 1);
    const std::size_t max_lanes = std::max<std::size_t>(opt.max_lanes, 1);

    // Processes: one per chip seen anywhere, then one for the links and the units on no chip.
    std::set<int> chips;
    for (const auto& s : run.streams) chips.insert(s.chip);
    for (const auto& u : run.units)
        if (u.chip >= 0 && u.role != Role::Link) chips.insert(u.chip);
    for (const auto& u : a.units)
        if (u.chip >= 0 && (u.unit >= run.units.size() || run.units[u.unit].role != Role::Link)) chips.insert(u.chip);
    for (const auto& s : a.series) {
        if (s.chip >= 0) chips.insert(s.chip);
    }
    const int max_chip = chips.empty() ? -1 : *chips.rbegin();
    const std::uint32_t shared_pid = static_cast<std::uint32_t>(max_chip + 2);
    auto pid_of_chip = [&](int chip) { return chip < 0 ? shared_pid : static_cast<std::uint32_t>(chip + 1); };
    std::uint32_t next_tid = shared_pid + 1000;
    auto is_link = [&](std::uint32_t u) { return u < run.units.size() && run.units[u].role == Role::Link; };
    auto pid_of_unit = [&](std::uint32_t u) { return is_link(u) ? shared_pid : pid_of_chip(run.units[u].chip); };

    // Index the records by unit, in order of time. Each list reserved at its size, counted first
    // (grown by doubling, the lists of a 10 M-instruction GEMM held 176 MB for 41 MB of indices).
    std::vector<std::vector<std::uint32_t>> ops_of(run.units.size()), dmas_of(run.units.size()), links_of(run.units.size());
    {
        std::vector<std::size_t> n_ops(run.units.size()), n_dmas(run.units.size()), n_links(run.units.size());
        for (const UnitOp& o : run.unit_ops)
            if (o.unit < run.units.size()) ++n_ops[o.unit];
        for (const Dma& d : run.dmas)
            if (d.engine < run.units.size()) ++n_dmas[d.engine];
        for (const MemTxn& m : run.mems)
            if (is_link(m.target)) ++n_links[m.target];
        for (std::size_t u = 0; u < run.units.size(); ++u) {
            ops_of[u].reserve(n_ops[u]);
            dmas_of[u].reserve(n_dmas[u]);
            links_of[u].reserve(n_links[u]);
        }
    }
    for (std::size_t i = 0; i < run.unit_ops.size(); ++i)
        if (run.unit_ops[i].unit < run.units.size()) ops_of[run.unit_ops[i].unit].push_back(static_cast<std::uint32_t>(i));
    for (std::size_t i = 0; i < run.dmas.size(); ++i)
        if (run.dmas[i].engine < run.units.size()) dmas_of[run.dmas[i].engine].push_back(static_cast<std::uint32_t>(i));
    for (std::size_t i = 0; i < run.mems.size(); ++i)
        if (is_link(run.mems[i].target)) links_of[run.mems[i].target].push_back(static_cast<std::uint32_t>(i));
    for (auto& v : ops_of)
        sort_by_time(v, [&](std::uint32_t i) { return std::make_pair(run.unit_ops[i].start, run.unit_ops[i].end); });
    for (auto& v : dmas_of)
        sort_by_time(v, [&](std::uint32_t i) { return std::make_pair(run.dmas[i].start, run.dmas[i].complete); });
    for (auto& v : links_of)
        sort_by_time(v, [&](std::uint32_t i) { return std::make_pair(run.mems[i].arrival, run.mems[i].done); });

    // The core accounts (ScalarCore) by stream.
    std::vector<const UnitAccount*> core_account(run.streams.size(), nullptr);
    std::vector<const UnitAccount*> loose_cores;  // core accounts with no stream
    for (const auto& u : a.units) {
        const Role role = u.unit < run.units.size() ? run.units[u.unit].role : u.role;
        if (role != Role::Core) continue;
        const int core = number_after(u.name, "core");
        const std::uint32_t s = core >= 0 && u.chip >= 0
                                    ? run.stream_of(static_cast<std::uint16_t>(u.chip), static_cast<std::uint16_t>(core))
                                    : kNone;
        if (s != kNone && !core_account[s])
            core_account[s] = &u;
        else
            loose_cores.push_back(&u);
    }

    // A summary shares its slice budget among the tracks that have slices (those unit_tracks,
    // stall_track and the instruction tracks below write).
    if (opt.summary) {
        std::size_t tracks = 0;
        for (std::uint32_t s = 0; s < run.streams.size(); ++s) tracks += core_account[s] ? 2 : 1;
        tracks += loose_cores.size();
        for (std::uint32_t u = 0; u < run.units.size(); ++u) {
            const bool dma = run.units[u].role == Role::Dma || !dmas_of[u].empty();
            tracks += (dma ? 1 : 0) + (links_of[u].empty() ? 0 : 1) + (!ops_of[u].empty() && run.units[u].role != Role::Dma ? 1 : 0);
        }
        cap = std::min(cap, std::max<std::size_t>({opt.summary_slices / std::max<std::size_t>(tracks, 1), opt.summary_min_per_track, 1}));
    }

    Writer w(path);
    Notes notes;

    const AnnotationRuns annotations(run);

    // --- sources ---
    struct Instrs {
        const RunData& run;
        const Stream& st;
        const std::vector<std::uint32_t>& order;
        std::uint32_t stream;
        mutable AnnotationRuns::Cursor annotation;
        Tick begin(std::size_t k) const { return st.life[order[k]].issue; }
        // until it completes or the core issues the next instruction, whichever comes first:
        // issue to complete would overlap hundreds deep (a core issues far ahead of its units)
        Tick end(std::size_t k) const {
            const Life& l = st.life[order[k]];
            Tick e = l.complete;
            if (k + 1 < order.size()) e = std::min(e, st.life[order[k + 1]].issue);
            return std::max(e, l.issue);
        }
        std::string_view name(std::size_t k) const {
            const std::string_view ann = annotation(stream, order[k]);
            return ann.empty() ? mnemonic(st.code[order[k]].op) : ann;
        }
        void args(std::size_t k, std::string& out) const {
            const std::uint32_t i = order[k];
            out += "{\"index\":" + std::to_string(i) + ",\"op\":\"";
            out += mnemonic(st.code[i].op);
            const Life& l = st.life[i];
            out += "\",\"complete_us\":";
            micros_to(out, l.complete);
            out += ",\"ready_to_issue_ns\":";
            json_number_to(out, l.issue >= l.ready ? static_cast<double>(l.issue - l.ready) / 1e3 : 0);
            out += '}';
        }
    };
    struct Ops {
        const RunData& run;
        const std::vector<std::uint32_t>& idx;
        mutable AnnotationRuns::Cursor annotation;
        Tick begin(std::size_t k) const { return run.unit_ops[idx[k]].start; }
        Tick end(std::size_t k) const { return run.unit_ops[idx[k]].end; }
        std::string_view name(std::size_t k) const {
            const UnitOp& o = run.unit_ops[idx[k]];
            const std::string_view ann = annotation(o.stream, o.index);
            return ann.empty() ? mnemonic(o.op) : ann;
        }
        void args(std::size_t k, std::string& out) const {
            const UnitOp& o = run.unit_ops[idx[k]];
            out += "{\"op\":\"";
            out += mnemonic(o.op);
            out += '"';
            instr_ref(out, run, o.stream, o.index);
            out += ",\"accept_us\":";
            micros_to(out, run.op_accept(idx[k]));
            out += ",\"complete_us\":";
            micros_to(out, run.op_complete(idx[k]));
            out += '}';
        }
    };
    struct Dmas {
        const RunData& run;
        const std::vector<std::uint32_t>& idx;
        mutable AnnotationRuns::Cursor annotation;
        Tick begin(std::size_t k) const { return run.dmas[idx[k]].start; }
        Tick end(std::size_t k) const { return run.dmas[idx[k]].complete; }
        std::string_view name(std::size_t k) const {
            const Dma& d = run.dmas[idx[k]];
            const std::string_view ann = annotation(d.stream, d.index);
            return ann.empty() ? std::string_view("dma") : ann;
        }
        void args(std::size_t k, std::string& out) const {
            const Dma& d = run.dmas[idx[k]];
            out += "{\"bytes\":" + std::to_string(d.bytes);
            instr_ref(out, run, d.stream, d.index);
            out += ",\"issue_us\":";
            micros_to(out, d.issue);
            out += ",\"gbps\":";
            json_number_to(out, d.complete > d.start ? static_cast<double>(d.bytes) * 1e3 / static_cast<double>(d.complete - d.start) : 0);
            out += '}';
        }
    };
    struct Links {
        const RunData& run;
        const std::vector<std::uint32_t>& idx;
        mutable AnnotationRuns::Cursor annotation;
        Tick begin(std::size_t k) const { return run.mems[idx[k]].arrival; }
        Tick end(std::size_t k) const { return run.mems[idx[k]].done; }
        std::string_view name(std::size_t k) const {
            const MemTxn& m = run.mems[idx[k]];
            const std::string_view ann = annotation(m.stream, m.index);
            return !ann.empty() ? ann : m.write ? std::string_view("write") : std::string_view("read");
        }
        void args(std::size_t k, std::string& out) const {
            const MemTxn& m = run.mems[idx[k]];
            out += "{\"bytes\":" + std::to_string(m.bytes) + ",\"write\":" + (m.write ? "true" : "false");
            if (m.initiator < run.units.size()) {
                out += ",\"initiator\":";
                json_escape_to(out, run.units[m.initiator].path);
            }
            if (m.stream != kNone) instr_ref(out, run, m.stream, m.index);
            out += '}';
        }
    };
    struct Stalls {
        const std::vector<Segment>& seg;
        const std::vector<std::uint32_t>& idx;
        Tick begin(std::size_t k) const { return seg[idx[k]].begin; }
        Tick end(std::size_t k) const { return seg[idx[k]].end; }
        std::string_view name(std::size_t k) const { return cause_name(seg[idx[k]].cause); }
        void args(std::size_t k, std::string& out) const {
            out += "{\"cause\":\"";
            out += cause_key(seg[idx[k]].cause);
            out += "\"}";
        }
    };

    // A core's stall track: its account's stalled segments (not busy, not idle), the longest
    // `cap` of them if there are more.
    auto stall_track = [&](std::uint32_t pid, const std::string& name, const UnitAccount& acc) {
        std::vector<std::uint32_t> idx;
        for (std::size_t i = 0; i < acc.timeline.size(); ++i) {
            const Segment& s = acc.timeline[i];
            if (s.cause != Cause::Busy && s.cause != Cause::Idle && s.end > s.begin) idx.push_back(static_cast<std::uint32_t>(i));
        }
        if (idx.size() > cap) {
            const std::size_t all = idx.size();
            std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(cap), idx.end(), [&](std::uint32_t x, std::uint32_t y) {
                const Tick dx = acc.timeline[x].end - acc.timeline[x].begin, dy = acc.timeline[y].end - acc.timeline[y].begin;
                return dx != dy ? dx > dy : x < y;
            });
            idx.resize(cap);
            notes.merged.push_back(name + ": the " + std::to_string(cap) + " longest of " + std::to_string(all) + " stalls are shown");
        }
        sort_by_time(idx, [&](std::uint32_t i) { return std::make_pair(acc.timeline[i].begin, acc.timeline[i].end); });
        Track t(w, pid, name, next_tid, max_lanes);
        emit(w, t, Stalls{acc.timeline, idx}, idx.size(), idx.size(), "stall", notes);
    };
    auto unit_tracks = [&](std::uint32_t u) {
        const std::uint32_t pid = pid_of_unit(u);
        const Unit& unit = run.units[u];
        if (unit.role == Role::Dma || !dmas_of[u].empty()) {
            Track t(w, pid, unit.path, next_tid, max_lanes);
            emit(w, t, Dmas{run, dmas_of[u], AnnotationRuns::Cursor(annotations)}, dmas_of[u].size(), cap, "dma", notes);
        }
        if (!links_of[u].empty()) {
            Track t(w, pid, unit.path, next_tid, max_lanes);
            emit(w, t, Links{run, links_of[u], AnnotationRuns::Cursor(annotations)}, links_of[u].size(), cap, "link", notes);
        }
        if (!ops_of[u].empty() && unit.role != Role::Dma) {
            Track t(w, pid, unit.path + (dmas_of[u].empty() && links_of[u].empty() ? "" : " ops"), next_tid, max_lanes);
            emit(w, t, Ops{run, ops_of[u], AnnotationRuns::Cursor(annotations)}, ops_of[u].size(), cap, "unit", notes);
        }
    };

    // --- chips ---
    for (int chip : chips) {
        const std::uint32_t pid = pid_of_chip(chip);
        w.process(pid, "chip " + std::to_string(chip), chip);
        std::vector<std::uint32_t> streams;
        for (std::size_t s = 0; s < run.streams.size(); ++s)
            if (run.streams[s].chip == chip) streams.push_back(static_cast<std::uint32_t>(s));
        std::stable_sort(streams.begin(), streams.end(), [&](std::uint32_t x, std::uint32_t y) { return run.streams[x].core < run.streams[y].core; });
        for (std::uint32_t s : streams) {
            const Stream& st = run.streams[s];
            const std::string core = "core" + std::to_string(st.core);
            if (core_account[s]) stall_track(pid, core + " stalls", *core_account[s]);
            std::vector<std::uint32_t> order;
            bool sorted = true;
            Tick last = 0;
            for (std::size_t i = 0; i < st.life.size(); ++i) {
                if (!st.life[i].seen) continue;
                if (st.life[i].issue < last) sorted = false;
                last = st.life[i].issue;
                order.push_back(static_cast<std::uint32_t>(i));
            }
            if (!sorted) sort_by_time(order, [&](std::uint32_t i) { return std::make_pair(st.life[i].issue, st.life[i].complete); });
            Track t(w, pid, core + " instructions", next_tid, max_lanes);
            emit(w, t, Instrs{run, st, order, s, AnnotationRuns::Cursor(annotations)}, order.size(), cap, "instr", notes);
        }
        for (const UnitAccount* acc : loose_cores)
            if (acc->chip == chip) stall_track(pid, acc->name + " stalls", *acc);
        for (std::uint32_t u = 0; u < run.units.size(); ++u)
            if (run.units[u].chip == chip && !is_link(u) && run.units[u].role != Role::Core) unit_tracks(u);
        // a ScalarCore's own records, if it has any, after its chip's other units
        for (std::uint32_t u = 0; u < run.units.size(); ++u)
            if (run.units[u].chip == chip && !is_link(u) && run.units[u].role == Role::Core) unit_tracks(u);
    }

    // --- links and units on no chip ---
    bool shared_named = false;
    auto name_shared = [&]() {
        if (!shared_named) w.process(shared_pid, "links", max_chip + 1);
        shared_named = true;
    };
    for (std::uint32_t u = 0; u < run.units.size(); ++u) {
        if (!(is_link(u) || run.units[u].chip < 0)) continue;
        if (ops_of[u].empty() && dmas_of[u].empty() && links_of[u].empty()) continue;
        name_shared();
        unit_tracks(u);
    }
    for (const UnitAccount* acc : loose_cores)
        if (acc->chip < 0) {
            name_shared();
            stall_track(shared_pid, acc->name + " stalls", *acc);
        }

    // --- series, as counters of their chip's process (or the shared one) ---
    for (const auto& s : a.series) {
        const std::uint32_t pid = s.chip >= 0 ? pid_of_chip(s.chip) : shared_pid;
        if (pid == shared_pid) name_shared();
        const std::string name = s.unit.empty() ? s.name : s.name + " (" + s.unit + ")";
        for (std::size_t i = 0; i < s.values.size(); ++i) w.counter(pid, name, s.bucket * i, s.values[i]);
    }

    // --- the end ---
    std::string& b = w.raw();
    b += "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"generator\":\"xpusim timeline\",\"simulated_time_ns\":";
    json_number_to(b, static_cast<double>(a.end ? a.end : run.end) / 1e3);
    b += ",\"status\":\"";
    b += status_text(a.status);
    b += "\",\"instructions\":" + std::to_string(a.instructions) + ",\"log_records\":" + std::to_string(a.records) +
         ",\"slice_cap_per_track\":" + std::to_string(cap);
    if (opt.summary) {
        // Only in a summary, so that a full timeline's bytes are what they always were.
        b += ",\"timeline\":\"summary\",\"summary\":";
        json_escape_to(b, "a summary of at most " + std::to_string(std::max(opt.summary_slices, cap)) +
                              " slices shared by the tracks, " + std::to_string(cap) +
                              " per track: where a track has more, its consecutive slices of one name are merged into one "
                              "(args merged_items, runs, and first: the first slice's args), then groups of such runs (named "
                              "after their most numerous run); a stall track keeps its " + std::to_string(cap) +
                              " longest stalls; counters are complete. 'merged' lists the tracks. Every slice: "
                              "--timeline full (xpu_analyze OUT --timeline full rewrites this file)");
    }
    b += ",\"merged\":";
    std::string merged;
    for (const auto& m : notes.merged) merged += (merged.empty() ? "" : "; ") + m;
    json_escape_to(b, merged.empty() ? std::string("none: every slice is shown") : merged);
    b += ",\"dropped_slices\":" + std::to_string(notes.dropped) + ",\"nudged_slices\":" + std::to_string(notes.nudged) + ",\"max_lanes_per_track\":" + std::to_string(notes.max_lanes_used) +
         ",\"lanes\":";
    json_escape_to(b, "slices of one track that overlap in time are spread over lanes: NAME, NAME (2), ...; a slice that "
                      "would overlap the one before it only in whole ns, as Perfetto rounds, begins up to 2 ns later "
                      "(args exact_ts, exact_dur: its exact times)");
    b += "}\n}\n";
    w.close();
}

}  // namespace xpu::analysis
