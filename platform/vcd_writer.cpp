#include "platform/vcd_writer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <queue>
#include <stdexcept>

#include "platform/builder.h"
#include "traces/issue_stall.h"
#include "traces/vmem_liveness.h"

namespace xpu::platform {

// One value change of a channel, in host order until sorted: 16 bytes. `key` packs the
// channel (24 bits), the kind (2 bits) and the value (38 bits, offset binary), so that
// (t, key) is a total order: any sort, and any split into spilled runs, gives the same file.
struct VcdWriter::Record {
    Tick t;
    std::uint64_t key;
    std::uint32_t ch() const { return static_cast<std::uint32_t>(key >> 40); }
    std::uint8_t kind() const { return static_cast<std::uint8_t>((key >> 38) & 3); }
    std::int64_t v() const { return static_cast<std::int64_t>(key & ((std::uint64_t(1) << 38) - 1)) - (std::int64_t(1) << 37); }
    bool operator<(const Record& o) const { return t != o.t ? t < o.t : key < o.key; }
};

namespace {

enum RecordKind : std::uint8_t {
    kAdd,      // counter += v
    kSet,      // level = v
    kOpStart,  // an op with opcode v starts occupying the unit
    kOpEnd,    // ... and stops
};
constexpr std::int64_t kMaxRecordValue = (std::int64_t(1) << 37) - 1;  // larger deltas: several records
constexpr std::uint32_t kMaxChannels = 1u << 24;

enum class ChannelType : std::uint8_t { Level, Counter, Ops };
enum class Derive : std::uint8_t { Value, NonZero };
enum class BlockType : std::uint8_t { Core, Unit, Dma, Memory, Link };
enum Filter : std::uint8_t { kNoFilter = 0, kOpcodes = 1, kStalls = 2 };

// GTKWave trace flags (gtkwave's analyzer.h).
constexpr unsigned kTrHex = 0x2, kTrDec = 0x4, kTrBin = 0x8, kTrRjustify = 0x20, kTrBlank = 0x200,
                   kTrCollapsed = 0x1000, kTrFtranslated = 0x2000, kTrAnalogStep = 0x8000,
                   kTrAnalogBlankStretch = 0x20000, kTrClosed = 0x400000, kTrGrpBegin = 0x800000,
                   kTrGrpEnd = 0x1000000;

// "mxu10" after "mxu9": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            std::size_t i2 = i, j2 = j;
            while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
            while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
            std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
            na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
            nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
            if (na.size() != nb.size()) return na.size() < nb.size();
            if (na != nb) return na < nb;
            i = i2;
            j = j2;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

bool glob_match(const char* p, const char* s) {
    const char *star = nullptr, *retry = nullptr;
    while (*s) {
        if (*p == '*') {
            star = ++p;
            retry = s;
        } else if (*p == '?' || *p == *s) {
            ++p;
            ++s;
        } else if (star) {
            p = star;
            s = ++retry;
        } else {
            return false;
        }
    }
    while (*p == '*') ++p;
    return *p == 0;
}

// The key of a core's instruction events: chip << 16 | core.
std::uint32_t core_key(int chip, int core) {
    return (static_cast<std::uint32_t>(chip) << 16) | static_cast<std::uint16_t>(core);
}

std::string vcd_id(std::size_t i) {
    std::string id;
    do {
        id += static_cast<char>('!' + i % 94);
        i /= 94;
    } while (i);
    return id;
}

std::string stem_of(const std::string& path) {
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".vcd") == 0) return path.substr(0, path.size() - 4);
    return path;
}

std::string absolute(const std::string& p) {
    std::error_code ec;
    auto a = std::filesystem::absolute(p, ec);
    return ec ? p : a.lexically_normal().string();
}

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
    throw std::runtime_error("cannot write " + what + " " + path + ": " + std::strerror(errno));
}

// Writes `text` to PATH.tmp and renames it to PATH.
void write_small_file(const std::string& path, const std::string& text, const char* what) {
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) io_error(what, tmp);
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        io_error(what, path);
    }
}

}  // namespace

