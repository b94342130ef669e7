// RunData: one finished run, read back from its output folder: the transaction log
// (OUT/txlog.bin) and the program it ran (OUT/txlog.trace.bin, a verbatim copy of the trace).
// Everything the analysis knows comes from here; nothing needs SystemC.
#pragma once

#include <functional>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/instruction.h"
#include "traces/txlog_header.h"
#include "traces/vmem_liveness.h"

namespace xpu::analysis {

// A log or trace that cannot be read: the message names the file, the place and what was
// expected there.
struct LogError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t kNone = 0xFFFFFFFFu;

// The life of an instruction on its core (InstrEvent), in ps.
// 32 bytes, one per instruction of the trace: `seen` in the top bit of `complete` (times reach
// 2^63 ps at most, which the log reader checks).
struct Life {
    static constexpr Tick kMaxTime = (Tick{1} << 63) - 1;
    Life() : complete(0), seen(false) {}
    Life(Tick a, Tick r, Tick i, Tick c, bool s) : arrival(a), ready(r), issue(i), complete(c), seen(s) {}
    Tick arrival = 0, ready = 0, issue = 0;
    Tick complete : 63;
    bool seen : 1;  // false: the run ended (deadlock, time limit) before it issued
};
static_assert(sizeof(Life) == 32, "Life: 32 bytes");

struct Stream {
    std::uint16_t chip = 0, core = 0;
    // Which VMEM of its chip its vmem: operands address (vmem@C: the same one on chip C): streams
    // with the same value share one. From the log header's vmem_of_core.K lines (the builder's
    // rule, platform/builder.h); 0 for every stream without them (one VMEM per chip: shared).
    std::uint16_t vmem = 0;
    std::vector<Instruction> code;  // program order
    std::vector<Life> life;         // same indexing
    std::string label() const { return "chip" + std::to_string(chip) + ".core" + std::to_string(core); }
    // When an instruction moved up to just before instruction p issues: right after the core
    // issued p - 1, not when p issued (a wait at p issues when it is satisfied; a DMA placed above
    // it does not wait for that, it goes while the core waits).
    Tick placed_issue(std::uint64_t p) const { return p > 0 && life[p - 1].seen ? life[p - 1].issue : life[p].issue; }
};

// A module of the platform, from the log's header (traces/txlog_header.h).
using Unit = txlog::Unit;

// 32 bytes, one per unit operation (most instructions of a GEMM): the opcode in the top byte of
// `index` (an index reaches 2^56 at most, which the log reader checks). When the log wrote the
// operation with its instruction (txlog InstrOp: most of them), it was accepted when the
// instruction issued and completed with it: its accept and complete are the instruction's Life
// issue and complete, not held again; otherwise (own_times) RunData::op_times holds them. Read
// them with RunData::op_accept / op_complete.
struct UnitOp {
    static constexpr std::uint64_t kMaxIndex = (std::uint64_t{1} << 56) - 1;
    UnitOp() : unit(0), own_times(false), index(0), op(Opcode::Nop) {}
    std::uint32_t unit : 31;  // into RunData::units (kNone, no unit, reads back 2^31 - 1: past them too)
    bool own_times : 1;
    std::uint32_t stream = kNone;
    std::uint64_t index : 56;
    Opcode op : 8;
    Tick start = 0, end = 0;
};
static_assert(sizeof(UnitOp) == 32, "UnitOp: 32 bytes");

// The accept and complete times of a unit operation with times of its own, by its place in
// RunData::unit_ops.
struct OpTimes {
    std::uint64_t op = 0;
    Tick accept = 0, complete = 0;
};

struct Dma {
    std::uint32_t engine = 0;  // into RunData::units
    std::uint32_t stream = kNone;
    std::uint64_t index = 0;
    Tick issue = 0, start = 0, complete = 0;
    std::uint64_t bytes = 0;
};

struct FlagChange {
    std::uint32_t owner = 0;  // into RunData::units (a SyncFlags)
    std::uint16_t flag = 0;
    std::int64_t old_value = 0, new_value = 0;
    Tick time = 0;
    std::uint32_t by_stream = kNone;  // the instruction that raised it, if known
    std::uint64_t by_index = 0;
};

struct MemTxn {
    std::uint32_t target = 0, initiator = kNone;  // into RunData::units
    bool write = false;
    std::uint64_t addr = 0, bytes = 0;
    Tick arrival = 0, done = 0;
    std::uint32_t stream = kNone;
    std::uint64_t index = 0;
};

// One interleave piece on one HBM channel: [start, done] is its transfer.
struct HbmPiece {
    std::uint32_t controller = 0;
    std::uint16_t channel = 0;
    std::uint64_t bytes = 0;
    Tick start = 0, done = 0;
};

// The series' time axis (Analysis::series): `n` buckets of `bucket` ps covering [0, end) (none for
// an empty run).
struct SeriesAxis {
    Tick bucket = 0;
    std::size_t n = 0;
    bool operator==(const SeriesAxis& o) const { return bucket == o.bucket && n == o.n; }
};
SeriesAxis series_axis(Tick end, std::size_t buckets);
inline constexpr std::size_t kSeriesBuckets = 200;  // the series' default resolution

// HBM traffic per controller, folded block by block while the log is read, instead of held as
// pieces (a 32-layer decode logs ~17 M of them: 550 MB held, a third of the analysis's peak):
// bytes per controller and bytes per bucket of the series' axis, summed in log order, the order
// the analysis summed the held pieces in (the same doubles, bit for bit).
// The HBM transactions are folded too (~4.3 M on that decode, 64 bytes each), per chip on the
// fine axis the suggestions' estimates read them on (suggest/loads.h, HbmLoad), and not kept.
struct HbmTraffic {
    SeriesAxis axis;                          // n == 0: not folded (see RunData::hbm_pieces)
    std::vector<double> bytes;                // per unit (0 but for HBM controllers)
    std::vector<std::vector<double>> series;  // per unit: axis.n values, or empty (no traffic)
    SeriesAxis load_axis;                     // hbm_load_axis(end); n == 0: not folded
    // Per chip: the bytes of its HBM transactions spread on load_axis, in load_axis.n + 1
    // values of which the first stays 0 (HbmLoad turns them into prefix sums).
    std::map<int, std::vector<double>> load_by_chip;
    void add(const HbmPiece& p, std::size_t units);
    void add(const MemTxn& m, int chip);
};
// The fine axis of HbmLoad: buckets of at least 1 ns, at most ~100,000 of them, and two spare.
SeriesAxis hbm_load_axis(Tick end);

struct RunData {
    std::string dir;        // the output folder, as the reports name it
    std::string files_dir;  // where its files are now (sim_main analyses its staging folder before it takes dir's name)
    std::map<std::string, std::string> meta;  // "key value" lines of the log header
    // Stream::vmem's VMEM, by that number: its path in the chip ("core0.vmem"); empty where the
    // header has no vmem_of_core lines (one VMEM per chip).
    std::vector<std::string> vmem_paths;
    std::vector<Unit> units;
    std::vector<Stream> streams;
    std::vector<std::string> strings;  // the trace's string table (annotations)
    std::vector<UnitOp> unit_ops;      // in log order
    std::vector<OpTimes> op_times;     // of the unit_ops with own_times, by their place (ascending)
    std::vector<Dma> dmas;
    std::vector<FlagChange> flags;
    // Transactions on inter-chip links, and on HBM controllers where they are not folded into
    // hbm_traffic (LoadOptions), in log order: what the analysis uses (link time, HBM traffic).
    // Those on other targets (VMEM: as many again) are checked and counted in mems_not_kept,
    // not held.
    std::vector<MemTxn> mems;
    std::uint64_t mems_not_kept = 0;
    // Held only where load_run was asked to keep them or could not fold them (it folds them, and
    // the HBM transactions, into hbm_traffic when it finds the run's end before decoding, as in
    // every complete log: `mems` then holds the links' transactions alone).
    std::vector<HbmPiece> hbm_pieces;
    HbmTraffic hbm_traffic;
    // Per stream, VMEM allocation by liveness (trace::vmem_liveness of its code and chip):
    // derived from the program alone, so load_run computes it on the thread that reads the
    // program, while the log is decoded. Empty if not computed (a RunData built otherwise):
    // the analysis then computes it itself.
    std::vector<std::vector<trace::VmemLive>> vmem_live;
    // Per unit: the number of its effective parameters (its module's keys in OUT/platform.yaml;
    // units with the same parameters have the same number), 0 where unknown (no platform.yaml
    // beside the log; a run built by hand). Which matrix units are alike (analysis/matrix_groups.h).
    std::vector<std::uint32_t> unit_config;
    // Per unit: for a matrix unit bound to a core's matrix socket in OUT/platform.yaml
    // ("core0.scalar.mxu[4] -> core0.mxu4.cmd"), that core and the socket (an instruction's unit
    // field); -1 where unknown. What reaches a unit the trace never used.
    struct Socket {
        int core = -1, socket = -1;
    };
    std::vector<Socket> matrix_socket;
    Tick end = 0;
    unsigned status = 0;  // 0 completed, 1 deadlock, 2 time limit, 3 interrupted
    std::uint64_t records = 0;
    std::uint64_t log_bytes = 0;

