// The analysis of one run: where the time went (per unit, op, layer, chip), why (a cause for
// every stalled picosecond), the critical path, DMA and memory views, and ranked suggestions.
// Computed from RunData (the transaction log) by analyze(); rendered by the writers in
// analysis/report_*.cpp and timeline_json.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/matrix_groups.h"
#include "analysis/run_data.h"
#include "analysis/sensitivity.h"

namespace xpu::analysis {

struct Relowering;  // analysis/relower.h

// What a unit was doing at each moment. Every picosecond of every unit's time is exactly one
// of these (the conservation the tests check).
enum class Cause : std::uint8_t {
    Busy,       // executing (the core: issuing)
    Supply,     // instruction supply: the core's fetch / issue queue, or a unit starved while its core was issuing other work
    DataDep,    // waiting for an operand a producer had not written yet (register RAW/WAR, or inside a unit)
    UnitBusy,   // the unit (or DMA engine) that should take the instruction was full
    SyncWait,   // a sync-flag wait or barrier for another stream's program (not yet issued raiser)
    Hbm,        // waiting for a transfer that moves HBM data (bandwidth, queueing)
    Link,       // waiting for a transfer over an inter-chip link
    Vmem,       // waiting for a VMEM-to-VMEM transfer (VMEM ports)
    Idle,       // nothing to do (the unit's work is done, or not yet started)
};
inline constexpr std::size_t kCauses = 9;
const char* cause_name(Cause c);  // "busy", "instruction supply", ...
const char* cause_key(Cause c);   // "busy", "supply", "data_dependency", ... (JSON keys)
using CauseTimes = std::array<Tick, kCauses>;

// Cores and units have a segment or two per instruction (a 10 M-instruction GEMM: 31 M): 16
// bytes each, the cause in the top byte of `end`. Times reach 2^56 ps (20 hours) at most, which
// push_segment (analyze.cpp) checks.
struct Segment {
    static constexpr Tick kMaxTime = (Tick{1} << 56) - 1;
    Segment() : end(0), cause(Cause::Idle) {}
    Segment(Tick b, Tick e, Cause c) : begin(b), end(e), cause(c) {}
    Tick begin = 0;
    Tick end : 56;
    Cause cause : 8;
};
static_assert(sizeof(Segment) == 16, "Segment: 16 bytes");

// One unit's time, split by cause; the causes add up to the run's end time exactly.
struct UnitAccount {
    std::uint32_t unit = kNone;  // into RunData::units
    std::string name, kind;  // kind: the type name, for display
    Role role = Role::Other;
    int chip = -1;
    CauseTimes time{};
    // A core: the partition itself, merged runs of one cause. Any other unit: its busy segments
    // alone, merged (its stalls are its core's, summed in `time`).
    std::vector<Segment> timeline;
};

// Why one instruction issued later than it could have: the time from the moment it could have
// issued (its predecessor's issue slot ended) to its issue, by cause.
struct Stall {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    Tick total = 0;
    CauseTimes by{};
    std::string why;  // names the producer, flag, raiser, unit
};

// Core time by a key (op annotation, layer, chip): busy (issue slots) + stalls by cause.
struct Rollup {
    std::string key;
    std::uint64_t instructions = 0;  // (per unit kind: the units of the kind)
    CauseTimes time{};
    std::uint64_t layers = 1;        // by_op_merged: how many layers' ops it adds up (analysis/names.h)
    Tick total() const;
};

// One hop of the critical path, latest first in the chain that sets the end time.
struct PathStep {
    std::string node;    // "chip0.core0 #123 dma ... [gemm/load_b]" or "dma0 transfer of #123"
    std::string edge;    // why this node could not start earlier: "data dependency on #120", ...
    Cause cause = Cause::Busy;
    Tick begin = 0, end = 0;
};

struct DmaView {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    std::string engine, annotation;
    std::uint64_t bytes = 0;
    Tick earliest_issue = 0;  // when it could have issued: the issue time of its hoist point (dependencies.h)
    Tick issue = 0, start = 0, complete = 0;
    double achieved_gbps = 0;
    Tick overlap_compute = 0;  // time of its transfer during which a matrix unit of its chip was busy
    Tick caused_stall = 0;     // core time spent waiting for its completion flag
};

// A quantity over time, sampled in equal buckets.
struct Series {
    std::string name, unit;  // e.g. "xpu.chip0.hbm bandwidth", "GB/s"
    int chip = -1;           // the chip of the unit or stream it follows; -1: none (a link)
    Tick bucket = 0;
    std::vector<double> values;
    double ceiling = 0;  // the peak it can never exceed (0: none)
    double high_water = 0;
};

// A change to the trace: move instruction `from` of `stream` to just before `before` (program
// order of the original), or delete it (before == kDelete).
// 24 bytes (a reorder of a 32-layer decode moves ~1.9 M instructions): rank beside stream. Made as
// {stream, from, before[, rank]}.
struct Move {
    Move() = default;
    Move(std::uint32_t s, std::uint64_t f, std::uint64_t b, std::uint64_t r = 0) : stream(s), rank(narrow_rank(r)), from(f), before(b) {}
    std::uint32_t stream = 0;
    // Instructions moved in front of the same one go in rank order, then program order (a
    // list-scheduled window is a permutation: its instructions carry their new positions).
    std::uint32_t rank = 0;
    std::uint64_t from = 0, before = 0;
    static constexpr std::uint64_t kDelete = ~std::uint64_t{0};

private:
    static std::uint32_t narrow_rank(std::uint64_t r) {
        if (r > 0xFFFFFFFFu) throw std::length_error("a move's rank past 2^32");  // ranks are places in a window
        return static_cast<std::uint32_t>(r);
    }
};
static_assert(sizeof(Move) == 24, "Move: 24 bytes");

// A change to the fields of one instruction: instruction `index` of `stream` becomes `in`, in
// its place (double_buffer renames a buffer's accesses; merge_dma rewrites the first DMA of a
// run to cover the run; split_dma replaces a DMA by pieces, `in` and `then`).
struct Edit {
    std::uint32_t stream = 0;
    std::uint64_t index = 0;
    Instruction in;
    std::vector<Instruction> then;  // emitted right after it (split_dma's further pieces)
};

// What replaying a suggestion's patched trace showed (analysis/verify.h).
enum class Verdict : std::uint8_t {
    NotVerified,  // not replayed: beyond the candidates or the time budget, or not a patch of this trace
    Verified,     // replayed: faster by more than the floor (kVerifyFloor*)
    NoGain,       // replayed: faster by at most the floor, or slower
};
const char* verdict_key(Verdict v);  // "not_verified", "verified", "no_gain"

// A lower bound of the run's time set by one resource (analysis/bounds.h).
struct Bound {
    std::string name;   // "HBM", "link", "compute", "span", "chain"
    std::string where;  // the resource that sets it: "chip0 HBM", "xpu.links.chip0_xp", "xpu.chip0.core0.mxu3"
    Tick time = 0;      // the least time that resource needs for the run's work
};

struct RunBounds {
    std::vector<Bound> bounds;  // one per kind of resource that has work: its busiest instance
    Tick lower = 0;             // the largest of them
    std::size_t limiting = 0;   // index of the largest in bounds (when not empty)
    Tick headroom = 0;          // end - lower (0 when the run ends at its bound)
    // Per unit (into RunData::units): its matmuls' summed streaming, the compute bound's work,
    // which the span bound (add_span_bound) builds on.
    std::vector<Tick> matmul_streaming;
    // The matrix units that can take each other's work (matrix_groups.h): where a group is not
    // balanced, the compute and span bounds take its average instead of each unit's streaming.
    MatrixGroups matrix_groups;
};

// What applying a suggestion changes (count_changes, patch.h).
struct PatchCount {
    std::size_t moved = 0, deleted = 0, rewritten = 0;
    std::size_t inserted = 0;  // new instructions (an edit's `then`: split_dma's and pipeline_store's pieces)
    std::size_t total() const { return moved + deleted + rewritten + inserted; }
    bool operator==(const PatchCount& o) const {
        return moved == o.moved && deleted == o.deleted && rewritten == o.rewritten && inserted == o.inserted;
    }
};

struct Suggestion {
    std::string kind;    // hoist_dma, hoist_wait, defer_dma, double_buffer, double_buffer_store, pipeline_collective, pipeline_store,
                         // prefetch_ahead, drop_wait, forward_store, reorder, merge_dma, split_dma, spread_matmuls, direct_collective,
                         // collective_algorithm
    std::string cause;   // the finding, e.g. "sync-flag waits at gemm/wait_data on DMAs issued right before them"
    std::string action;  // what to change
    std::string where;   // annotation (op) it applies to; ops of several layers rolled up (analysis/names.h)
    // The full detail the short texts roll up: every op (annotation) it applies at, and every op
    // of the DMAs its finding names, in natural order (analysis.json `ops`, `dma_ops`; report.html).
    std::vector<std::string> ops, dma_ops;
    Tick estimated_saving = 0;  // never above the run's headroom over its lower bound
    // The finder's estimate was above that headroom and is the headroom (cap_estimates, compose):
    // a bound on the saving, not the finder's figure; the reports say so beside it.
    bool estimate_capped = false;
    std::vector<Move> moves;
    std::vector<Edit> edits;  // applied with the moves (an edited instruction may also move)
    // Instead of moves and edits: the whole trace written again, as xpu_tracegen lowers this
    // collective (collective_algorithm on a trace it recognises: analysis/relower.h).
    std::shared_ptr<const Relowering> relowering;
    bool changes_trace() const { return !moves.empty() || !edits.empty() || relowering; }
    std::uint32_t candidate = 0;  // its rank by estimate (1 = the largest), before any replay
    // Another suggestion of the list with more changes (hoist_wait: a hoist, and its waits raised
    // as well): replayed only in a place left after each kind's best (verify.h, candidate_order).
    bool variant = false;
    // Replay (analysis/verify.h): the original run's time minus the patched trace's, both
    // simulated on the run's effective platform; negative when the patch made the run slower.
    bool measured = false;
    std::int64_t measured_saving = 0;  // ps, when measured
    Verdict verdict = Verdict::NotVerified;
    std::string verdict_note;    // why it was not verified, or what the replay showed
    std::uint32_t patch_crc = 0;  // CRC-32 of the patched trace that was replayed (--apply checks it)
    // count_changes(run, *this) as a finder counted it for its action text, with the moves and
    // edits it was counted on (their buffers and sizes: a copy, or a move or edit added since,
    // does not match), so that report.html need not count again (counted_changes, patch.h).
    struct Counted {
        PatchCount count;
        const Move* moves = nullptr;
        std::size_t n_moves = 0;
        const Edit* edits = nullptr;
        std::size_t n_edits = 0;
    };
    std::optional<Counted> counted;
};

struct Analysis {
    Tick end = 0;
    unsigned status = 0;
    std::uint64_t records = 0, instructions = 0;
    std::vector<UnitAccount> units;
    std::vector<Stall> top_stalls;  // longest first
    std::vector<Rollup> by_op, by_layer, by_chip, by_unit_kind;  // by total, largest first, ties in natural order (chips: natural order)
    std::vector<Rollup> by_op_merged;  // by_op with the layers added up: "layer*/attn/qkv_proj/load_b", `layers` of them
    CauseTimes core_total{};  // all cores together
    // From the end backwards: the latest AnalyzeOptions::path_steps_kept steps of the path's
    // critical_path_steps (a 100 M-instruction GEMM's path has 9.3 M: 1.9 GB of analysis.json,
    // and holding them all raised its analysis's peak from 21.7 to 22.7 GB); critical_by_cause adds
    // up all of them.
    std::vector<PathStep> critical_path;
    std::uint64_t critical_path_steps = 0;
    CauseTimes critical_by_cause{};
    std::vector<DmaView> dmas;        // the most stalling first
    std::vector<Series> series;       // HBM bandwidth, link traffic, VMEM occupancy, utilisation
    std::vector<Suggestion> suggestions;  // ranked: verified by measured saving, then not verified by estimate, then no gain
    RunBounds bounds;                      // the run's lower bounds and its headroom (analysis/bounds.h)
    // The verified suggestions that compose (analysis/compose.h), applied together and replayed.
    struct Together {
        std::vector<std::uint32_t> ranks;  // 1-based positions in `suggestions`; empty: fewer than two compose
        bool measured = false;
        std::int64_t measured_saving = 0;  // ps
        std::uint32_t patch_crc = 0;
    } together;
    bool verified = false;                 // the suggestions were replayed (verify_suggestions ran)
    std::vector<SensitivityLine> sensitivity;  // measured with --sensitivity (analysis/sensitivity.h), else empty
    std::string verify_note;               // how the replay went (baseline, budget), for the reports
};

inline constexpr std::size_t kPathStepsKept = 100000;

struct AnalyzeOptions {
    std::size_t top_stalls = 20;
    std::size_t max_suggestions = 10;
    std::size_t series_buckets = kSeriesBuckets;  // load_run folds HBM traffic on this many (LoadOptions)
    // The critical path's steps held with their texts, the latest first (analysis.json lists
    // them, report.html the latest 200); the rest are counted and timed by cause, not held.
    std::size_t path_steps_kept = kPathStepsKept;
    // Called after each step with the fraction of the analysis done (by steps weighted with
    // their share of the time measured on GEMM and decode runs: an estimate) and the next step.
    std::function<void(double, const char*)> progress;
};

Analysis analyze(const RunData& run, const AnalyzeOptions& opt = {});

// "chip0.core0 #123 dma hbm:0x... -> vmem:0x... bytes=... [gemm/load_b]"
std::string describe(const RunData& run, std::uint32_t stream, std::uint64_t index);

}  // namespace xpu::analysis
