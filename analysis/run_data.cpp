#include "analysis/run_data.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>


#include "analysis/intervals.h"
#include "analysis/large_array.h"
#include "analysis/platform_keys.h"
#include "traces/txlog_codec.h"
#include "traces/txlog_format.h"
#include "traces/crc32.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

namespace {
const OpTimes& own_times_of(const std::vector<OpTimes>& v, std::size_t op) {
    const auto it = std::lower_bound(v.begin(), v.end(), op, [](const OpTimes& t, std::size_t x) { return t.op < x; });
    if (it == v.end() || it->op != op) throw std::logic_error("unit operation " + std::to_string(op) + " has no times of its own");
    return *it;
}
}  // namespace

Tick RunData::op_accept(std::size_t op) const {
    const UnitOp& o = unit_ops[op];
    return o.own_times ? own_times_of(op_times, op).accept : streams[o.stream].life[o.index].issue;
}

Tick RunData::op_complete(std::size_t op) const {
    const UnitOp& o = unit_ops[op];
    return o.own_times ? own_times_of(op_times, op).complete : streams[o.stream].life[o.index].complete;
}

void RunData::add_unit_op(std::uint32_t unit, std::uint32_t stream, std::uint64_t index, Opcode op, Tick accept, Tick start, Tick end,
                          Tick complete) {
    UnitOp o;
    o.unit = unit;
    o.own_times = true;
    o.stream = stream;
    o.index = index;
    o.op = op;
    o.start = start;
    o.end = end;
    op_times.push_back({unit_ops.size(), accept, complete});
    append_large(unit_ops, o);
}

std::uint32_t RunData::stream_of(std::uint16_t chip, std::uint16_t core) const {
    for (std::size_t i = 0; i < streams.size(); ++i)
        if (streams[i].chip == chip && streams[i].core == core) return static_cast<std::uint32_t>(i);
    return kNone;
}

std::uint32_t RunData::unit_named(const std::string& path) const {
    for (std::size_t i = 0; i < units.size(); ++i)
        if (units[i].path == path) return static_cast<std::uint32_t>(i);
    return kNone;
}

double RunData::meta_number(const std::string& key, double fallback) const {
    auto it = meta.find(key);
    if (it == meta.end()) return fallback;
    try {
        return std::stod(it->second);
    } catch (...) {
        return fallback;
    }
}

SeriesAxis series_axis(Tick end, std::size_t buckets) {
    if (end == 0 || buckets == 0) return {};
    const Tick bucket = std::max<Tick>(1, (end + buckets - 1) / buckets);
    return {bucket, static_cast<std::size_t>((end + bucket - 1) / bucket)};
}

void HbmTraffic::add(const HbmPiece& p, std::size_t units) {
    if (bytes.size() < units) {
        bytes.resize(units, 0.0);
        series.resize(units);
    }
    bytes[p.controller] += static_cast<double>(p.bytes);
    auto& v = series[p.controller];
    if (v.empty()) v.assign(axis.n, 0.0);
    spread(v, axis.bucket, p.start, p.done, static_cast<double>(p.bytes));
}

void HbmTraffic::add(const MemTxn& m, int chip) {
    auto& v = load_by_chip[chip];
    if (v.empty()) v.assign(load_axis.n + 1, 0.0);
    spread(v.data() + 1, load_axis.n, load_axis.bucket, m.arrival, m.done, static_cast<double>(m.bytes));  // bucket k into k + 1
}

SeriesAxis hbm_load_axis(Tick end) {
    const Tick bucket = std::max<Tick>(1000, end / 100000 + 1);
    return {bucket, static_cast<std::size_t>(end / bucket + 2)};
}

namespace {

// Bytes of zeros after a block's payload in the decode buffer. The fast decoder reads a whole
// record, and 8 bytes at a time, without a bounds check per byte: a record, at most ~120 bytes
// (a Name's text is checked explicitly), that starts inside the payload ends inside the padding.
constexpr std::size_t kDecodePadding = 128;

// The decoder's per-field functions, inlined whatever the compiler's heuristics say: a call per
// field costs as much as the decoding itself (the cursor goes through memory).
#if defined(__GNUC__)
#define XPU_HOT inline __attribute__((always_inline))
#else
#define XPU_HOT inline
#endif

// One LEB128 varint at p: up to 10 bytes, non-canonical forms accepted (the value of
// Cursor::var below); nullptr if it is longer. Needs 10 readable bytes at p (the padding).
// A plain loop: each field of a record type has about the same length every time, so its
// branches predict well (measured twice as fast on a real log as one 8-byte load with the
// continuation bits squeezed out, with shifts and masks or with pext).
XPU_HOT const std::uint8_t* read_varint(const std::uint8_t* p, std::uint64_t& v) {
    std::uint64_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        const std::uint64_t b = *p++;
        r |= (b & 0x7F) << shift;
        if (b < 0x80) {
            v = r;
            return p;
        }
    }
    return nullptr;
}