// Buffered output with cheap number formatting.
class VcdOut {
public:
    VcdOut(const std::string& path, const char* what) : path_(path), what_(what), buf_(kChunk + kSlack) {
        f_ = std::fopen(path.c_str(), "wb");
        if (!f_) io_error(what_, path_);
    }
    ~VcdOut() {
        if (f_) std::fclose(f_);
    }
    void str(const std::string& s) {
        if (s.size() > kSlack) {
            flush();
            write(s.data(), s.size());
            return;
        }
        std::memcpy(&buf_[n_], s.data(), s.size());
        n_ += s.size();
        check();
    }
    void str(const char* s) { str(std::string(s)); }
    void ch(char c) {
        buf_[n_++] = c;
        check();
    }
    void u64(std::uint64_t v) {
        char tmp[24];
        int k = 0;
        do {
            tmp[k++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v);
        while (k) buf_[n_++] = tmp[--k];
        check();
    }
    void bin(std::uint64_t v) {  // "b101", "b0"
        buf_[n_++] = 'b';
        int top = v ? 63 - __builtin_clzll(v) : 0;
        for (int b = top; b >= 0; --b) buf_[n_++] = static_cast<char>('0' + ((v >> b) & 1));
        check();
    }
    void close() {
        flush();
        std::FILE* f = f_;
        f_ = nullptr;
        if (std::fclose(f) != 0) io_error(what_, path_);
    }

private:
    static constexpr std::size_t kChunk = 1 << 20, kSlack = 4096;  // one value line < kSlack
    void check() {
        if (n_ >= kChunk) flush();
    }
    void write(const char* p, std::size_t n) {
        if (n && std::fwrite(p, 1, n, f_) != n) io_error(what_, path_);
    }
    void flush() {
        write(buf_.data(), n_);
        n_ = 0;
    }
    std::string path_;
    const char* what_;
    std::FILE* f_ = nullptr;
    std::vector<char> buf_;
    std::size_t n_ = 0;
};


struct VcdWriter::Channel {
    ChannelType type = ChannelType::Counter;
    bool wanted = false;
    int sig_value = -1, sig_nonzero = -1;  // selected derived signals, or -1
    // State at the window start, accumulated from events before it.
    std::int64_t init = 0;
    std::vector<std::uint32_t> init_ops;  // Ops: per opcode, ops straddling the window start
    std::uint8_t init_last_op = 0;
    Tick init_last_op_time = 0;
    // Level: the value at the latest time reported, held until time moves on (dedupe).
    bool pending = false;
    Tick pend_t = 0;
    std::int64_t pend_v = 0, last_v = 0;
};

struct VcdWriter::Signal {
    std::string name;  // full dotted name
    std::string scope;  // name without its leaf: the block's, or a sub-scope of it (hbm.ch07)
    std::string leaf;
    bool sub = false;   // in the block's closed sub-group of the save file (HBM channels)
    unsigned width = 1;
    std::uint32_t block = 0, ch = 0;
    Derive derive = Derive::Value;
    bool selected = false;
    unsigned flags = 0;
    std::uint8_t filter = kNoFilter;
    bool analog = false;
    std::string id;
    std::uint64_t last = 0;  // output: last value written
    std::string gtkw_name() const {
        return width > 1 ? name + "[" + std::to_string(width - 1) + ":0]" : name;
    }
};

struct VcdWriter::Block {
    std::string name;
    BlockType type = BlockType::Core;
    unsigned chip = 0;
    int group = 0, kind_order = 0;
    std::string parent;
    std::uint32_t ch[3] = {0, 0, 0};
    std::uint32_t nch = 0;
    bool allocation = false;             // Memory: has bytes_allocated (by liveness)
    std::uint32_t hbm_ch0 = 0;           // Memory: its channels' signals: requests hbm_ch0 + 2k, bytes + 1
    std::uint32_t hbm_channels = 0;      // Memory: interleaved channels (0: none)
    std::vector<std::uint32_t> sigs;
    bool wanted = false;
    const XpuModule* module = nullptr;
    // Units: the op reported last, held so that back-to-back ops merge into one interval.
    bool op_pending = false, op_selected = false;
    Tick op_start = 0, op_end = 0;
    std::uint8_t op = 0;
};

// A stream whose VMEM writes and reads drive a Vmem's bytes_allocated: its liveness (as the
// core reports its instructions, in program order) and the times of its VMEM instructions.
// A range closed by an overwrite becomes records as soon as the times of its writer and last
// reader are known (a DMA's when the DMA reports); instructions no live or pending range names
// any more are forgotten. Memory: the live ranges, the pending ones, and the VMEM instructions
// since the oldest instruction a live range names.
struct VcdWriter::LiveStream {
    explicit LiveStream(std::uint16_t c) : chip(c), live(c) {}
    std::uint16_t chip;
    trace::VmemLiveness live;
    std::uint32_t ch = 0;  // the Vmem's bytes_allocated channel
    struct Op {
        std::uint64_t index;
        Tick start, end;  // write begins (vst issue, DMA start); completes (vld/vst complete, DMA complete)
    };
    std::deque<Op> ops;  // in index order; DMAs' times filled when the DMA reports
    std::vector<Op> early;  // DMAs reported before their instruction (not expected; kept safe)
    std::vector<trace::VmemLive> closed, pending;  // closed: scratch; pending: times not all known
    std::size_t prune_at = 4096;
    static constexpr Tick kUnknown = std::numeric_limits<Tick>::max();
    Op* find(std::uint64_t index) {
        auto it = std::lower_bound(ops.begin(), ops.end(), index, [](const Op& o, std::uint64_t i) { return o.index < i; });
        return it != ops.end() && it->index == index ? &*it : nullptr;
    }
};

struct VcdWriter::CoreState {
    Block* block = nullptr;
    Tick cycle = 1;
    Tick prev_issue = 0;
    bool has_prev = false;
    std::uint32_t opcode_ch = 0, stall_ch = 0, iq_ch = 0;
    bool opcode = false, stall = false, iq = false;
    // Issue queue depth: arrival and issue times not yet passed (each sequence is in order).
    std::deque<Tick> arrivals, issues;
    std::int64_t depth = 0;
};

void VcdOptions::set_window_ns(const std::string& text) {
    auto bad = [&](const char* why) {
        return std::invalid_argument("--vcd-window '" + text + "': " + why + " (expected START_NS:END_NS, e.g. 1000:5000)");
    };
    std::size_t colon = text.find(':');
    if (colon == std::string::npos) throw bad("no ':'");
    auto num = [&](const std::string& s, Tick dflt) -> Tick {
        if (s.empty()) return dflt;
        std::size_t used = 0;
        double v = 0;
        try {
            v = std::stod(s, &used);
        } catch (const std::exception&) {
            throw bad("not a number");
        }
        if (used != s.size() || !std::isfinite(v)) throw bad("not a number");
        if (v < 0) throw bad("negative time");
        if (v * 1000.0 >= 1.8e19) throw bad("time too large");
        return static_cast<Tick>(v * 1000.0 + 0.5);
    };
    Tick a = num(text.substr(0, colon), 0);
    Tick b = num(text.substr(colon + 1), std::numeric_limits<Tick>::max());
    if (a >= b) throw bad("empty window (start >= end)");
    start = a;
    end = b;
}

namespace {

std::uint32_t new_channel(std::vector<VcdWriter::Channel>& channels, ChannelType t) {
    VcdWriter::Channel c;
    c.type = t;
    if (channels.size() >= kMaxChannels) throw std::invalid_argument("VCD: too many signals in this platform");
    channels.push_back(c);
    return static_cast<std::uint32_t>(channels.size() - 1);
}

void new_signal(std::vector<VcdWriter::Signal>& signals, VcdWriter::Block& b, std::size_t bi, std::uint32_t ch,
                const char* leaf, unsigned width, Derive d, unsigned flags, std::uint8_t filter, bool analog) {
    VcdWriter::Signal s;
    s.name = b.name + "." + leaf;
    s.scope = b.name;
    s.leaf = leaf;
    s.width = width;
    s.block = static_cast<std::uint32_t>(bi);
    s.ch = ch;
    s.derive = d;
    s.flags = flags;
    s.filter = filter;
    s.analog = analog;
    b.sigs.push_back(static_cast<std::uint32_t>(signals.size()));
    signals.push_back(std::move(s));
}

}  // namespace

VcdWriter::VcdWriter(const Platform& platform, VcdOptions opts) : opts_(std::move(opts)) {
    check_output();
    declare_blocks(platform);
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) declare_signals(bi);
    select_signals();
    follow_cores();
    follow_liveness();
    buf_cap_ = std::max<std::size_t>(opts_.memory_limit / sizeof(Record), 16);
    // Address space for the whole buffer now (pages are only backed as records fill them): no
    // reallocation, so memory stays 16 B per record up to the limit.
    buf_.reserve(buf_cap_);
}

// Says now, not after the run, that the window is empty or the output cannot be written.
void VcdWriter::check_output() const {
    if (opts_.start >= opts_.end) throw std::invalid_argument("VCD window: start must be before end");
    if (opts_.path.empty()) throw std::invalid_argument("VCD output path is empty");
    const std::string probe = opts_.path + ".tmp";
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    if (!f) io_error("VCD file", opts_.path);
    std::fclose(f);
    std::remove(probe.c_str());
}