    // Unit operation `op` (a place in unit_ops): when it was accepted and when it completed.
    Tick op_accept(std::size_t op) const;
    Tick op_complete(std::size_t op) const;
    // Appends a unit operation with times of its own (the log's UnitOp records; hand-built runs).
    void add_unit_op(std::uint32_t unit, std::uint32_t stream, std::uint64_t index, Opcode op, Tick accept, Tick start, Tick end,
                     Tick complete);
    std::uint32_t stream_of(std::uint16_t chip, std::uint16_t core) const;  // kNone if absent
    std::uint32_t unit_named(const std::string& path) const;                // kNone if absent
    std::string annotation(const Instruction& in) const {
        return in.has(kAnn) && in.ann < strings.size() ? strings[in.ann] : std::string();
    }
    double meta_number(const std::string& key, double fallback = 0) const;
};

struct LoadOptions {
    // The series' resolution the HBM traffic is folded on (AnalyzeOptions::series_buckets must
    // be the same, or the pieces kept).
    std::size_t series_buckets = kSeriesBuckets;
    bool keep_hbm_records = false;  // hold every HBM piece and transaction (tests of the log, other resolutions)
};

// Reads OUT/txlog.bin and OUT/txlog.trace.bin. Throws LogError.
RunData load_run(const std::string& out_dir, const LoadOptions& opt = {});
// The same, calling `progress` with the fraction of the log's bytes read after each block.
RunData load_run(const std::string& out_dir, const std::function<void(double)>& progress, const LoadOptions& opt = {});


}  // namespace xpu::analysis