// Decodes the records of one block; every read is bounds-checked and names the place. Used for
// a record the fast cursor refused, to report exactly what is wrong with it.
class Cursor {
public:
    Cursor(const std::uint8_t* p, std::size_t n, const std::string& where) : p_(p), end_(p + n), begin_(p), where_(where) {}
    void seek(std::size_t offset) { p_ = begin_ + offset; }
    bool done() const { return p_ >= end_; }
    std::uint64_t var() {
        std::uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            if (p_ >= end_) fail("a record runs past the end of its block");
            const std::uint8_t b = *p_++;
            v |= std::uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("a varint longer than 10 bytes");
    }
    std::int64_t zz() { return trace::codec::unzigzag(var()); }
    Tick after(Tick base) {
        const std::int64_t d = zz();
        if (d < 0) fail("a time earlier than the one it follows (the record is corrupt)");
        return base + static_cast<Tick>(d);
    }
    std::uint8_t byte() {
        if (p_ >= end_) fail("a record runs past the end of its block");
        return *p_++;
    }
    std::string bytes(std::size_t n) {
        if (static_cast<std::size_t>(end_ - p_) < n) fail("a name runs past the end of its block");
        std::string s(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        return s;
    }
    void check() const {}  // every read is checked
    [[noreturn]] void fail(const std::string& what) const {
        std::ostringstream os;
        os << where_ << ", byte " << (p_ - begin_) << " of the block: " << what;
        throw LogError(os.str());
    }

private:
    const std::uint8_t* p_;
    const std::uint8_t* end_;
    const std::uint8_t* begin_;
    std::string where_;
};

// Thrown by FastCursor instead of an error: the record is then decoded again by Cursor.
struct Refused {};

// The same reads as Cursor, without a bounds check per byte (the buffer is padded, see
// kDecodePadding; the caller checks after each record that it ended inside the payload), and
// without building a message: any problem throws Refused.
class FastCursor {
public:
    FastCursor(const std::uint8_t* p, std::size_t n) : p_(p), end_(p + n), begin_(p) {}
    std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
    bool done() const { return p_ >= end_; }
    bool past_end() const { return p_ > end_; }
    XPU_HOT std::uint64_t var() {
        std::uint64_t v;
        const std::uint8_t* q = read_varint(p_, v);
        if (!q) throw Refused{};
        p_ = q;
        return v;
    }
    XPU_HOT std::int64_t zz() { return trace::codec::unzigzag(var()); }
    XPU_HOT Tick after(Tick base) {
        const std::int64_t d = zz();
        if (d < 0) throw Refused{};
        return base + static_cast<Tick>(d);
    }
    XPU_HOT std::uint8_t byte() { return *p_++; }
    std::string bytes(std::size_t n) {
        if (static_cast<std::size_t>(end_ - p_) < n) throw Refused{};
        std::string s(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        return s;
    }
    // Before each piece of a variable-length record: still inside the payload (so that the next
    // few fields are inside the padding).
    XPU_HOT void check() const {
        if (p_ > end_) throw Refused{};
    }
    [[noreturn]] void fail(const std::string&) const { throw Refused{}; }

private:
    const std::uint8_t* p_;
    const std::uint8_t* end_;
    const std::uint8_t* begin_;
};

struct FileCloser {
    void operator()(std::FILE* f) const {
        if (f) std::fclose(f);
    }
};

// RunData::unit_config and matrix_socket from the run's effective platform (sim_main writes it
// beside the log): a unit `<top>.chip<N>.<module>` has the keys `chip.modules.<module>.*` (one
// chip description for all chips: each module's parameters are read once, and numbered), and a
// matrix unit is bound to the socket of the scalar core whose `core` key the binding names.
// Nothing if the file is absent.
void read_unit_config(RunData& run, const std::string& platform_yaml) {
    run.unit_config.assign(run.units.size(), 0);
    run.matrix_socket.assign(run.units.size(), RunData::Socket{});
    const PlatformKeys keys = read_platform_keys(platform_yaml);
    if (keys.empty()) return;
    std::map<std::string, std::uint32_t> id_of;                  // parameters -> their number
    std::map<std::string, std::uint32_t> config_of;              // module -> its parameters' number (0: none)
    std::map<std::string, std::vector<std::uint32_t>> matrix_of;  // module -> its matrix units (one a chip)
    for (std::uint32_t u = 0; u < run.units.size(); ++u) {
        const Unit& unit = run.units[u];
        if (unit.chip < 0) continue;
        const std::string tag = ".chip" + std::to_string(unit.chip) + ".";
        const std::size_t at = unit.path.find(tag);
        if (at == std::string::npos) continue;
        const std::string module = unit.path.substr(at + tag.size());
        auto [m, fresh] = config_of.emplace(module, 0);
        if (fresh) {
            const std::string prefix = "chip.modules." + module + ".";
            std::string config;
            for (auto it = keys.lower_bound(prefix); it != keys.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
                config += it->first.substr(prefix.size()) + "=" + it->second + "\n";
            if (!config.empty()) m->second = id_of.emplace(config, static_cast<std::uint32_t>(id_of.size() + 1)).first->second;
        }
        run.unit_config[u] = m->second;
        if (unit.role == Role::Matrix) matrix_of[module].push_back(u);
    }
    for (const MatrixBinding& b : read_matrix_bindings(platform_yaml)) {
        auto core = keys.find("chip.modules." + b.scalar + ".core");
        auto units = matrix_of.find(b.unit);
        if (core == keys.end() || units == matrix_of.end()) continue;
        int core_id = -1;
        try {
            core_id = std::stoi(core->second);
        } catch (const std::exception&) {
            continue;
        }
        for (std::uint32_t u : units->second) run.matrix_socket[u] = {core_id, b.socket};
    }
}

// Stream::vmem from the header's "vmem_of_core.K PATH" lines: one number per distinct VMEM path
// (which number is immaterial: only equality counts); a stream whose core has no line keeps 0.
void assign_vmems(RunData& run) {
    std::map<std::string, std::uint16_t> id_of;
    std::map<std::uint16_t, std::uint16_t> of_core;
    const std::string prefix = "vmem_of_core.";
    for (const auto& [key, value] : run.meta) {
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        unsigned long core = 0;
        try {
            core = std::stoul(key.substr(prefix.size()));
        } catch (...) {
            continue;
        }
        of_core[static_cast<std::uint16_t>(core)] = id_of.emplace(value, static_cast<std::uint16_t>(id_of.size())).first->second;
    }
    run.vmem_paths.assign(id_of.size(), std::string());
    for (const auto& [path, id] : id_of) run.vmem_paths[id] = path;
    for (Stream& st : run.streams) {
        auto it = of_core.find(st.core);
        if (it != of_core.end()) st.vmem = it->second;
    }
}

// The header's meta and units into RunData; returns its HBM interleave rules (for the decoder).
std::vector<txlog::HbmLayout> parse_meta(RunData& run, const std::string& text, const std::string& path) {
    txlog::Header h;
    std::string error;
    if (!txlog::parse_header(text, h, error)) throw LogError(path + ": " + error);
    run.meta = std::move(h.meta);
    run.units = std::move(h.units);
    return std::move(h.hbm);
}

// The program of the run (OUT/txlog.trace.bin): its tables are read at once (the streams the
// log's records name, their lengths, the annotations), its instructions on a second thread
// while the caller decodes the log: the two are independent, and each is a large part of the
// loading time. That thread then derives what depends on the program alone (VMEM liveness),
// which it has time for before the log is decoded. Each stream's `code` and
// RunData::vmem_live belong to that thread until finish().
class TraceLoader {
public:
    TraceLoader(RunData& run, const std::string& path) : run_(run) {
        if (!fs::exists(path))
            throw LogError(path + ": missing: the analysis needs the copy of the trace that sim_main writes beside txlog.bin");
        try {
            file_ = trace::TraceFile::open(path);
        } catch (const trace::TraceError& e) {
            throw LogError(e.what());
        }
        run.strings = file_.strings();
        for (const trace::StreamInfo& info : file_.streams()) {
            Stream st;
            st.chip = info.chip;
            st.core = info.core;
            run.streams.push_back(std::move(st));
        }
        thread_ = std::thread([this] { read_code(); });
        // The lives, which the log's records fill in (a stream that reads without error holds
        // as many instructions as its table entry says).
        try {
            for (std::size_t s = 0; s < run.streams.size(); ++s) {
                reserve_large(run.streams[s].life, file_.streams()[s].instructions);
                run.streams[s].life.resize(file_.streams()[s].instructions);
            }
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    ~TraceLoader() {
        if (thread_.joinable()) thread_.join();
    }
    // Waits for the instructions; throws the trace's error if reading them failed.
    void finish() {
        thread_.join();
        if (error_) std::rethrow_exception(error_);
    }

private:
    void read_code() {
        try {
            // Decoded a chunk at a time into a small buffer and appended: each Instruction of
            // the (large) array is written once, instead of constructed and then overwritten.
            // No larger than the longest stream: a small trace (the fuzz target reads thousands
            // a second) does not construct 4096 instructions it never uses.
            std::size_t longest = 0;
            for (const trace::StreamInfo& info : file_.streams()) longest = std::max<std::size_t>(longest, info.instructions);
            std::vector<Instruction> chunk(std::clamp<std::size_t>(longest, 1, 4096));
            for (std::size_t s = 0; s < run_.streams.size(); ++s) {
                std::vector<Instruction>& code = run_.streams[s].code;
                const std::size_t n = file_.streams()[s].instructions;
                reserve_large(code, n);
                trace::StreamReader r(file_, s);
                while (code.size() < n) {
                    const std::size_t got = r.read(chunk.data(), std::min(chunk.size(), n - code.size()));
                    if (!got) break;
                    code.insert(code.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got));
                }
            }
            for (const Stream& st : run_.streams) run_.vmem_live.push_back(trace::vmem_liveness(st.code, st.chip));
        } catch (const trace::TraceError& e) {
            error_ = std::make_exception_ptr(LogError(e.what()));
        } catch (...) {
            error_ = std::current_exception();
        }
    }

    RunData& run_;
    trace::TraceFile file_;
    std::thread thread_;
    std::exception_ptr error_;
};

// (chip, core) -> stream, for the records that name an instruction: a table, since every
// record asks.
class StreamTable {
public:
    explicit StreamTable(const RunData& run) : run_(run) {
        std::size_t chips = 0, cores = 0;
        for (const Stream& st : run.streams) {
            chips = std::max<std::size_t>(chips, st.chip + 1u);
            cores = std::max<std::size_t>(cores, st.core + 1u);
        }
        if (chips * cores > (1u << 20)) return;  // sparse ids: run.stream_of
        cores_ = cores;
        table_.assign(chips * cores, kNone);
        for (std::size_t s = 0; s < run.streams.size(); ++s) {
            const std::size_t k = run.streams[s].chip * cores + run.streams[s].core;
            if (table_[k] == kNone) table_[k] = static_cast<std::uint32_t>(s);  // the first, as stream_of
        }
    }
    std::uint32_t find(std::uint64_t chip, std::uint64_t core) const {
        if (cores_ == 0) {
            return chip <= 0xFFFF && core <= 0xFFFF ? run_.stream_of(static_cast<std::uint16_t>(chip), static_cast<std::uint16_t>(core)) : kNone;
        }
        if (core >= cores_ || chip >= table_.size() / cores_) return kNone;
        return table_[chip * cores_ + core];
    }

private:
    const RunData& run_;
    std::size_t cores_ = 0;
    std::vector<std::uint32_t> table_;
};

// Is a transaction on this unit one the analysis uses? HBM controllers (HBM traffic) and
// inter-chip links (link time); transactions on VMEM are checked and counted, not kept.
bool keeps_transactions(const Unit& u) { return u.role == Role::Hbm || u.role == Role::Link; }

// Turns records into RunData. One decoder for both cursors: FastCursor on the normal path,
// Cursor to name the error in a record FastCursor refused. Version 3's deltas are taken against
// what the writer remembered (traces/txlog_codec.h), which the decoder remembers the same way.
class LogDecoder {
public:
    LogDecoder(RunData& run, const std::vector<txlog::HbmLayout>& hbm) : run_(run), streams_(run) {
        // Records per instruction are at most one unit op: reserving spares the copies of
        // growing the largest array. (Lives, not code: the code is being read meanwhile.)
        std::size_t instructions = 0;
        for (const Stream& st : run.streams) instructions += st.life.size();
        reserve_large(run.unit_ops, instructions);
        // The header's units are the names 1, 2, 3...
        for (std::size_t u = 0; u < run.units.size(); ++u) unit_of_name_.push_back(static_cast<std::uint32_t>(u));
        used_.assign(unit_of_name_.size(), 0);
        layouts_ = hbm;
        layout_of_.assign(unit_of_name_.size(), nullptr);
        for (const txlog::HbmLayout& l : layouts_)
            for (std::size_t u = 0; u < run.units.size(); ++u)
                if (run.units[u].path == l.path) {
                    if (!layout_of_[u + 1]) layout_of_[u + 1] = &l;
                    break;
                }
        next_addr_.assign(unit_of_name_.size(), 0);
        stream_state_.resize(run.streams.size());
        slot_stream_.assign(txlog::kSlots, kNone);
        slot_open_.assign(txlog::kSlots, 0);
    }

    bool ended() const { return ended_; }

    // Fold the HBM pieces into run.hbm_traffic on `axis` after each block (block_done) instead
    // of holding them: a block's pieces wait in run.hbm_pieces until the block has decoded
    // without error (a block decoded again, checked, rewinds them).
    void fold_hbm(Tick end, std::size_t series_buckets) {
        const SeriesAxis axis = series_axis(end, series_buckets);
        if (axis.n == 0) return;  // an empty run: nothing to fold
        run_.hbm_traffic.axis = axis;
        run_.hbm_traffic.load_axis = hbm_load_axis(end);
        folding_ = true;
    }
    void block_done() {
        if (!folding_) return;
        for (const HbmPiece& p : run_.hbm_pieces) run_.hbm_traffic.add(p, run_.units.size());
        run_.hbm_pieces.clear();
        for (const MemTxn& m : hbm_mems_) run_.hbm_traffic.add(m, run_.units[m.target].chip);
        hbm_mems_.clear();
    }

    // What decoding a block changes (lives are rewritten alike if it is decoded again): rewind()
    // puts it back as mark() found it, so that the block can be decoded again, checked.
    struct Mark {
        std::size_t units, names, unit_ops, op_times, dmas, flags, mems, pieces, hbm_mems;
        std::uint64_t mems_not_kept, events, names_used;
        std::vector<char> used;
        std::vector<std::uint64_t> next_addr;
        std::vector<txlog::StreamState> streams;
        txlog::GlobalState g;
        std::vector<txlog::ChunkSlot> slots;
        std::vector<std::uint32_t> slot_stream;
        std::vector<char> slot_open;
        std::string bad_mem;
    };
    Mark mark() const {
        return {run_.units.size(), unit_of_name_.size(), run_.unit_ops.size(), run_.op_times.size(), run_.dmas.size(), run_.flags.size(), run_.mems.size(),
                run_.hbm_pieces.size(), hbm_mems_.size(), run_.mems_not_kept, events_, names_used_, used_, next_addr_, stream_state_, g_, slots_,
                slot_stream_, slot_open_, bad_mem_};
    }
    void rewind(const Mark& m) {
        run_.units.resize(m.units);
        unit_of_name_.resize(m.names);
        layout_of_.resize(m.names);
        keep_.clear();
        run_.unit_ops.resize(m.unit_ops);
        run_.op_times.resize(m.op_times);
        run_.dmas.resize(m.dmas);
        run_.flags.resize(m.flags);
        run_.mems.resize(m.mems);
        run_.hbm_pieces.resize(m.pieces);
        hbm_mems_.resize(m.hbm_mems);
        run_.mems_not_kept = m.mems_not_kept;
        events_ = m.events;
        names_used_ = m.names_used;
        used_ = m.used;
        next_addr_ = m.next_addr;
        stream_state_ = m.streams;
        g_ = m.g;
        slots_ = m.slots;
        slot_stream_ = m.slot_stream;
        slot_open_ = m.slot_open;
        bad_mem_ = m.bad_mem;
        ended_ = false;
    }

    // The events the log describes, counted as version 2 wrote them, one record each: an
    // instruction, unit operation, DMA, flag change, transaction, HBM piece, name used, the end.
    std::uint64_t events() const { return events_ + names_used_; }
    // Reserves the arrays whose length the log does not tell (HBM pieces, transactions kept)
    // for the whole log, extrapolated from what the share of it decoded so far held, so that
    // they are not copied as they grow. A guess: if it falls short, they grow as vectors do.
    void extrapolate(double share_decoded) {
        if (share_decoded <= 0 || share_decoded >= 1) return;
        const double scale = 1.25 / share_decoded;
        if (!folding_) reserve_large(run_.hbm_pieces, static_cast<std::size_t>(static_cast<double>(run_.hbm_pieces.size()) * scale));
        reserve_large(run_.mems, static_cast<std::size_t>(static_cast<double>(run_.mems.size()) * scale));
    }
    // The message for the first transaction (in log order, kept or not) for an instruction past
    // its stream's end; empty if none.
    const std::string& bad_mem() const { return bad_mem_; }

    template <class C>
    void record(C& c) {
        const std::uint8_t type = c.byte();
        if (type & static_cast<std::uint8_t>(txlog::Rec::MemNext)) return mem_next(c, type & 0x7F);
        switch (static_cast<txlog::Rec>(type)) {
            case txlog::Rec::Name: name(c); break;
            case txlog::Rec::Instr: instr(c); break;
            case txlog::Rec::InstrOp: instr_op(c); break;
            case txlog::Rec::UnitOp: unit_op(c); break;
            case txlog::Rec::Dma: dma(c); break;
            case txlog::Rec::Flag: flag(c); break;
            case txlog::Rec::Mem: mem(c); break;
            case txlog::Rec::HbmPiece: hbm_piece(c); break;
            case txlog::Rec::End:
                run_.end = c.var();
                run_.status = static_cast<unsigned>(c.var());
                ended_ = true;
                ++events_;
                if (!c.done()) c.fail("records after the End record");
                break;
            default:
                c.fail("unknown record type " + std::to_string(type));
        }
    }

private:
    // Log names -> unit indices (names of units not in the header are added as kind "?").
    template <class C>
    std::uint32_t unit_id(std::uint64_t name, C& c) {
        if (name == 0) return kNone;
        if (name >= unit_of_name_.size()) c.fail("a name id used before its Name record");
        if (!used_[name]) {
            used_[name] = 1;
            ++names_used_;
        }
        return unit_of_name_[name];
    }
    template <class C>
    std::uint32_t stream_id(std::uint64_t chip, std::uint64_t core, C& c) const {
        const std::uint32_t s = streams_.find(chip, core);
        if (s == kNone) c.fail("a record for chip " + std::to_string(chip) + " core " + std::to_string(core) + ", which the trace has no stream for");
        return s;
    }
    // chip, core, index-Δ: the stream and the index; `update`: the stream's last index is now it.
    template <class C>
    std::uint32_t stream_index(C& c, std::uint64_t& index, bool update) {
        const std::uint64_t chip = c.var(), core = c.var();
        const std::uint32_t s = stream_id(chip, core, c);
        txlog::StreamState& st = stream_state_[s];
        index = st.index + static_cast<std::uint64_t>(c.zz());
        if (update) st.index = index;
        return s;
    }
    // A time given as a Δ (either sign) from `base`.
    template <class C>
    static Tick from(C& c, Tick base) {
        const std::int64_t d = c.zz();
        if (d < 0 && static_cast<std::uint64_t>(-(d + 1)) >= base) c.fail("a time before the run began (the record is corrupt)");
        return base + static_cast<Tick>(d);
    }

    template <class C>
    void name(C& c) {
        const std::uint64_t id = c.var(), len = c.var();
        if (id != unit_of_name_.size()) c.fail("Name records must number their ids after the header's units: " + std::to_string(unit_of_name_.size()) + " next");
        if (len > 4096) c.fail("a name longer than 4096 bytes");
        const std::string name = c.bytes(static_cast<std::size_t>(len));
        std::uint32_t u = run_.unit_named(name);
        if (u == kNone) {
            run_.units.push_back({name, "?", Role::Other, -1, 0, 0});
            u = static_cast<std::uint32_t>(run_.units.size() - 1);
        }
        unit_of_name_.push_back(u);
        used_.push_back(1);  // written where it is first used
        ++names_used_;
        layout_of_.push_back(nullptr);
        next_addr_.push_back(0);
    }

    template <class C>
    Life& life(C& c, std::uint32_t& s, std::uint64_t& index) {
        s = stream_index(c, index, true);
        Stream& st = run_.streams[s];
        if (index >= st.life.size()) c.fail("instruction " + std::to_string(index) + " of " + st.label() + ", which has " + std::to_string(st.life.size()));
        Life& l = st.life[index];
        txlog::StreamState& ss = stream_state_[s];
        l.arrival = from(c, ss.time);
        ss.time = l.arrival;
        l.ready = c.after(l.arrival);
        l.issue = c.after(l.ready);
        const Tick complete = c.after(l.issue);
        if (complete > Life::kMaxTime) c.fail("a time past 2^63 ps");
        l.complete = complete;
        l.seen = true;
        ++events_;
        return l;
    }

    template <class C>
    void instr(C& c) {
        std::uint32_t s;
        std::uint64_t index;
        life(c, s, index);
    }

    template <class C>
    void instr_op(C& c) {
        UnitOp o;
        std::uint64_t index = 0;
        const Life& l = life(c, o.stream, index);
        o.index = index;  // below the trace's length (life() checks it)
        o.unit = unit_id(c.var(), c);
        o.op = opcode(c);
        o.start = c.after(l.issue);  // accepted as it issued
        o.end = c.after(o.start);
        const Tick complete = c.after(o.end);
        if (complete != l.complete) c.fail("an instruction's unit operation completes apart from it");
        append_large(run_.unit_ops, o);
        ++events_;
    }

    template <class C>
    Opcode opcode(C& c) {
        const std::uint64_t op = c.var();
        if (op > 0xFF || !trace::codec::is_known_opcode(static_cast<std::uint8_t>(op))) c.fail("unknown opcode " + std::to_string(op));
        return static_cast<Opcode>(op);
    }

    template <class C>
    void unit_op(C& c) {
        const std::uint32_t unit = unit_id(c.var(), c);
        std::uint64_t index = 0;
        const std::uint32_t stream = stream_index(c, index, true);
        if (index > UnitOp::kMaxIndex) c.fail("instruction index " + std::to_string(index) + " out of range");
        const Opcode op = opcode(c);
        txlog::StreamState& ss = stream_state_[stream];
        const Tick accept = from(c, ss.time);
        ss.time = accept;
        const Tick start = c.after(accept), end = c.after(start), complete = c.after(end);
        run_.add_unit_op(unit, stream, index, op, accept, start, end, complete);
        ++events_;
    }

    template <class C>
    void dma(C& c) {
        Dma d;
        d.engine = unit_id(c.var(), c);
        d.stream = stream_index(c, d.index, true);
        txlog::StreamState& ss = stream_state_[d.stream];
        d.issue = from(c, ss.time);
        ss.time = d.issue;
        d.start = c.after(d.issue);
        d.complete = c.after(d.start);
        d.bytes = c.var();
        append_large(run_.dmas, d);
        ++events_;
    }

    template <class C>
    void flag(C& c) {
        FlagChange fc;
        fc.owner = unit_id(c.var(), c);
        const std::uint64_t flag = c.var();
        if (flag > 0xFFFF) c.fail("flag id " + std::to_string(flag) + " out of range");
        fc.flag = static_cast<std::uint16_t>(flag);
        fc.old_value = c.zz();
        fc.new_value = static_cast<std::int64_t>(static_cast<std::uint64_t>(fc.old_value) + static_cast<std::uint64_t>(c.zz()));
        fc.time = from(c, g_.flag_time);
        g_.flag_time = fc.time;
        if (c.var()) fc.by_stream = stream_index(c, fc.by_index, false);
        append_large(run_.flags, fc);
        ++events_;
    }

    template <class C>
    void mem(C& c) {
        const std::uint64_t slot = c.var();
        if (slot >= txlog::kSlots) c.fail("chunk slot " + std::to_string(slot) + " out of range");
        txlog::ChunkSlot& s = slots_[slot];
        s.target = c.var();
        const std::uint32_t target = unit_id(s.target, c);
        if (target == kNone) c.fail("a transaction without its target");
        s.initiator = c.var();
        unit_id(s.initiator, c);
        const std::uint64_t bits = c.var();
        if (bits > 3) c.fail("transaction flags " + std::to_string(bits) + " out of range");
        s.write = bits & 1;
        s.known = bits & 2;
        s.addr = next_addr_[s.target] + static_cast<std::uint64_t>(c.zz());
        s.bytes = c.var();
        const Tick arrival = from(c, g_.mem_arrival), done = c.after(arrival);
        slot_stream_[slot] = kNone;
        s.index = 0;
        if (s.known) {
            slot_stream_[slot] = stream_index(c, s.index, false);
            s.chip = run_.streams[slot_stream_[slot]].chip;
            s.core = run_.streams[slot_stream_[slot]].core;
        }
        s.open(arrival, done, g_.mem_done);
        slot_open_[slot] = 1;
        transaction(c, s, slot_stream_[slot], arrival, done);
    }

    template <class C>
    void mem_next(C& c, unsigned slot) {
        if (!slot_open_[slot]) c.fail("chunk slot " + std::to_string(slot) + " used before a transaction opened it");
        txlog::ChunkSlot& s = slots_[slot];
        const Tick arrival = from(c, s.predict(g_.mem_done));
        const Tick latency = s.latency + static_cast<Tick>(c.zz());
        if (static_cast<std::int64_t>(latency) < 0) c.fail("a time earlier than the one it follows (the record is corrupt)");
        const Tick done = arrival + latency;
        s.next(arrival, done, g_.mem_done);
        unit_id(s.target, c);
        unit_id(s.initiator, c);
        transaction(c, s, slot_stream_[slot], arrival, done);
    }

    // What Mem and MemNext share: the transaction, kept or counted, and its HBM pieces.
    template <class C>
    void transaction(C& c, const txlog::ChunkSlot& s, std::uint32_t stream, Tick arrival, Tick done) {
        MemTxn m;
        m.target = unit_of_name_[s.target];
        m.initiator = s.initiator ? unit_of_name_[s.initiator] : kNone;
        m.write = s.write;
        m.addr = s.addr;
        m.bytes = s.bytes;
        m.arrival = arrival;
        m.done = done;
        m.stream = stream;
        m.index = s.index;
        next_addr_[s.target] = s.addr + s.bytes;
        g_.mem_arrival = arrival;
        g_.mem_done = done;
        ++events_;
        if (m.stream != kNone && m.index >= run_.streams[m.stream].life.size() && bad_mem_.empty())
            bad_mem_ = "a transaction for instruction " + std::to_string(m.index) + " past the end of " + run_.streams[m.stream].label();
        if (!keeps(m.target)) ++run_.mems_not_kept;
        else if (folding_ && run_.units[m.target].role == Role::Hbm) hbm_mems_.push_back(m);  // folded by block_done
        else append_large(run_.mems, m);
        if (const txlog::HbmLayout* l = layout_of_[s.target]) pieces(c, *l, m);
    }

    // The pieces of an HBM transaction (txlog::Pieces): derived by the header's rule.
    template <class C>
    void pieces(C& c, const txlog::HbmLayout& l, const MemTxn& m) {
        const std::uint64_t mode = c.var();
        if (mode == static_cast<std::uint64_t>(txlog::Pieces::Explicit)) return;
        if (mode > static_cast<std::uint64_t>(txlog::Pieces::Explicit)) c.fail("HBM pieces mode " + std::to_string(mode) + " out of range");
        const bool timed = mode & 1;
        const std::uint64_t passes = mode >= 2 ? 2 : 1;
        if (m.addr < l.base || l.pieces(m.addr, m.bytes) > txlog::kMaxDerivedPieces) c.fail("HBM pieces derived for a transaction outside its controller");
        const Tick granule_service = l.transfer_ps(l.interleave);
        l.for_each_piece(m.addr, m.bytes, [&](std::uint16_t channel, std::uint64_t bytes) {
            c.check();
            HbmPiece hp;
            hp.controller = m.target;
            hp.channel = channel;
            hp.bytes = bytes * passes;
            hp.done = m.done;
            if (timed) {
                const std::uint64_t before = c.var();
                if (before > m.done - m.arrival) c.fail("an HBM piece that ends before its transaction arrived");
                hp.done = m.done - before;
            }
            hp.start = l.start_of(m.arrival, hp.done, (bytes == l.interleave ? granule_service : l.transfer_ps(bytes)) * passes);
            append_large(run_.hbm_pieces, hp);
            ++events_;
        });
    }

    bool keeps(std::uint32_t unit) {
        if (unit >= keep_.size()) {  // units are added by Name records: extend the cache
            const std::size_t from = keep_.size();
            keep_.resize(run_.units.size());
            for (std::size_t u = from; u < keep_.size(); ++u) keep_[u] = keeps_transactions(run_.units[u]);
        }
        return keep_[unit];
    }

    template <class C>
    void hbm_piece(C& c) {
        HbmPiece hp;
        hp.controller = unit_id(c.var(), c);
        if (hp.controller == kNone) c.fail("an HBM piece without its controller");
        const std::uint64_t ch = c.var();
        if (ch > 0xFFFF) c.fail("channel " + std::to_string(ch) + " out of range");
        hp.channel = static_cast<std::uint16_t>(ch);
        hp.bytes = c.var();
        hp.start = from(c, g_.piece_start);
        g_.piece_start = hp.start;
        hp.done = c.after(hp.start);
        append_large(run_.hbm_pieces, hp);
        ++events_;
    }

    RunData& run_;
    StreamTable streams_;
    std::vector<std::uint32_t> unit_of_name_ = std::vector<std::uint32_t>(1, kNone);
    std::vector<char> used_;                            // by name id: referenced yet
    std::vector<txlog::HbmLayout> layouts_;
    std::vector<const txlog::HbmLayout*> layout_of_;    // by name id
    std::vector<std::uint64_t> next_addr_;              // by name id
    std::vector<txlog::StreamState> stream_state_;      // by stream
    txlog::GlobalState g_;
    std::vector<txlog::ChunkSlot> slots_ = std::vector<txlog::ChunkSlot>(txlog::kSlots);
    std::vector<std::uint32_t> slot_stream_;
    std::vector<char> slot_open_;
    std::vector<char> keep_;  // per unit: keeps_transactions
    std::uint64_t events_ = 0, names_used_ = 0;
    bool ended_ = false;
    bool folding_ = false;         // fold_hbm
    std::vector<MemTxn> hbm_mems_;  // folding: the block's HBM transactions, folded by block_done
    std::string bad_mem_;
};

// Decodes one block's payload (buf holds n bytes and kDecodePadding zeros after them); returns
// the records it held.
std::uint32_t decode_block(LogDecoder& dec, const std::vector<std::uint8_t>& buf, std::size_t n, const std::string& where) {
    FastCursor fast(buf.data(), n);
    std::uint32_t seen = 0;
    const LogDecoder::Mark mark = dec.mark();
    try {
        while (!fast.done()) {
            ++seen;
            dec.record(fast);
            if (fast.past_end()) throw Refused{};
        }
    } catch (const Refused&) {
        // Decode the block again, checked, from the state it began with (records are deltas
        // against what the records before them said): the error then names the place exactly.
        dec.rewind(mark);
        Cursor c(buf.data(), n, where);
        while (!c.done()) dec.record(c);
        c.fail("a record the fast decoder refused reads back without error (a bug of the reader)");
    }
    return seen;
}

// Decodes the log's blocks, from `offset` (after the header) to the end of the file.
void read_blocks(std::FILE* f, const std::string& path, std::uint64_t offset, RunData& run, LogDecoder& dec,
                 const std::function<void(double)>& progress) {
    std::error_code ec;
    const std::uintmax_t file_bytes = fs::file_size(path, ec);
    constexpr std::uint64_t kSample = 4u << 20;  // extrapolate array sizes from the first 4 MiB
    bool extrapolated = ec || file_bytes < 4 * kSample;
    const std::uint64_t first = offset;
    std::vector<std::uint8_t> block;
    for (;;) {
        if (!extrapolated && offset - first >= kSample) {
            dec.extrapolate(static_cast<double>(offset - first) / static_cast<double>(file_bytes - first));
            extrapolated = true;
        }
        std::uint8_t bh[txlog::kBlockHeaderBytes];
        const std::size_t got = std::fread(bh, 1, sizeof bh, f);
        if (got == 0) break;
        const std::string where = path + ": block at byte " + std::to_string(offset);
        if (got != sizeof bh) throw LogError(where + ": truncated block header");
        if (dec.ended()) throw LogError(where + ": data after the End record");
        const std::uint32_t n = trace::codec::get_u32(bh), records = trace::codec::get_u32(bh + 4), crc = trace::codec::get_u32(bh + 8);
        if (n > txlog::kMaxBlockPayload) throw LogError(where + ": a block of " + std::to_string(n) + " bytes is implausible");
        // Sized by what the file holds, not by what the header claims: a claim past the end is
        // refused before the buffer grows to it.
        if (!ec && n > file_bytes - std::min<std::uintmax_t>(file_bytes, offset + sizeof bh))
            throw LogError(where + ": truncated: the block needs " + std::to_string(n) + " bytes, the file holds " +
                           std::to_string(file_bytes - std::min<std::uintmax_t>(file_bytes, offset + sizeof bh)) + " after its header");
        block.resize(n + kDecodePadding);
        if (std::fread(block.data(), 1, n, f) != n) throw LogError(where + ": truncated: the block needs " + std::to_string(n) + " bytes");
        std::memset(block.data() + n, 0, kDecodePadding);
        if (trace::crc32(block.data(), n) != crc) throw LogError(where + ": checksum mismatch (the log is corrupt)");
        const std::uint32_t seen = decode_block(dec, block, n, where);
        if (seen != records) throw LogError(where + ": the header says " + std::to_string(records) + " records, the block holds " + std::to_string(seen));
        dec.block_done();
        offset += sizeof bh + n;
        if (progress && !ec && file_bytes > first) progress(static_cast<double>(offset - first) / static_cast<double>(file_bytes - first));
    }
    if (!dec.ended())
        throw LogError(path + ": byte " + std::to_string(offset) +
                       ": the log ends without its End record (the run that wrote it did not finish writing)");
    run.log_bytes = offset;
    run.records = dec.events();
}

// Every record's stream and index must exist (an index past the end would be a corrupt log).
void check_indices(const RunData& run, const std::string& path, const LogDecoder& dec) {
    for (const auto& o : run.unit_ops)
        if (o.index >= run.streams[o.stream].code.size()) throw LogError(path + ": a unit operation for instruction " + std::to_string(o.index) + " past the end of " + run.streams[o.stream].label());
    for (const auto& d : run.dmas)
        if (d.index >= run.streams[d.stream].code.size()) throw LogError(path + ": a DMA for instruction " + std::to_string(d.index) + " past the end of " + run.streams[d.stream].label());
    for (const auto& fc : run.flags)
        if (fc.by_stream != kNone && fc.by_index >= run.streams[fc.by_stream].code.size()) throw LogError(path + ": a flag raised by instruction " + std::to_string(fc.by_index) + " past the end of " + run.streams[fc.by_stream].label());
    if (!dec.bad_mem().empty()) throw LogError(path + ": " + dec.bad_mem());
}

// The run's end time from the End record, read before the log is decoded (so that HBM traffic
// can be folded on the series' axis as it is read): the block headers are walked (each says its
// length), the last block is read and its CRC checked, and its last record, which in a complete
// log is the End record (type, end time, status: varints), is read backwards from its last byte.
// Nothing if the log does not look so: the pieces are then held, and the decoder, which reads
// everything again, names what is wrong. Leaves the file at `offset`.
std::optional<Tick> end_before_decoding(std::FILE* f, std::uint64_t offset) {
    std::optional<Tick> found;
    std::uint64_t at = offset, last = 0;
    std::uint32_t last_n = 0, last_crc = 0;
    bool any = false;
    for (;;) {
        std::uint8_t bh[txlog::kBlockHeaderBytes];
        if (std::fseek(f, static_cast<long>(at), SEEK_SET) != 0 || std::fread(bh, 1, sizeof bh, f) != sizeof bh) break;
        const std::uint32_t n = trace::codec::get_u32(bh);
        if (n > txlog::kMaxBlockPayload) break;
        last = at, last_n = n, last_crc = trace::codec::get_u32(bh + 8), any = true;
        at += sizeof bh + n;
    }
    if (any && last_n >= 3) {
        std::vector<std::uint8_t> b(last_n);
        if (std::fseek(f, static_cast<long>(last + txlog::kBlockHeaderBytes), SEEK_SET) == 0 &&
            std::fread(b.data(), 1, last_n, f) == last_n && trace::crc32(b.data(), last_n) == last_crc) {
            // [.. | End | end time: bytes with the high bit set, then one without | status < 0x80]
            std::size_t p = last_n - 1;  // the status
            if (b[p] < 0x80 && b[p - 1] < 0x80) {
                std::size_t q = p - 1;  // the end time's last byte; its first is after the type
                while (q > 0 && b[q - 1] >= 0x80) --q;
                if (q > 0 && b[q - 1] == static_cast<std::uint8_t>(txlog::Rec::End) && p - q <= 10) {
                    Tick end = 0;
                    for (std::size_t k = p; k-- > q;) end = (end << 7) | (b[k] & 0x7F);
                    found = end;
                }
            }
        }
    }
    std::fseek(f, static_cast<long>(offset), SEEK_SET);
    return found;
}

}  // namespace

RunData load_run(const std::string& out_dir, const LoadOptions& opt) { return load_run(out_dir, {}, opt); }

RunData load_run(const std::string& out_dir, const std::function<void(double)>& progress, const LoadOptions& opt) {
    RunData run;
    run.dir = out_dir;
    run.files_dir = out_dir;
    const std::string path = (fs::path(out_dir) / "txlog.bin").string();
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw LogError(path + ": cannot open the transaction log (was the run made with --no-txlog, or is this not a sim_main output folder?)");
    std::uint8_t h[16];
    if (std::fread(h, 1, sizeof h, f.get()) != sizeof h || std::memcmp(h, txlog::kMagic, 8) != 0)
        throw LogError(path + ": byte 0: expected the magic XPUTXLOG of a transaction log");
    if (const std::uint32_t version = trace::codec::get_u32(h + 8); version != txlog::kVersion)
        throw LogError(path + ": byte 8: transaction log format version " + std::to_string(version) + ", expected version " +
                       std::to_string(txlog::kVersion) + " (this analysis reads no other: re-run the simulation with this build to write the log again)");
    const std::uint32_t meta_bytes = trace::codec::get_u32(h + 12);
    if (meta_bytes > txlog::kMaxMetaBytes) throw LogError(path + ": byte 12: a header of " + std::to_string(meta_bytes) + " bytes is implausible");
    std::string meta(meta_bytes, '\0');
    if (std::fread(meta.data(), 1, meta_bytes, f.get()) != meta_bytes) throw LogError(path + ": the header is truncated");
    const std::vector<txlog::HbmLayout> hbm = parse_meta(run, meta, path);

    TraceLoader trace(run, (fs::path(out_dir) / "txlog.trace.bin").string());
    LogDecoder dec(run, hbm);
    std::optional<Tick> end;
    if (!opt.keep_hbm_records) end = end_before_decoding(f.get(), 16 + meta_bytes);
    if (end) dec.fold_hbm(*end, opt.series_buckets);
    std::exception_ptr log_error;
    try {
        read_blocks(f.get(), path, 16 + meta_bytes, run, dec, progress);
    } catch (const LogError&) {
        log_error = std::current_exception();
    }
    trace.finish();  // a trace error first: the trace is the log's context (and was read first)
    if (log_error) std::rethrow_exception(log_error);
    if (end && *end != run.end)  // read backwards from a complete log's last bytes: a bug if it differs
        throw LogError(path + ": the End record says " + std::to_string(run.end) + " ps, read before decoding " + std::to_string(*end) + " ps");
    check_indices(run, path, dec);
    assign_vmems(run);
    read_unit_config(run, (fs::path(out_dir) / "platform.yaml").string());
    return run;
}

}  // namespace xpu::analysis