// One block per module that offers waveforms (XpuModule::waveforms), in display order: per
// chip, the cores (scalar core, then its units), DMA engines, memories (HBM, then VMEM), links
// (after the chip they leave).
void VcdWriter::declare_blocks(const Platform& platform) {
    for (const XpuModule* m : platform.modules()) {
        const Waveforms w = m->waveforms();
        Block b;
        b.name = m->name();
        b.module = m;
        b.kind_order = w.order;
        switch (w.set) {
            case WaveSet::Issue: b.type = BlockType::Core, b.group = 0; break;
            case WaveSet::Ops: b.type = BlockType::Unit, b.group = 0; break;
            case WaveSet::Queue: b.type = BlockType::Dma, b.group = 1; break;
            case WaveSet::Traffic: b.type = BlockType::Memory, b.group = 2; break;
            case WaveSet::Wire: b.type = BlockType::Link, b.group = 3; break;
            case WaveSet::None: continue;
        }
        b.hbm_channels = b.type == BlockType::Memory ? w.channels : 0;
        b.allocation = b.type == BlockType::Memory && w.allocation;
        const int chip = m->chip() >= 0 ? m->chip() : m->facts().from_chip;
        b.chip = chip >= 0 ? static_cast<unsigned>(chip) : 0xFFFFFFFFu;
        if (b.group == 0) b.parent = b.name.substr(0, b.name.rfind('.'));
        blocks_.push_back(std::move(b));
    }
    std::stable_sort(blocks_.begin(), blocks_.end(), [](const Block& a, const Block& b) {
        if (a.chip != b.chip) return a.chip < b.chip;
        if (a.group != b.group) return a.group < b.group;
        if (a.parent != b.parent) return natural_less(a.parent, b.parent);
        if (a.kind_order != b.kind_order) return a.kind_order < b.kind_order;
        return natural_less(a.name, b.name);
    });
}

// The channels and signals of block `bi`, by the set of waveforms it offers.
void VcdWriter::declare_signals(std::size_t bi) {
    constexpr unsigned hex_names = kTrHex | kTrRjustify | kTrFtranslated;
    constexpr unsigned analog_dec = kTrAnalogStep | kTrDec | kTrRjustify;
    constexpr unsigned binary = kTrBin | kTrRjustify;
    auto sig = [&](std::uint32_t ch, const char* leaf, unsigned width, Derive d, unsigned flags, std::uint8_t filter,
                   bool analog) { new_signal(signals_, blocks_[bi], bi, ch, leaf, width, d, flags, filter, analog); };
    Block& b = blocks_[bi];
    switch (b.type) {
        case BlockType::Core: {
            const std::uint32_t op = new_channel(channels_, ChannelType::Level), st = new_channel(channels_, ChannelType::Level),
                                iq = new_channel(channels_, ChannelType::Counter);
            sig(op, "opcode", 8, Derive::Value, hex_names, kOpcodes, false);
            sig(st, "stall", 3, Derive::Value, hex_names, kStalls, false);
            sig(iq, "iq_depth", 16, Derive::Value, analog_dec, kNoFilter, true);
            blocks_[bi].ch[0] = op, blocks_[bi].ch[1] = st, blocks_[bi].nch = 2;  // (CoreState finds all three by signal)
            break;
        }
        case BlockType::Unit: {
            const std::uint32_t ops = new_channel(channels_, ChannelType::Ops);
            sig(ops, "busy", 1, Derive::NonZero, binary, kNoFilter, false);
            sig(ops, "op", 8, Derive::Value, hex_names, kOpcodes, false);
            blocks_[bi].ch[0] = ops, blocks_[bi].nch = 1;
            break;
        }
        case BlockType::Dma: {
            const std::uint32_t q = new_channel(channels_, ChannelType::Counter), f = new_channel(channels_, ChannelType::Counter);
            sig(q, "queued", 16, Derive::Value, kTrDec | kTrRjustify, kNoFilter, false);
            sig(f, "inflight_bytes", 64, Derive::Value, analog_dec, kNoFilter, true);
            blocks_[bi].ch[0] = q, blocks_[bi].ch[1] = f, blocks_[bi].nch = 2;
            break;
        }
        case BlockType::Memory: {
            const std::uint32_t r = new_channel(channels_, ChannelType::Counter), s = new_channel(channels_, ChannelType::Counter);
            sig(r, "requests", 32, Derive::Value, analog_dec, kNoFilter, true);
            sig(s, "bytes_served", 64, Derive::Value, analog_dec, kNoFilter, true);
            blocks_[bi].ch[0] = r, blocks_[bi].ch[1] = s, blocks_[bi].nch = 2;
            if (b.hbm_channels) declare_memory_channels(bi);
            if (blocks_[bi].allocation) {
                const std::uint32_t a = new_channel(channels_, ChannelType::Counter);
                sig(a, "bytes_allocated", 64, Derive::Value, analog_dec, kNoFilter, true);
                blocks_[bi].ch[2] = a, blocks_[bi].nch = 3;
            }
            break;
        }
        case BlockType::Link: {
            const std::uint32_t o = new_channel(channels_, ChannelType::Counter);
            sig(o, "busy", 1, Derive::NonZero, binary, kNoFilter, false);
            sig(o, "occupancy", 64, Derive::Value, analog_dec, kNoFilter, true);
            blocks_[bi].ch[0] = o, blocks_[bi].nch = 1;
            break;
        }
    }
}

// A memory's interleaved channels, each in a sub-scope: xpu.chip0.hbm.ch07.requests (digits
// for the largest channel number, at least two).
void VcdWriter::declare_memory_channels(std::size_t bi) {
    constexpr unsigned analog_dec = kTrAnalogStep | kTrDec | kTrRjustify;
    const unsigned n = blocks_[bi].hbm_channels;
    const std::string name = blocks_[bi].name;
    const std::size_t digits = std::max<std::size_t>(2, std::to_string(n - 1).size());
    for (unsigned k = 0; k < n; ++k) {
        std::string num = std::to_string(k);
        num.insert(0, digits - num.size(), '0');
        const std::uint32_t cr = new_channel(channels_, ChannelType::Counter), cb = new_channel(channels_, ChannelType::Counter);
        if (k == 0) blocks_[bi].hbm_ch0 = cr;
        new_signal(signals_, blocks_[bi], bi, cr, "requests", 32, Derive::Value, analog_dec, kNoFilter, true);
        new_signal(signals_, blocks_[bi], bi, cb, "bytes_served", 64, Derive::Value, analog_dec, kNoFilter, true);
        for (int j : {2, 1}) {
            Signal& cs = signals_[signals_.size() - j];
            cs.scope = name + ".ch" + num;
            cs.name = cs.scope + "." + cs.leaf;
            cs.sub = true;
        }
    }
}

