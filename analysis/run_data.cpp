#include "analysis/run_data.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "analysis/txlog_format.h"
#include "traces/crc32.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

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

std::string format_meta(const std::map<std::string, std::string>& kv, const std::vector<Unit>& units) {
    std::ostringstream os;
    for (const auto& [k, v] : kv) os << k << ' ' << v << '\n';
    for (const auto& u : units)
        os << "unit " << u.path << ' ' << u.kind << ' ' << u.chip << ' ' << u.peak_gbps << ' ' << u.capacity << '\n';
    return os.str();
}

namespace {

// Decodes the records of one block; every read is bounds-checked and names the place.
class Cursor {
public:
    Cursor(const std::uint8_t* p, std::size_t n, const std::string& where) : p_(p), end_(p + n), begin_(p), where_(where) {}
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

struct FileCloser {
    void operator()(std::FILE* f) const {
        if (f) std::fclose(f);
    }
};

void parse_meta(RunData& run, const std::string& text, const std::string& path) {
    std::istringstream is(text);
    std::string line;
    int n = 0;
    while (std::getline(is, line)) {
        ++n;
        if (line.empty()) continue;
        const auto sp = line.find(' ');
        const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (key == "unit") {
            std::istringstream us(value);
            Unit u;
            if (!(us >> u.path >> u.kind >> u.chip >> u.peak_gbps >> u.capacity))
                throw LogError(path + ": header line " + std::to_string(n) +
                               ": expected 'unit PATH KIND CHIP PEAK_GBPS CAPACITY'");
            run.units.push_back(u);
        } else {
            run.meta[key] = value;
        }
    }
}

void load_trace(RunData& run, const std::string& path) {
    if (!fs::exists(path))
        throw LogError(path + ": missing: the analysis needs the copy of the trace that sim_main writes beside txlog.bin");
    try {
        trace::TraceFile tf = trace::TraceFile::open(path);
        run.strings = tf.strings();
        for (std::size_t s = 0; s < tf.streams().size(); ++s) {
            Stream st;
            st.chip = tf.streams()[s].chip;
            st.core = tf.streams()[s].core;
            st.code.resize(tf.streams()[s].instructions);
            trace::StreamReader r(tf, s);
            std::size_t at = 0;
            while (at < st.code.size()) {
                const std::size_t got = r.read(st.code.data() + at, st.code.size() - at);
                if (!got) break;
                at += got;
            }
            st.code.resize(at);
            st.life.resize(at);
            run.streams.push_back(std::move(st));
        }
    } catch (const trace::TraceError& e) {
        throw LogError(e.what());
    }
}

}  // namespace

RunData load_run(const std::string& out_dir) {
    RunData run;
    run.dir = out_dir;
    const std::string path = (fs::path(out_dir) / "txlog.bin").string();
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw LogError(path + ": cannot open the transaction log (was the run made with --no-txlog, or is this not a sim_main output folder?)");
    std::uint8_t h[16];
    if (std::fread(h, 1, sizeof h, f.get()) != sizeof h || std::memcmp(h, txlog::kMagic, 8) != 0)
        throw LogError(path + ": byte 0: expected the magic XPUTXLOG of a transaction log");
    if (trace::codec::get_u32(h + 8) != txlog::kVersion)
        throw LogError(path + ": byte 8: version " + std::to_string(trace::codec::get_u32(h + 8)) + ", this analysis reads version " +
                       std::to_string(txlog::kVersion));
    const std::uint32_t meta_bytes = trace::codec::get_u32(h + 12);
    if (meta_bytes > txlog::kMaxMetaBytes) throw LogError(path + ": byte 12: a header of " + std::to_string(meta_bytes) + " bytes is implausible");
    std::string meta(meta_bytes, '\0');
    if (std::fread(meta.data(), 1, meta_bytes, f.get()) != meta_bytes) throw LogError(path + ": the header is truncated");
    parse_meta(run, meta, path);
    load_trace(run, (fs::path(out_dir) / "txlog.trace.bin").string());

    // Log names -> unit indices (names of units not in the header are added as kind "?").
    std::vector<std::uint32_t> unit_of_name(1, kNone);
    auto unit_id = [&](std::uint64_t name, Cursor& c) -> std::uint32_t {
        if (name == 0) return kNone;
        if (name >= unit_of_name.size()) c.fail("a name id used before its Name record");
        return unit_of_name[name];
    };
    auto stream_id = [&](std::uint64_t chip, std::uint64_t core, Cursor& c) {
        const std::uint32_t s = chip <= 0xFFFF && core <= 0xFFFF ? run.stream_of(static_cast<std::uint16_t>(chip), static_cast<std::uint16_t>(core)) : kNone;
        if (s == kNone) c.fail("a record for chip " + std::to_string(chip) + " core " + std::to_string(core) + ", which the trace has no stream for");
        return s;
    };

    std::uint64_t offset = 16 + meta_bytes;
    std::vector<std::uint8_t> block;
    bool ended = false;
    for (;;) {
        std::uint8_t bh[txlog::kBlockHeaderBytes];
        const std::size_t got = std::fread(bh, 1, sizeof bh, f.get());
        if (got == 0) break;
        const std::string where = path + ": block at byte " + std::to_string(offset);
        if (got != sizeof bh) throw LogError(where + ": truncated block header");
        if (ended) throw LogError(where + ": data after the End record");
        const std::uint32_t n = trace::codec::get_u32(bh), records = trace::codec::get_u32(bh + 4), crc = trace::codec::get_u32(bh + 8);
        if (n > txlog::kMaxBlockPayload) throw LogError(where + ": a block of " + std::to_string(n) + " bytes is implausible");
        block.resize(n);
        if (std::fread(block.data(), 1, n, f.get()) != n) throw LogError(where + ": truncated: the block needs " + std::to_string(n) + " bytes");
        if (trace::crc32(block.data(), n) != crc) throw LogError(where + ": checksum mismatch (the log is corrupt)");
        Cursor c(block.data(), n, where);
        std::uint32_t seen = 0;
        while (!c.done()) {
            const std::uint8_t type = c.byte();
            ++seen;
            switch (static_cast<txlog::Rec>(type)) {
                case txlog::Rec::Name: {
                    const std::uint64_t id = c.var(), len = c.var();
                    if (id != unit_of_name.size()) c.fail("Name records must number their ids 1, 2, 3...");
                    if (len > 4096) c.fail("a name longer than 4096 bytes");
                    const std::string name = c.bytes(static_cast<std::size_t>(len));
                    std::uint32_t u = run.unit_named(name);
                    if (u == kNone) {
                        run.units.push_back({name, "?", -1, 0, 0});
                        u = static_cast<std::uint32_t>(run.units.size() - 1);
                    }
                    unit_of_name.push_back(u);
                    break;
                }
                case txlog::Rec::Instr: {
                    const std::uint64_t chip = c.var(), core = c.var();
                    const std::uint32_t s = stream_id(chip, core, c);
                    const std::uint64_t index = c.var();
                    Stream& st = run.streams[s];
                    if (index >= st.life.size()) c.fail("instruction " + std::to_string(index) + " of " + st.label() + ", which has " + std::to_string(st.life.size()));
                    Life& l = st.life[index];
                    l.arrival = c.var();
                    l.ready = c.after(l.arrival);
                    l.issue = c.after(l.ready);
                    l.complete = c.after(l.issue);
                    l.seen = true;
                    break;
                }
                case txlog::Rec::UnitOp: {
                    UnitOp o;
                    o.unit = unit_id(c.var(), c);
                    const std::uint64_t chip = c.var(), core = c.var();
                    o.stream = stream_id(chip, core, c);
                    o.index = c.var();
                    const std::uint64_t op = c.var();
                    if (op > 0xFF || !is_valid_opcode(static_cast<std::uint8_t>(op))) c.fail("unknown opcode " + std::to_string(op));
                    o.op = static_cast<Opcode>(op);
                    o.accept = c.var();
                    o.start = c.after(o.accept);
                    o.end = c.after(o.start);
                    o.complete = c.after(o.end);
                    run.unit_ops.push_back(o);
                    break;
                }
                case txlog::Rec::Dma: {
                    Dma d;
                    d.engine = unit_id(c.var(), c);
                    const std::uint64_t chip = c.var(), core = c.var();
                    d.stream = stream_id(chip, core, c);
                    d.index = c.var();
                    d.issue = c.var();
                    d.start = c.after(d.issue);
                    d.complete = c.after(d.start);
                    d.bytes = c.var();
                    run.dmas.push_back(d);
                    break;
                }
                case txlog::Rec::Flag: {
                    FlagChange fc;
                    fc.owner = unit_id(c.var(), c);
                    const std::uint64_t flag = c.var();
                    if (flag > 0xFFFF) c.fail("flag id " + std::to_string(flag) + " out of range");
                    fc.flag = static_cast<std::uint16_t>(flag);
                    fc.old_value = c.zz();
                    fc.new_value = c.zz();
                    fc.time = c.var();
                    if (c.var()) {
                        const std::uint64_t chip = c.var(), core = c.var();
                        fc.by_stream = stream_id(chip, core, c);
                        fc.by_index = c.var();
                    }
                    run.flags.push_back(fc);
                    break;
                }
                case txlog::Rec::Mem: {
                    MemTxn m;
                    m.target = unit_id(c.var(), c);
                    m.initiator = unit_id(c.var(), c);
                    m.write = c.var() != 0;
                    m.addr = c.var();
                    m.bytes = c.var();
                    m.arrival = c.var();
                    m.done = c.after(m.arrival);
                    if (c.var()) {
                        const std::uint64_t chip = c.var(), core = c.var();
                        m.stream = stream_id(chip, core, c);
                        m.index = c.var();
                    }
                    run.mems.push_back(m);
                    break;
                }
                case txlog::Rec::HbmPiece: {
                    HbmPiece hp;
                    hp.controller = unit_id(c.var(), c);
                    if (hp.controller == kNone) c.fail("an HBM piece without its controller");
                    const std::uint64_t ch = c.var();
                    if (ch > 0xFFFF) c.fail("channel " + std::to_string(ch) + " out of range");
                    hp.channel = static_cast<std::uint16_t>(ch);
                    hp.bytes = c.var();
                    hp.start = c.var();
                    hp.done = c.after(hp.start);
                    run.hbm_pieces.push_back(hp);
                    break;
                }
                case txlog::Rec::End:
                    run.end = c.var();
                    run.status = static_cast<unsigned>(c.var());
                    ended = true;
                    if (!c.done()) c.fail("records after the End record");
                    break;
                default:
                    c.fail("unknown record type " + std::to_string(type));
            }
        }
        if (seen != records) throw LogError(where + ": the header says " + std::to_string(records) + " records, the block holds " + std::to_string(seen));
        run.records += records;
        offset += sizeof bh + n;
    }
    if (!ended)
        throw LogError(path + ": byte " + std::to_string(offset) +
                       ": the log ends without its End record (the run that wrote it did not finish writing)");
    run.log_bytes = offset;
    // Every record's stream and index must exist (an index past the end would be a corrupt log).
    for (const auto& o : run.unit_ops)
        if (o.index >= run.streams[o.stream].code.size()) throw LogError(path + ": a unit operation for instruction " + std::to_string(o.index) + " past the end of " + run.streams[o.stream].label());
    for (const auto& d : run.dmas)
        if (d.index >= run.streams[d.stream].code.size()) throw LogError(path + ": a DMA for instruction " + std::to_string(d.index) + " past the end of " + run.streams[d.stream].label());
    for (const auto& fc : run.flags)
        if (fc.by_stream != kNone && fc.by_index >= run.streams[fc.by_stream].code.size()) throw LogError(path + ": a flag raised by instruction " + std::to_string(fc.by_index) + " past the end of " + run.streams[fc.by_stream].label());
    for (const auto& m : run.mems)
        if (m.stream != kNone && m.index >= run.streams[m.stream].code.size()) throw LogError(path + ": a transaction for instruction " + std::to_string(m.index) + " past the end of " + run.streams[m.stream].label());
    return run;
}

}  // namespace xpu::analysis