// Selects the signals `opts_.signals` names (all if empty); a glob that matches none is an
// error. Gives the selected ones their VCD ids and marks their channels and blocks wanted.
void VcdWriter::select_signals() {
    std::vector<std::string> globs;
    {
        std::size_t p = 0;
        const std::string& s = opts_.signals;
        while (p <= s.size()) {
            std::size_t c = s.find(',', p);
            if (c == std::string::npos) c = s.size();
            std::string g = s.substr(p, c - p);
            g.erase(0, g.find_first_not_of(" \t"));
            g.erase(g.find_last_not_of(" \t") + 1);
            if (!g.empty()) globs.push_back(g);
            p = c + 1;
        }
    }
    std::vector<bool> used(globs.size(), false);
    for (auto& s : signals_) {
        if (globs.empty()) s.selected = true;
        for (std::size_t g = 0; g < globs.size(); ++g)
            if (glob_match(globs[g].c_str(), s.name.c_str())) {
                s.selected = true;
                used[g] = true;
            }
    }
    for (std::size_t g = 0; g < globs.size(); ++g)
        if (!used[g]) {
            std::string example = signals_.empty() ? std::string("xpu.chip0.core0.mxu0.busy") : signals_.front().name;
            throw std::invalid_argument("--vcd-signals: '" + globs[g] + "' matches no signal (signals are named like " +
                                        example + "; '*' and '?' are wildcards)");
        }
    std::size_t n = 0;
    for (std::size_t i = 0; i < signals_.size(); ++i) {
        Signal& s = signals_[i];
        if (!s.selected) continue;
        s.id = vcd_id(n++);
        Channel& c = channels_[s.ch];
        c.wanted = true;
        (s.derive == Derive::Value ? c.sig_value : c.sig_nonzero) = static_cast<int>(i);
        blocks_[s.block].wanted = true;
        if (s.leaf == "op") blocks_[s.block].op_selected = true;
    }
    for (auto& b : blocks_) {
        by_name_[b.name] = b.wanted ? &b : nullptr;
        if (b.module) by_ptr_[b.module->name()] = b.wanted ? &b : nullptr;
    }
}

// Cores: (chip, core) of the instruction events -> the core's block (a module offering the
// issue waveforms: its chip, and its facts' core id and clock period).
void VcdWriter::follow_cores() {
    for (Block& b : blocks_) {
        if (b.type != BlockType::Core || !b.wanted) continue;
        const ModuleFacts f = b.module->facts();
        auto cs = std::make_unique<CoreState>();
        cs->block = &b;
        cs->cycle = f.cycle ? f.cycle : 1;
        const Signal& op = signals_[b.sigs[0]];
        const Signal& st = signals_[b.sigs[1]];
        const Signal& iq = signals_[b.sigs[2]];
        cs->opcode_ch = op.ch, cs->opcode = op.selected;
        cs->stall_ch = st.ch, cs->stall = st.selected;
        cs->iq_ch = iq.ch, cs->iq = iq.selected;
        cores_[core_key(b.module->chip(), f.core)] = std::move(cs);
    }
}

// VMEM bytes allocated: each selected memory's bytes_allocated follows the liveness of the
// streams that use it (the memory beside the stream's core, else the only one of its chip),
// from their instructions and DMAs as reported.
void VcdWriter::follow_liveness() {
    for (const Block& core : blocks_) {
        if (core.type != BlockType::Core) continue;
        const std::string parent = core.name.substr(0, core.name.rfind('.') + 1);  // "xpu.chip0.core0."
        const unsigned chip = static_cast<unsigned>(core.module->chip());
        Block *vm = nullptr, *only = nullptr;
        unsigned on_chip = 0;
        for (auto& b : blocks_) {
            if (!b.allocation) continue;
            if (b.name.compare(0, parent.size(), parent) == 0 && b.name.find('.', parent.size()) == std::string::npos) vm = &b;
            if (b.chip == chip) ++on_chip, only = &b;
        }
        if (!vm && on_chip == 1) vm = only;
        if (!vm || vm->nch < 3 || !channels_[vm->ch[2]].wanted) continue;
        auto ls = std::make_unique<LiveStream>(static_cast<std::uint16_t>(chip));
        ls->ch = vm->ch[2];
        live_[core_key(core.module->chip(), core.module->facts().core)] = std::move(ls);
        live_sources_.push_back(core.module);
        for (const auto& b : blocks_)  // its DMAs report their start and completion
            if (b.type == BlockType::Dma && b.chip == chip && b.module &&
                std::find(live_sources_.begin(), live_sources_.end(), b.module) == live_sources_.end())
                live_sources_.push_back(b.module);
    }
}

VcdWriter::~VcdWriter() {
    for (const auto& r : runs_) std::remove(r.c_str());
}

void VcdWriter::attach(Platform& platform) {
    for (XpuModule* m : platform.modules()) {
        auto it = by_name_.find(m->name());
        if ((it != by_name_.end() && it->second) ||
            std::find(live_sources_.begin(), live_sources_.end(), m) != live_sources_.end())
            m->set_recorder(this);
    }
}

std::string VcdWriter::shown(const std::string& written) const {
    if (opts_.shown_path.empty()) return written;
    const std::string from = stem_of(opts_.path);
    return stem_of(opts_.shown_path) + written.substr(from.size());
}

std::string VcdWriter::gtkw_path() const { return stem_of(opts_.path) + ".gtkw"; }
std::string VcdWriter::opcodes_filter_path() const { return stem_of(opts_.path) + ".opcodes.txt"; }
std::string VcdWriter::stalls_filter_path() const { return stem_of(opts_.path) + ".stalls.txt"; }
std::size_t VcdWriter::declared_signals() const { return signals_.size(); }
std::uint64_t VcdWriter::changes() const { return records_; }
std::size_t VcdWriter::spilled_runs() const { return spilled_; }

std::vector<std::string> VcdWriter::selected_signals() const {
    std::vector<std::string> v;
    for (const auto& s : signals_)
        if (s.selected) v.push_back(s.name);
    return v;
}

VcdWriter::Block* VcdWriter::block_of(const char* name) {
    auto it = by_ptr_.find(name);  // the models report their own name(): found here
    if (it != by_ptr_.end()) return it->second;
    // Another string (a test, a recorder forwarding copies): by value, not cached (its pointer
    // may later hold another name).
    auto nit = by_name_.find(name);
    return nit == by_name_.end() ? nullptr : nit->second;
}

// ---- events -> value changes ---------------------------------------------------------------

void VcdWriter::add(std::uint32_t ch, Tick t, std::uint8_t kind, std::int64_t v) {
    if (t >= opts_.end) return;
    if (t < opts_.start) {
        Channel& c = channels_[ch];
        if (kind == kAdd) c.init += v;
        else if (kind == kSet) c.init = v;
        return;
    }
    while (v > kMaxRecordValue || v < -kMaxRecordValue) {  // a delta beyond 128 GiB: in pieces
        const std::int64_t part = v > 0 ? kMaxRecordValue : -kMaxRecordValue;
        add(ch, t, kind, part);
        v -= part;
    }
    if (buf_.size() >= buf_cap_) spill();
    buf_.push_back({t, (std::uint64_t(ch) << 40) | (std::uint64_t(kind) << 38) |
                           static_cast<std::uint64_t>(v + (std::int64_t(1) << 37))});
    ++records_;
}

void VcdWriter::interval(std::uint32_t ch, Tick a, Tick b, std::int64_t v) {
    if (b <= a || b <= opts_.start || a >= opts_.end || v == 0) return;
    if (a < opts_.start) channels_[ch].init += v;
    else add(ch, a, kAdd, v);
    if (b < opts_.end) add(ch, b, kAdd, -v);
}

void VcdWriter::level(std::uint32_t ch, Tick t, std::int64_t v) {
    Channel& c = channels_[ch];
    if (c.pending && t <= c.pend_t) {  // the same instant (never earlier: levels are per core, in order)
        c.pend_v = v;
        return;
    }
    flush_level(ch);
    c.pending = true;
    c.pend_t = t;
    c.pend_v = v;
}

void VcdWriter::flush_level(std::uint32_t ch) {
    Channel& c = channels_[ch];
    if (!c.pending) return;
    c.pending = false;
    if (c.pend_v == c.last_v) return;
    c.last_v = c.pend_v;
    add(ch, c.pend_t, kSet, c.pend_v);
}

// VMEM liveness: every VMEM instruction of a followed stream, whatever the window.
void VcdWriter::live_instruction(const InstrEvent& e) {
    auto lt = live_.find(core_key(e.chip, e.core));
    if (lt == live_.end() || !trace::touches_vmem(*e.in, lt->second->chip)) return;
    LiveStream& ls = *lt->second;
    const bool dma = e.in->op == Opcode::Dma;  // times when the DMA reports
    ls.ops.push_back({e.index, dma ? LiveStream::kUnknown : e.issue, dma ? LiveStream::kUnknown : e.complete});
    ls.live.add(e.index, *e.in);
    ls.live.take_closed(ls.closed);
    for (const auto& l : ls.closed)
        if (!live_interval(ls, l, false)) ls.pending.push_back(l);
    ls.closed.clear();
    if (ls.ops.size() >= ls.prune_at) {
        std::uint64_t oldest = ls.live.oldest_index();
        for (const auto& l : ls.pending) oldest = std::min(oldest, l.writer);
        while (!ls.ops.empty() && ls.ops.front().index < oldest) ls.ops.pop_front();
        ls.prune_at = std::max<std::size_t>(4096, 2 * ls.ops.size());
    }
}

void VcdWriter::on_instruction(const InstrEvent& e) {
    if (finished_) return;
    if (!live_.empty() && e.in) live_instruction(e);
    auto it = cores_.find(core_key(e.chip, e.core));
    if (it == cores_.end()) return;
    CoreState& cs = *it->second;
    // Past the window: this and every later instruction of the core only change signals after it.
    if (e.arrival >= opts_.end && (!cs.has_prev || cs.prev_issue + cs.cycle >= opts_.end)) return;
    const Tick a = e.arrival, r = std::max(e.ready, e.arrival), i = std::max(e.issue, r);
    if (cs.iq) {
        // Later instructions arrive at or after `a` and issue at or after `i`: the depth is
        // final before `a`. Emitted as a level, so that an arrival and an issue at the same
        // instant (a full queue moving on) cost nothing.
        cs.arrivals.push_back(a);
        cs.issues.push_back(i);
        advance_iq(cs, a, false);
    }
    // Issue is in order: a cycle in which nothing issued, from one cycle after the previous
    // issue up to this one, is a stall; its cause is what this instruction was waiting for.
    const Tick from = cs.has_prev ? cs.prev_issue + cs.cycle : 0;
    if (cs.stall) {
        // The rule the stall analysis uses too (traces/issue_stall.h); acceptance is a sync
        // wait for a swait or a barrier, else the unit's queue or the issue slot.
        trace::IssueGap gap[3];
        const int n = trace::split_issue_gap(from, a, r, i, gap);
        const bool sync = e.in && (e.in->op == Opcode::SWait || e.in->op == Opcode::Barrier);
        for (int k = 0; k < n; ++k)
            level(cs.stall_ch, gap[k].begin,
                  gap[k].why == trace::IssueWait::Supply     ? kSupply
                  : gap[k].why == trace::IssueWait::Operands ? kDependency
                  : sync                                     ? kSyncWait
                                                             : kUnitBusy);
        level(cs.stall_ch, i, kNoStall);
    }
    if (cs.opcode) {
        // The opcode issued, for one cycle; the last of a bundle issued together.
        if (cs.has_prev && from < i) level(cs.opcode_ch, from, 0);
        level(cs.opcode_ch, i, e.in ? static_cast<std::int64_t>(e.in->op) : 0);
    }
    if (!cs.has_prev || i > cs.prev_issue) cs.prev_issue = i;
    cs.has_prev = true;
}

// Emits the issue-queue depth changes before `until` (all of them when `all`).
void VcdWriter::advance_iq(CoreState& cs, Tick until, bool all) {
    for (;;) {
        const bool ha = !cs.arrivals.empty() && (all || cs.arrivals.front() < until);
        const bool hi = !cs.issues.empty() && (all || cs.issues.front() < until);
        if (!ha && !hi) return;
        const Tick t = ha && hi ? std::min(cs.arrivals.front(), cs.issues.front()) : ha ? cs.arrivals.front() : cs.issues.front();
        while (!cs.arrivals.empty() && cs.arrivals.front() == t) cs.arrivals.pop_front(), ++cs.depth;
        while (!cs.issues.empty() && cs.issues.front() == t) cs.issues.pop_front(), --cs.depth;
        level(cs.iq_ch, t, cs.depth);
    }
}

void VcdWriter::on_dma(const DmaEvent& e) {
    if (finished_) return;
    if (!live_.empty()) {
        auto lt = live_.find(core_key(e.chip, e.core));
        if (lt != live_.end()) {
            LiveStream& ls = *lt->second;
            if (LiveStream::Op* op = ls.find(e.index)) {
                op->start = e.start, op->end = e.complete;
                if (!ls.pending.empty())  // ranges that waited for this DMA's times
                    ls.pending.erase(std::remove_if(ls.pending.begin(), ls.pending.end(),
                                                    [&](const trace::VmemLive& l) { return live_interval(ls, l, false); }),
                                     ls.pending.end());
            } else if (ls.ops.empty() || e.index > ls.ops.back().index) {
                ls.early.push_back({e.index, e.start, e.complete});
            }
        }
    }
    if (e.issue >= opts_.end) return;
    Block* b = block_of(e.engine);
    if (!b || b->type != BlockType::Dma) return;
    if (channels_[b->ch[0]].wanted) interval(b->ch[0], e.issue, e.start, 1);
    if (channels_[b->ch[1]].wanted)
        interval(b->ch[1], e.start, e.complete, static_cast<std::int64_t>(e.bytes));
}

void VcdWriter::on_mem(const MemEvent& e) {
    if (finished_ || e.arrival >= opts_.end) return;
    Block* b = block_of(e.target);
    if (!b) return;
    if (b->type == BlockType::Memory) {
        if (channels_[b->ch[0]].wanted) interval(b->ch[0], e.arrival, e.done, 1);
        if (channels_[b->ch[1]].wanted && e.bytes) add(b->ch[1], e.done, kAdd, static_cast<std::int64_t>(e.bytes));
    } else if (b->type == BlockType::Link) {
        interval(b->ch[0], e.arrival, e.done, static_cast<std::int64_t>(e.bytes));
    }
}

void VcdWriter::on_hbm_channel(const HbmChannelEvent& e) {
    if (finished_ || e.arrival >= opts_.end) return;
    Block* b = block_of(e.controller);
    if (!b || b->type != BlockType::Memory || e.channel >= b->hbm_channels) return;
    const std::uint32_t rq = b->hbm_ch0 + 2 * std::uint32_t(e.channel), by = rq + 1;
    if (channels_[rq].wanted) interval(rq, e.arrival, e.done, 1);
    if (channels_[by].wanted && e.bytes) add(by, e.done, kAdd, static_cast<std::int64_t>(e.bytes));
}

// A liveness range as bytes_allocated changes: + at the write's start, - when both the write
// and the last read of the range have completed. Returns false (nothing done) while a time is
// unknown, unless `final`: then a writer never reported allocates nothing and a reader never
// reported keeps the range to the end of the file.
bool VcdWriter::live_interval(LiveStream& ls, const trace::VmemLive& l, bool final) {
    const LiveStream::Op* w = ls.find(l.writer);
    if (!w || w->start == LiveStream::kUnknown) return final || !w;
    Tick end = w->end;
    if (l.read) {
        const LiveStream::Op* r = ls.find(l.last_reader);
        if (r && r->end == LiveStream::kUnknown && !final) return false;
        end = std::max(end, r ? r->end : LiveStream::kUnknown);
    }
    interval(ls.ch, w->start, end, static_cast<std::int64_t>(l.bytes));
    return true;
}

void VcdWriter::finish_liveness() {
    for (auto& [key, lsp] : live_) {
        LiveStream& ls = *lsp;
        for (const auto& d : ls.early)
            if (LiveStream::Op* op = ls.find(d.index)) op->start = d.start, op->end = d.end;
        for (const trace::VmemLive& l : ls.pending) live_interval(ls, l, true);
        for (const trace::VmemLive& l : ls.live.finish()) live_interval(ls, l, true);
    }
    live_.clear();
}

void VcdWriter::on_unit_op(const UnitOpEvent& e) {
    // Past the window end: nothing to show (an op it would have merged with is clipped there).
    if (finished_ || e.start >= opts_.end) return;
    Block* b = block_of(e.unit);
    if (!b || b->type != BlockType::Unit || e.end <= e.start) return;
    const auto op = static_cast<std::uint8_t>(e.op);
    // Back-to-back ops of one opcode (of any opcode, overlapping too, when only `busy` is
    // written) merge into one interval: the same waveform, far fewer records.
    if (b->op_pending) {
        const bool touching = e.start == b->op_end && op == b->op;
        const bool overlapping = !b->op_selected && e.start >= b->op_start && e.start <= b->op_end;
        if (touching || overlapping) {
            b->op_end = std::max(b->op_end, e.end);
            return;
        }
        unit_op(*b, b->op_start, b->op_end, b->op);
    }
    b->op_pending = true;
    b->op_start = e.start;
    b->op_end = e.end;
    b->op = op;
}

void VcdWriter::unit_op(Block& blk, Tick s, Tick x, std::uint8_t op) {
    Block* b = &blk;
    if (x <= s || x <= opts_.start || s >= opts_.end) return;
    if (s < opts_.start) {
        Channel& c = channels_[b->ch[0]];
        if (c.init_ops.empty()) c.init_ops.assign(256, 0);
        ++c.init_ops[op];
        if (s >= c.init_last_op_time) c.init_last_op = op, c.init_last_op_time = s;
    } else {
        add(b->ch[0], s, kOpStart, op);
    }
    if (x < opts_.end) add(b->ch[0], x, kOpEnd, op);
}

// ---- sorting and spilling ------------------------------------------------------------------

void VcdWriter::spill() {
    if (buf_.empty()) return;
    std::sort(buf_.begin(), buf_.end());
    std::string path = opts_.path + ".run" + std::to_string(runs_.size()) + ".tmp";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) io_error("VCD spill file", path);
    runs_.push_back(path);
    bool ok = std::fwrite(buf_.data(), sizeof(Record), buf_.size(), f) == buf_.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) io_error("VCD spill file", path);
    ++spilled_;
    buf_.clear();
}

namespace {

// Yields records in (time, key) order: from memory, or merged from sorted run files.
template <class Record>
class RecordStream {
public:
    RecordStream(std::vector<Record>& mem, const std::vector<std::string>& runs) : mem_(mem) {
        if (runs.empty()) return;
        merging_ = true;
        for (const auto& p : runs) {
            Run r;
            r.f = std::fopen(p.c_str(), "rb");
            if (!r.f) throw std::runtime_error("cannot read VCD spill file " + p + ": " + std::strerror(errno));
            r.path = p;
            runs_.push_back(std::move(r));
        }
        for (std::size_t i = 0; i < runs_.size(); ++i)
            if (refill(i)) heap_.push({runs_[i].buf[0], i});
    }
    ~RecordStream() {
        for (auto& r : runs_)
            if (r.f) std::fclose(r.f);
    }
    const Record* next() {
        if (!merging_) return pos_ < mem_.size() ? &mem_[pos_++] : nullptr;
        if (heap_.empty()) return nullptr;
        const std::size_t i = heap_.top().second;
        heap_.pop();
        Run& r = runs_[i];
        cur_ = r.buf[r.pos++];
        if (r.pos < r.buf.size() || refill(i)) heap_.push({r.buf[r.pos], i});
        return &cur_;
    }

private:
    struct Run {
        std::FILE* f = nullptr;
        std::string path;
        std::vector<Record> buf;
        std::size_t pos = 0;
    };
    bool refill(std::size_t i) {
        Run& r = runs_[i];
        r.buf.resize(4096);
        std::size_t n = std::fread(r.buf.data(), sizeof(Record), r.buf.size(), r.f);
        if (n == 0 && std::ferror(r.f)) throw std::runtime_error("cannot read VCD spill file " + r.path);
        r.buf.resize(n);
        r.pos = 0;
        return n > 0;
    }
    using Entry = std::pair<Record, std::size_t>;
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const {
            return b.first < a.first || (!(a.first < b.first) && b.second < a.second);
        }
    };
    std::vector<Record>& mem_;
    std::size_t pos_ = 0;
    bool merging_ = false;
    std::vector<Run> runs_;
    std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
    Record cur_{};
};

}  // namespace

// ---- output ----------------------------------------------------------------------------------

namespace {

// The value of each wanted channel as the sorted records are replayed: counters and levels,
// and for the units the ops occupying them.
class ChannelReplay {
public:
    explicit ChannelReplay(const std::vector<VcdWriter::Channel>& channels) : channels_(channels), st_(channels.size()) {
        for (std::size_t i = 0; i < channels.size(); ++i) {
            const VcdWriter::Channel& c = channels[i];
            if (!c.wanted) continue;
            st_[i].value = c.init;
            if (c.type == ChannelType::Ops) {
                st_[i].ops.assign(256, 0);
                if (!c.init_ops.empty()) {
                    st_[i].ops = c.init_ops;
                    for (auto n : c.init_ops) st_[i].active += n;
                    st_[i].last_op = c.init_last_op;
                }
            }
        }
    }
    // Records of one time come in (channel, kind, value) order: of ops started together, the
    // highest opcode counts as the latest. Returns true the first time `r`'s channel changes
    // since the last take_touched().
    bool apply(const VcdWriter::Record& r) {
        State& s = st_[r.ch()];
        const std::int64_t v = r.v();
        const auto op = static_cast<std::uint8_t>(v);
        switch (r.kind()) {
            case kAdd: s.value += v; break;
            case kSet: s.value = v; break;
            case kOpStart:
                ++s.ops[op];
                ++s.active;
                s.last_op = op;
                break;
            case kOpEnd:
                if (s.ops[op]) --s.ops[op], --s.active;
                break;
        }
        if (s.touched) return false;
        s.touched = true;
        return true;
    }
    void untouch(std::uint32_t ch) { st_[ch].touched = false; }
    // A signal's value: the channel's value, or whether it is non-zero; a unit's op.
    std::uint64_t derived(std::uint32_t ch, Derive d, unsigned width) const {
        const State& s = st_[ch];
        std::int64_t v = s.value;
        if (channels_[ch].type == ChannelType::Ops) {
            if (d == Derive::NonZero) return s.active > 0;
            if (!s.active) return 0;
            if (s.ops[s.last_op]) return s.last_op;
            for (int op = 255; op > 0; --op)
                if (s.ops[op]) return static_cast<std::uint64_t>(op);
            return 0;
        }
        if (d == Derive::NonZero) return v != 0;
        if (v < 0) v = 0;  // never expected: a decrement without its increment
        const std::uint64_t max = width >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << width) - 1;
        return std::min<std::uint64_t>(static_cast<std::uint64_t>(v), max);
    }

private:
    struct State {
        std::int64_t value = 0;
        std::vector<std::uint32_t> ops;
        std::uint32_t active = 0;
        std::uint8_t last_op = 0;
        bool touched = false;
    };
    const std::vector<VcdWriter::Channel>& channels_;
    std::vector<State> st_;
};

}  // namespace

void VcdWriter::finish(Tick end) {
    if (finished_) return;
    finished_ = true;
    close_pending();
    write_vcd(end);
    write_filters();
    write_gtkw(end);
}

// Closes what the events left open: VMEM ranges, the cores' last opcode pulse and issue-queue
// changes, the units' last ops, then every pending level; sorts (or spills) the records.
void VcdWriter::close_pending() {
    finish_liveness();
    for (auto& [key, cs] : cores_) {
        if (cs->opcode && cs->has_prev) level(cs->opcode_ch, cs->prev_issue + cs->cycle, 0);
        if (cs->iq) advance_iq(*cs, 0, true);
    }
    for (auto& b : blocks_)
        if (b.op_pending) {
            b.op_pending = false;
            unit_op(b, b.op_start, b.op_end, b.op);
        }
    for (std::uint32_t c = 0; c < channels_.size(); ++c) flush_level(c);
    if (!runs_.empty()) spill();
    else std::sort(buf_.begin(), buf_.end());
}

// The VCD header: comments, then one scope per level of the selected signals' names
// (children in first-appearance order), their declarations.
std::string VcdWriter::vcd_header() const {
    std::string h = "$date\n    (xpusim simulated run)\n$end\n$version\n    xpusim VcdWriter\n$end\n$comment\n    window [";
    h += std::to_string(opts_.start);
    h += ", ";
    h += opts_.end == std::numeric_limits<Tick>::max() ? std::string("end") : std::to_string(opts_.end);
    h += ") ps; signals: ";
    std::string globs = opts_.signals.empty() ? std::string("all") : opts_.signals;
    std::replace(globs.begin(), globs.end(), '$', '_');  // no "$end" from the command line
    std::replace(globs.begin(), globs.end(), '\n', ' ');
    h += globs;
    h += "\n$end\n$timescale 1ps $end\n";
    struct Node {
        std::string name;
        std::vector<std::size_t> kids;
        std::vector<std::size_t> sigs;
    };
    std::vector<Node> nodes(1);
    for (std::size_t i = 0; i < signals_.size(); ++i) {
        if (!signals_[i].selected) continue;
        const std::string& scope = signals_[i].scope;
        std::size_t n = 0, p = 0;
        while (p <= scope.size()) {
            std::size_t d = scope.find('.', p);
            if (d == std::string::npos) d = scope.size();
            std::string part = scope.substr(p, d - p);
            std::size_t k = 0;
            for (; k < nodes[n].kids.size(); ++k)
                if (nodes[nodes[n].kids[k]].name == part) break;
            if (k == nodes[n].kids.size()) {
                nodes.push_back({part, {}, {}});
                nodes[n].kids.push_back(nodes.size() - 1);
            }
            n = nodes[n].kids[k];
            p = d + 1;
        }
        nodes[n].sigs.push_back(i);
    }
    auto emit_scope = [&](auto& self, std::size_t n) -> void {
        h += "$scope module " + nodes[n].name + " $end\n";
        for (std::size_t i : nodes[n].sigs) {
            const Signal& s = signals_[i];
            h += "$var wire " + std::to_string(s.width) + " " + s.id + " " + s.leaf;
            if (s.width > 1) h += " [" + std::to_string(s.width - 1) + ":0]";
            h += " $end\n";
        }
        for (std::size_t k : nodes[n].kids) self(self, k);
        h += "$upscope $end\n";
    };
    for (std::size_t k : nodes[0].kids) emit_scope(emit_scope, k);
    h += "$enddefinitions $end\n";
    return h;
}

// The VCD file (PATH.tmp, renamed to PATH): the header, the state at the window start as
// initial values, then the changes of the selected signals in time order.
void VcdWriter::write_vcd(Tick end) {
    const std::string tmp = opts_.path + ".tmp";
    try {
        VcdOut out(tmp, "VCD file");
        out.str(vcd_header());
        write_values(out, end);
        out.close();
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    if (std::rename(tmp.c_str(), opts_.path.c_str()) != 0) {
        std::remove(tmp.c_str());
        io_error("VCD file", opts_.path);
    }
    for (const auto& p : runs_) std::remove(p.c_str());
    runs_.clear();
    std::vector<Record>().swap(buf_);
}

// The records, merged in time order, as value changes: the state at the window start (changes
// at the start included) as $dumpvars, then each time a selected signal changes, up to `end`.
void VcdWriter::write_values(VcdOut& out, Tick end) {
    ChannelReplay replay(channels_);
    auto write_value = [&](const Signal& s, std::uint64_t v) {
        if (s.width == 1) {
            out.ch(v ? '1' : '0');
        } else {
            out.bin(v);
            out.ch(' ');
        }
        out.str(s.id);
        out.ch('\n');
    };
    RecordStream<Record> stream(buf_, runs_);
    const Record* r = stream.next();
    for (; r && r->t <= opts_.start; r = stream.next()) {
        replay.apply(*r);
        replay.untouch(r->ch());
    }
    out.ch('#');
    out.u64(opts_.start);
    out.str("\n$dumpvars\n");
    for (auto& s : signals_) {
        if (!s.selected) continue;
        s.last = replay.derived(s.ch, s.derive, s.width);
        write_value(s, s.last);
    }
    out.str("$end\n");
    Tick last_t = opts_.start;
    std::vector<std::uint32_t> touched;
    while (r) {
        const Tick t = r->t;
        for (; r && r->t == t; r = stream.next())
            if (replay.apply(*r)) touched.push_back(r->ch());
        bool stamped = false;
        for (std::uint32_t ch : touched) {
            replay.untouch(ch);
            for (int si : {channels_[ch].sig_value, channels_[ch].sig_nonzero}) {
                if (si < 0) continue;
                Signal& s = signals_[si];
                std::uint64_t v = replay.derived(ch, s.derive, s.width);
                if (v == s.last) continue;
                if (!stamped) {
                    out.ch('#');
                    out.u64(t);
                    out.ch('\n');
                    stamped = true;
                    last_t = t;
                }
                s.last = v;
                write_value(s, v);
            }
        }
        touched.clear();
    }
    const Tick final_t = std::min(end, opts_.end);
    if (final_t > last_t) {
        out.ch('#');
        out.u64(final_t);
        out.ch('\n');
    }
}

// Translate filters: the value as GTKWave displays it (hex, upper case) -> a name.
void VcdWriter::write_filters() const {
    std::string ops = "# opcode (hex) -> mnemonic, for GTKWave's translate filter (xpusim)\n00 -\n";
    for (unsigned v = 1; v < 256; ++v) {
        if (!is_valid_opcode(static_cast<std::uint8_t>(v))) continue;
        char hex[8];
        std::snprintf(hex, sizeof hex, "%02X ", v);
        ops += hex;
        ops += std::string(mnemonic(static_cast<Opcode>(v)));
        ops += '\n';
    }
    write_small_file(opcodes_filter_path(), ops, "GTKWave filter file");
    write_small_file(stalls_filter_path(),
                     "# stall cause -> name, for GTKWave's translate filter (xpusim)\n"
                     "0 -\n1 supply\n2 dependency\n3 unit_busy\n4 sync_wait\n",
                     "GTKWave filter file");
}

// GTKWave save file: every selected signal, one group per block, in block order.
void VcdWriter::write_gtkw(Tick end) const {
    const Tick span = std::max<Tick>(std::min(end, opts_.end) > opts_.start ? std::min(end, opts_.end) - opts_.start : 1, 1);
    // GTKWave shows 2^-zoom / 200 time units per pixel: the whole window in ~960 pixels of waves.
    const double zoom = -std::log2(static_cast<double>(span) * 200.0 / 960.0);
    std::string g;
    char line[256];
    g += "[*] GTKWave save file written by xpusim's VcdWriter (docs/waveforms.md)\n";
    g += "[dumpfile] \"" + absolute(shown(opts_.path)) + "\"\n";
    g += "[savefile] \"" + absolute(shown(gtkw_path())) + "\"\n";
    std::snprintf(line, sizeof line, "[timestart] %llu\n", static_cast<unsigned long long>(opts_.start));
    g += line;
    g += "[size] 1600 1000\n[pos] -1 -1\n";
    std::snprintf(line, sizeof line, "*%.6f -1", zoom);
    g += line;
    for (int i = 0; i < 26; ++i) g += " -1";
    g += "\n[sst_width] 240\n[signals_width] 340\n[sst_expanded] 1\n[sst_vpaned_height] 300\n";
    for (const Block& b : blocks_)
        if (b.wanted) g += gtkw_group(b);
    g += "[pattern_trace] 1\n[pattern_trace] 0\n";
    write_small_file(gtkw_path(), g, "GTKWave save file");
}

// One block's group of the save file; its sub-scope signals (HBM channels) in one closed
// group at its end.
std::string VcdWriter::gtkw_group(const Block& b) const {
    const std::string ops_abs = absolute(shown(opcodes_filter_path())), stalls_abs = absolute(shown(stalls_filter_path()));
    std::string g;
    char line[64];
    std::string label = b.name.compare(0, 4, "xpu.") == 0 ? b.name.substr(4) : b.name;
    std::snprintf(line, sizeof line, "@%x\n", kTrGrpBegin | kTrBlank);
    g += line;
    g += "-" + label + "\n";
    const std::string sub_label = label + ".channels";
    bool in_sub = false;
    for (std::uint32_t si : b.sigs) {
        const Signal& s = signals_[si];
        if (!s.selected) continue;
        if (s.sub && !in_sub) {
            std::snprintf(line, sizeof line, "@%x\n", kTrGrpBegin | kTrClosed | kTrBlank);
            g += line;
            g += "-" + sub_label + "\n";
            in_sub = true;
        }
        std::snprintf(line, sizeof line, "@%x\n", s.flags);
        g += line;
        if (s.filter == kOpcodes) g += "^1 " + ops_abs + "\n";
        if (s.filter == kStalls) g += "^2 " + stalls_abs + "\n";
        g += s.gtkw_name() + "\n";
        if (s.analog) {  // one more row of height for an analog trace
            std::snprintf(line, sizeof line, "@%x\n-\n", kTrAnalogBlankStretch);
            g += line;
        }
    }
    if (in_sub) {
        std::snprintf(line, sizeof line, "@%x\n", kTrGrpEnd | kTrClosed | kTrCollapsed | kTrBlank);
        g += line;
        g += "-" + sub_label + "\n";
    }
    std::snprintf(line, sizeof line, "@%x\n", kTrGrpEnd | kTrBlank);
    g += line;
    g += "-" + label + "\n";
    return g;
}

}  // namespace xpu::platform
