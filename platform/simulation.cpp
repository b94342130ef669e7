#include "platform/simulation.h"
#include "platform/thread_stacks.h"

#include "traces/trace_validate.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <sys/resource.h>

#include "models/matrix_unit.h"
#include "models/sim_time.h"
#include "models/sync_flags.h"
#include "traces/trace_text.h"

namespace xpu::platform {

std::uint64_t process_peak_rss() {
    struct rusage ru {};
    return getrusage(RUSAGE_SELF, &ru) == 0 ? static_cast<std::uint64_t>(ru.ru_maxrss) * 1024 : 0;  // KiB on Linux
}

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::Completed: return "completed";
        case StopReason::Deadlock: return "deadlock";
        case StopReason::MaxSimTime: return "max-sim-time";
        case StopReason::Interrupted: return "interrupted";
    }
    return "?";
}

namespace {

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

std::string size_text(std::uint64_t b) {
    static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (i < 5 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        ++i;
    }
    return std::to_string(b) + u[i];
}

const char* cond_symbol(Cond c) {
    switch (c) {
        case Cond::Eq: return "==";
        case Cond::Ne: return "!=";
        case Cond::Ge: return ">=";
        case Cond::Gt: return ">";
        case Cond::Le: return "<=";
        case Cond::Lt: return "<";
    }
    return "?";
}

// 10000000 -> "10 ms"
std::string time_text(double ns) {
    std::ostringstream os;
    os << std::setprecision(6);
    if (ns >= 1e9) os << ns / 1e9 << " s";
    else if (ns >= 1e6) os << ns / 1e6 << " ms";
    else if (ns >= 1e3) os << ns / 1e3 << " us";
    else os << ns << " ns";
    return os.str();
}

// "xpu.chip12.core0.scalar" -> "core0.scalar" (the path within the chip's description).
std::string path_in_chip(const std::string& n) {
    if (n.rfind("xpu.chip", 0) != 0) return n;
    auto dot = n.find('.', 8);
    return dot == std::string::npos ? n : n.substr(dot + 1);
}

// The sync flags of the SyncFlags module at `module` (0 if there is none).
std::uint64_t sync_flag_count(const PlatformConfig& cfg, const std::string& module) {
    const ModuleDecl* m = cfg.module(module);
    const SyncFlagsConfig* f = m ? config_of<SyncFlagsConfig>(*m->spec) : nullptr;
    return f ? f->flags : 0;
}

// The array of the MatrixUnit at `module`, rows x cols ({0, 0} if there is none).
std::pair<std::uint64_t, std::uint64_t> matrix_unit_shape(const PlatformConfig& cfg, const std::string& module) {
    const ModuleDecl* m = cfg.module(module);
    const MatrixUnitConfig* u = m ? config_of<MatrixUnitConfig>(*m->spec) : nullptr;
    if (!u) return {0, 0};
    return {u->rows, u->cols};
}

struct MapRange {
    Window window;
    std::string target;
    std::uint64_t base = 0, size = 0;
    bool contains(std::uint64_t a, std::uint64_t len) const {
        return a >= base && a - base < size && len <= size - (a - base);
    }
    std::string text() const {
        return target + " [" + hex(base) + ", +" + size_text(size) + ")";
    }
};

// What check_trace needs to know about one core.
struct CoreView {
    const ScalarCore* core = nullptr;
    std::string path;              // within the chip description: "core0.scalar"
    unsigned units[3] = {0, 0, 0};  // bound vpu, mxu, dma sockets
    bool flags_bound = false;
    std::uint64_t flag_count = 0;  // of the SyncFlags bound to its flags socket
    std::vector<std::pair<std::uint64_t, std::uint64_t>> mxu_shape;  // rows, cols per mxu index
    std::vector<std::pair<bool, std::uint64_t>> dma_flags;           // per dma index: SyncFlags bound, its flags
    std::vector<std::string> vpu_vmem;                               // per vpu index: the Vmem its mem is bound to
};

// The unit families a core's sockets bind: vector units, matrix units, DMA engines.
const char* const kFamilySocket[3] = {"vpu", "mxu", "dma"};
const char* const kFamilyWhat[3] = {"vector unit", "matrix unit", "DMA engine"};

// What the platform description binds to core c.
CoreView view_of(const PlatformConfig& cfg, const BindingOrder& order, const ScalarCore* c) {
    auto bound_targets = [&](const std::string& module, const std::string& socket) {
        return platform::bound_targets(order, module, socket);
    };
    CoreView v;
    v.core = c;
    v.path = path_in_chip(c->name());
    auto* self = const_cast<ScalarCore*>(c);
    for (int f = 0; f < 3; ++f)
        if (auto* p = self->port(kFamilySocket[f])) v.units[f] = p->bound;
    if (auto* p = self->port("flags")) v.flags_bound = p->bound > 0;
    auto flags = bound_targets(v.path, "flags");
    if (!flags.empty()) v.flag_count = sync_flag_count(cfg, flags.front());
    for (const auto& mxu : bound_targets(v.path, "mxu")) v.mxu_shape.push_back(matrix_unit_shape(cfg, mxu));
    for (const auto& dma : bound_targets(v.path, "dma")) {
        auto f = bound_targets(dma, "flags");
        v.dma_flags.push_back({!f.empty(), f.empty() ? 0 : sync_flag_count(cfg, f.front())});
    }
    // A vector unit reaches the VMEM its mem socket is bound to; through an interconnect, any
    // (then "": the check does not restrict the range to one VMEM).
    auto mapped_vmem = [&](const std::string& target) {
        for (const auto& e : cfg.address_map)
            if (e.window == Window::Vmem && e.target == target) return true;
        return false;
    };
    for (const auto& vpu : bound_targets(v.path, "vpu")) {
        auto mem = bound_targets(vpu, "mem");
        v.vpu_vmem.push_back(mem.empty() || !mapped_vmem(mem.front()) ? std::string() : mem.front());
    }
    return v;
}

// The address map, as the models compute global addresses: space base + operand address, where
// a vmem operand's base is the issuing core's VMEM (the builder's rule: platform/builder.h).
struct AddressMap {
    std::vector<MapRange> ranges;
    SpaceBases spaces;
    std::uint64_t remote_flag_count = 0;  // flags of the SyncFlags in the flags window
};

AddressMap address_map_of(const PlatformConfig& cfg) {
    AddressMap am;
    for (const auto& e : cfg.address_map) {
        const ModuleDecl* t = cfg.module(e.target);
        am.ranges.push_back({e.window, e.target, e.base, t && t->spec->capacity() ? *t->spec->capacity() : 0});
    }
    am.spaces = space_bases(cfg);  // the builder's rule (platform/builder.h)
    for (const auto& m : am.ranges)
        if (m.window == Window::Flags) am.remote_flag_count = sync_flag_count(cfg, m.target);
    return am;
}

std::string mem_text(const MemRef& m) {
    std::string s(space_name(m.space));
    if (m.chip != kLocalChip) s += "@" + std::to_string(m.chip);
    return s + ":" + hex(m.addr);
}

// Empty if [space base + addr, + bytes) lies inside one entry of the map (restricted to
// `target` when given, else for vmem to the VMEM of `core`, the issuing core), else what is wrong.
std::string range_problem(const PlatformConfig& cfg, const AddressMap& am, std::uint16_t core, const char* key,
                          const MemRef& m, std::uint64_t bytes, const std::string* target) {
    const auto s = static_cast<unsigned>(m.space);
    const Window w = m.space == Space::Vmem ? Window::Vmem : Window::Hbm;
    const std::uint64_t base = m.space == Space::Vmem ? am.spaces.vmem_base(core) : am.spaces.base[s];
    if (!target && m.space == Space::Vmem) {
        auto it = am.spaces.vmem_of_core.find(core);
        if (it != am.spaces.vmem_of_core.end() && !it->second.target.empty()) target = &it->second.target;
    }
    const bool overflow = m.addr > UINT64_MAX - base;
    const std::uint64_t g = base + m.addr;
    if (am.spaces.has[s] && !overflow)
        for (const auto& r : am.ranges)
            if (r.window == w && (!target || r.target == *target) && r.contains(g, bytes)) return {};
    // Only now (an error) build the message.
    std::string where = std::string(key) + "=" + mem_text(m) + " bytes=" + std::to_string(bytes) + ": ";
    if (!am.spaces.has[s])
        return where + "no memory serves " + std::string(space_name(m.space)) + " (the address map of " + cfg.file +
               " has no " + std::string(space_name(m.space)) + " entry)";
    std::string known;
    for (const auto& r : am.ranges)
        if (r.window == w && (!target || r.target == *target)) known += (known.empty() ? "" : ", ") + r.text();
    return where + "global range [" + hex(g) + ", +" + std::to_string(bytes) +
           ") is outside the memory map (expected inside " +
           (known.empty() ? std::string("a ") + std::string(space_name(m.space)) + " memory" : known) + ")";
}

// The checks of one instruction of a stream against the platform: each throws at the first
// problem, a TraceError for the trace's, a ConfigError for the platform description's.
class InstructionCheck {
public:
    InstructionCheck(const PlatformConfig& cfg, const AddressMap& am, const trace::TraceFile& trace, std::size_t stream,
                     const CoreView& v, std::uint64_t index, const Instruction& in)
        : cfg_(cfg), am_(am), trace_(trace), s_(stream), chip_(trace.streams()[stream].chip), core_(trace.streams()[stream].core), v_(v), index_(index), in_(in) {}

    void run() const {
        registers();
        unit_index();
        switch (in_.op) {
            case Opcode::MPush:
            case Opcode::MatMul: matrix(); break;
            case Opcode::VLoad:
            case Opcode::VStore: vector_memory(); break;
            case Opcode::Dma: dma(); break;
            case Opcode::SWait:
            case Opcode::SSet:
            case Opcode::SAdd:
            case Opcode::Barrier: sync(); break;
            default: break;
        }
        // The operand conventions xpu_trace validate checks (the same checker): what the
        // platform checks above did not already name.
        // check_instruction() in its two steps: the test, and the messages only when it fails
        // (no empty vector made and dropped per instruction of the run).
        if (trace::instruction_conforms(in_, trace_.strings().size(), chip_)) return;
        const auto issues = trace::instruction_problems(in_, trace_.strings().size(), chip_);
        if (!issues.empty()) {
            std::string all;
            for (const auto& i : issues) all += (all.empty() ? "" : "; ") + i;
            bad(all);
        }
    }

private:
    const PlatformConfig& cfg_;
    const AddressMap& am_;
    const trace::TraceFile& trace_;
    std::size_t s_;
    std::uint16_t chip_;
    std::uint16_t core_;  // the stream's core: whose VMEM its vmem: operands address
    const CoreView& v_;
    std::uint64_t index_;
    const Instruction& in_;

    std::string where() const {
        return trace_.describe_stream(s_) + ", instruction " + std::to_string(index_) + " (" + trace::format_instruction(in_) + "): ";
    }
    [[noreturn]] void bad(const std::string& what) const { throw trace::TraceError(where() + what); }
    [[noreturn]] void missing(const std::string& what) const {
        std::string w = where();
        throw ConfigError(cfg_.file + ": " + std::string(v_.core->name()) + " " + what + ", but " + w.substr(0, w.size() - 2) +
                          " needs it");
    }

    // Registers: the scoreboard has kNumRegs entries.
    void registers() const {
        static const Field reg_field[] = {kDst, kSrc0, kSrc1, kSrc2};
        static const char* reg_key[] = {"d", "s0", "s1", "s2"};
        const std::uint8_t ids[] = {in_.dst, in_.src[0], in_.src[1], in_.src[2]};
        for (int r = 0; r < 4; ++r)
            if (in_.has(reg_field[r]) && ids[r] >= kNumRegs)
                bad(std::string(reg_key[r]) + "=r" + std::to_string(ids[r]) +
                    " is not a register (expected s0..s63, v0..v63 or m0..m63, ids 0.." + std::to_string(kNumRegs - 1) + ")");
    }

    // The unit it goes to: bound to the core, and its index within the family.
    void unit_index() const {
        const UnitKind kind = unit_kind(in_.op);
        if (kind != UnitKind::Vector && kind != UnitKind::Matrix && kind != UnitKind::Dma) return;
        const int f = kind == UnitKind::Vector ? 0 : kind == UnitKind::Matrix ? 1 : 2;
        if (v_.units[f] == 0)
            missing(std::string("has no ") + kFamilyWhat[f] + " bound to its " + kFamilySocket[f] + " socket (add one and a binding '" +
                    v_.path + "." + kFamilySocket[f] + "[0] -> ...' to chip.bindings)");
        if (in_.unit >= v_.units[f])
            bad("u=" + std::to_string(in_.unit) + ": the core has " + std::to_string(v_.units[f]) + " " + kFamilyWhat[f] +
                (v_.units[f] == 1 ? "" : "s") + " (" + kFamilySocket[f] + "[0.." + std::to_string(v_.units[f] - 1) + "]) in " +
                cfg_.file);
    }

    // mpush, matmul: a shape, and a weight tile that fits the array.
    void matrix() const {
        if (in_.op == Opcode::MatMul && !in_.has(kShape)) bad("a matmul needs shape=MxNxK");
        if (!in_.has(kShape)) return;
        if (in_.op == Opcode::MatMul && in_.m == 0) bad("shape m=0: a matmul streams at least one row");
        if (in_.unit >= v_.mxu_shape.size()) return;
        auto [rows, cols] = v_.mxu_shape[in_.unit];
        if (rows && cols && (in_.k > rows || in_.n > cols))
            bad("a " + std::to_string(in_.k) + "x" + std::to_string(in_.n) + " (k x n) weight tile does not fit the " +
                std::to_string(rows) + "x" + std::to_string(cols) + " array of mxu[" + std::to_string(in_.unit) +
                "] (expected k <= rows = " + std::to_string(rows) + ", n <= cols = " + std::to_string(cols) + ")");
    }

    // vld, vst: bytes, and a range of its own chip's VMEM (the one its vector unit is bound to).
    void vector_memory() const {
        const bool load = in_.op == Opcode::VLoad;
        const Field mf = load ? kMemSrc : kMemDst;
        const MemRef& m = load ? in_.mem_src : in_.mem_dst;
        const char* key = load ? "src" : "dst";
        if (!in_.has(kBytes)) bad("a vld/vst needs bytes=");
        if (!in_.has(mf)) return;
        if (m.space != Space::Vmem || (m.chip != kLocalChip && m.chip != chip_))
            bad(std::string(key) + "=" + mem_text(m) + ": a vld/vst addresses its own chip's vmem");
        const std::string* vmem = in_.unit < v_.vpu_vmem.size() && !v_.vpu_vmem[in_.unit].empty() ? &v_.vpu_vmem[in_.unit] : nullptr;
        auto p = range_problem(cfg_, am_, core_, key, m, in_.bytes, vmem);
        if (!p.empty()) bad(p);
    }

    // dma: operands, a source on its own chip, a destination chip that exists, ranges in the
    // map, and a flag its engine's SyncFlags (or the remote flags window) has.
    void dma() const {
        if (!in_.has(kMemSrc) || !in_.has(kMemDst) || !in_.has(kBytes)) bad("a DMA needs src=, dst= and bytes=");
        if (in_.bytes == 0) bad("bytes=0: a DMA moves at least one byte");
        if (in_.mem_src.chip != kLocalChip && in_.mem_src.chip != chip_)
            bad("src=" + mem_text(in_.mem_src) + ": a DMA reads from its own chip only (write to the other chip from there)");
        const bool remote = in_.mem_dst.chip != kLocalChip && in_.mem_dst.chip != chip_;
        if (remote && in_.mem_dst.chip >= cfg_.chips)
            bad("dst=" + mem_text(in_.mem_dst) + ": chip " + std::to_string(in_.mem_dst.chip) + " does not exist (" + cfg_.file +
                " has " + std::to_string(cfg_.chips) + " chip" + (cfg_.chips == 1 ? "" : "s") + ", 0.." +
                std::to_string(cfg_.chips - 1) + ")");
        auto p = range_problem(cfg_, am_, core_, "src", in_.mem_src, in_.bytes, nullptr);
        if (p.empty()) p = range_problem(cfg_, am_, core_, "dst", in_.mem_dst, in_.bytes, nullptr);
        if (!p.empty()) bad(p);
        if (!in_.has(kFlag)) return;
        std::uint64_t count = am_.remote_flag_count;
        if (!remote && in_.unit < v_.dma_flags.size()) {
            if (!v_.dma_flags[in_.unit].first)
                missing("has a DMA engine dma[" + std::to_string(in_.unit) +
                        "] with no SyncFlags bound to its flags socket (to raise completion flags)");
            count = v_.dma_flags[in_.unit].second;
        }
        if (count && in_.flag >= count)
            bad("flag=" + std::to_string(in_.flag) + " is out of range: the chip has " + std::to_string(count) + " sync flags (0.." +
                std::to_string(count - 1) + ")");
    }

    // swait, sset, sadd, barrier: the core's SyncFlags, and a flag it has.
    void sync() const {
        if (!v_.flags_bound) missing("has no SyncFlags bound to its flags socket");
        const std::uint16_t flag = in_.has(kFlag) ? in_.flag : 0;
        if (v_.flag_count && flag >= v_.flag_count)
            bad("flag=" + std::to_string(flag) + " is out of range: the chip has " + std::to_string(v_.flag_count) +
                " sync flags (0.." + std::to_string(v_.flag_count - 1) + ")");
    }
};

}  // namespace

namespace {
// The feed from the check to the run (traces/checked_feed.h): at most kFeedDepth pieces queued
// per stream, pieces of up to 4096 instructions (the check's window), halved until all streams'
// queues together hold at most kFeedBudget instructions (encoded: at most 96 bytes each, 13 on
// a GEMM, 20 on a decode), but never below 16 (beyond 256 streams the bound grows: 4096 streams,
// 262,144 instructions at most). What is in flight stays in the caches (every piece crosses
// from the check's core to the run's), and the pieces are large enough that the run seldom
// wakes the check (a futex call that costs tens of microseconds on a VM): on the 32-layer
// decode, budgets of 4096 and 16384 instructions made 1800 and 381 futex calls.
constexpr std::size_t kFeedDepth = 4;
constexpr std::size_t kFeedBudget = 16384;
std::size_t feed_piece(std::size_t streams) {
    std::size_t piece = 4096;
    while (piece > 16 && piece * kFeedDepth * std::max<std::size_t>(streams, 1) > kFeedBudget) piece /= 2;
    return piece;
}
}  // namespace

Simulation::Simulation(const PlatformConfig& cfg, const std::string& trace_path, const std::function<bool()>& stop_requested,
                       const std::shared_ptr<trace::FileDigest>& digest)
    : cfg_(cfg), digest_(digest), trace_(trace::TraceFile::open(trace_path, digest)) {
    // The digest saw the header and the tables; the check's reads go to it from here (in file
    // order for a single stream: no pass of its own), the run's to nobody (another thread).
    feed_ = std::make_shared<trace::CheckedFeed>(trace_.streams().size(), feed_piece(trace_.streams().size()), kFeedDepth);
    trace_ = trace_.with_digest(nullptr).with_feed(feed_);
    const auto build_start = std::chrono::steady_clock::now();
    platform_ = std::make_unique<Platform>(cfg_, &trace_, stop_requested);
    try {
        check_thread_stacks();
        build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
    } catch (...) {
        // Not torn down (seconds for thousands of chips, as Platform's own build failures say).
        [[maybe_unused]] static Platform* kept = nullptr;
        kept = platform_.release();
        throw;
    }
}

// Before any thread's stack exists (they are made when the simulation starts): do they fit the
// kernel's limit on memory mappings? (thread_stacks.h)
void Simulation::check_thread_stacks() const {
    const std::size_t threads = count_thread_processes();
    if (const auto mapped = mapped_bytes_now())
        if (const auto problem = address_space_problem(cfg_.chips, threads, *mapped, address_space_limit()))
            throw ConfigError(cfg_.file + ": chips: " + *problem);
    const auto held = memory_mappings_held();
    const auto limit = kernel_max_map_count();
    if (!held || !limit) return;
    ThreadStackDemand d;
    d.chips = cfg_.chips;
    d.threads = threads;
    d.mappings_held = *held;
    d.max_map_count = *limit;
    if (const auto problem = thread_stack_problem(d)) throw ConfigError(cfg_.file + ": chips: " + *problem);
}

Simulation::~Simulation() { stop_check(); }

void Simulation::stop_check() {
    if (check_thread_.joinable()) {
        check_cancel_ = true;
        feed_->detach();
        check_thread_.join();
    }
}

// ---------------------------------------------------------------------------------------------
// Checking the trace against the platform before the run

struct Simulation::PreparedCheck {
    AddressMap am;
    std::map<std::pair<unsigned, unsigned>, CoreView> views;  // per (chip, core id)
};

Simulation::PreparedCheck Simulation::prepare_check() const {
    PreparedCheck p;
    p.am = address_map_of(cfg_);
    const BindingOrder order = binding_order(cfg_);
    for (auto* c : platform_->cores()) p.views[{c->config().chip, c->config().core}] = view_of(cfg_, order, c);
    const auto string_problems = trace::string_table_problems(trace_, 1);  // as xpu_trace validate
    if (!string_problems.empty()) throw trace::TraceError(string_problems.front());
    return p;
}

bool Simulation::check_instructions(const PreparedCheck& p, const std::function<bool()>& stop_requested,
                                    trace::CheckedFeed* feed) const {
    // Its own readers: reading the file (the check is what fills the feed), reporting to the digest.
    const trace::TraceFile file = trace_.with_feed(nullptr).with_digest(digest_);
    const std::size_t streams = file.streams().size();
    // Instructions decoded before any of them is checked, counted from the stream's start (what
    // the check always read at a time): of a decode problem and a check problem in the same
    // window, the decode problem is the one named, however the stream is cut into pieces.
    constexpr std::uint64_t kWindow = 4096;
    struct Walk {
        const CoreView* view = nullptr;
        std::unique_ptr<trace::StreamReader> reader;
        std::uint64_t index = 0;  // instructions checked
        bool open = false;
    };
    std::vector<Walk> walks(streams);
    for (std::size_t s = 0; s < streams; ++s) {
        auto vit = p.views.find({file.streams()[s].chip, file.streams()[s].core});
        // A stream no core runs: the builder has already refused such a trace.
        if (vit != p.views.end()) walks[s] = {&vit->second, nullptr, 0, true};
        if (feed && !walks[s].open) feed->ended(s);
    }
    std::vector<Instruction> scratch(kWindow);
    // Decodes and checks up to `want` instructions of stream s (never across a window's end),
    // their encoded bytes into `into` if given (a piece for the run); false at the stream's end.
    auto step = [&](std::size_t s, std::size_t want, trace::FeedPiece* into) {
        Walk& w = walks[s];
        if (!w.reader) w.reader = std::make_unique<trace::StreamReader>(file, s);
        want = static_cast<std::size_t>(std::min<std::uint64_t>(want, kWindow - w.index % kWindow));
        if (into) into->bytes.clear();
        const std::size_t n =
            into ? w.reader->read_encoded(scratch.data(), want, into->bytes) : w.reader->read(scratch.data(), want);
        for (std::size_t i = 0; i < n; ++i) {
            try {
                InstructionCheck(cfg_, p.am, file, s, *w.view, w.index + i, scratch[i]).run();
            } catch (...) {
                // Decoding the rest of the window first would have met its decode problem first.
                std::exception_ptr e = std::current_exception();
                const std::uint64_t end = (w.index + i) / kWindow * kWindow + kWindow;
                try {
                    for (std::uint64_t at = w.index + n; at < end;) {
                        const std::size_t k = w.reader->read(scratch.data(), static_cast<std::size_t>(end - at));
                        if (k == 0) break;
                        at += k;
                    }
                } catch (...) {
                    e = std::current_exception();
                }
                std::rethrow_exception(e);
            }
        }
        w.index += n;
        if (into) {
            into->count = n;
            into->bytes.resize(into->bytes.size() + trace::kDecodePadding, 0);
        }
        return n > 0;
    };
    // The problem reported is the first in stream order, as when the streams were checked one
    // after the other: once stream b has one, streams from b on need no more checking, and the
    // streams before it are checked to their ends (a problem there comes first).
    std::size_t bound = streams;
    std::exception_ptr problem;
    auto walk = [&](std::size_t s, std::size_t want, trace::FeedPiece* into) {
        bool more = false;
        try {
            more = step(s, want, into);
        } catch (...) {
            problem = std::current_exception();
            bound = s;
            if (feed) feed->fail();
        }
        if (!more) {
            walks[s].open = false;
            if (feed) feed->ended(s);
        }
        return more;
    };
    for (;;) {
        if (stop_requested && stop_requested()) {
            if (feed) feed->fail();
            return false;
        }
        if (!feed || feed->closed()) {
            // Alone (no run takes the instructions): stream after stream.
            std::size_t s = 0;
            while (s < bound && !walks[s].open) ++s;
            if (s == bound) break;
            walk(s, kWindow, nullptr);
            continue;
        }
        // Beside the run: a piece to each stream whose queue has room, in turn, so that the
        // run is never held up on one stream while the check fills another.
        bool open = false, fed = false;
        for (std::size_t s = 0; s < bound && !feed->closed(); ++s) {
            if (!walks[s].open) continue;
            open = true;
            if (!feed->wants(s)) continue;
            trace::FeedPiece piece = feed->blank();
            if (walk(s, feed->piece(), &piece)) feed->push(s, std::move(piece));
            fed = true;
        }
        if (!open) break;
        if (!fed) feed->wait_for_room(20);  // the stop request is polled between waits
    }
    if (problem) std::rethrow_exception(problem);
    if (feed) feed->passed_all();
    return true;
}

bool Simulation::check_trace(const std::function<bool()>& stop_requested) const {
    return check_instructions(prepare_check(), stop_requested, nullptr);
}

void Simulation::start_check(const std::function<bool()>& stop_requested) {
    auto prepared = std::make_shared<const PreparedCheck>(prepare_check());
    check_ok_ = false;
    feed_->start();
    check_thread_ = std::thread([this, prepared, stop_requested] {
        auto stop = [&] { return check_cancel_.load() || (stop_requested && stop_requested()); };
        try {
            check_ok_ = check_instructions(*prepared, stop, feed_.get());
        } catch (...) {
            check_error_ = std::current_exception();
            check_ok_ = false;
        }
        if (!check_ok_) feed_->fail();
    });
}

bool Simulation::finish_check() {
    feed_->detach();  // the run is over: what the check still reads goes nowhere
    if (check_thread_.joinable()) check_thread_.join();
    if (check_error_) std::rethrow_exception(check_error_);
    return check_ok_;
}

// ---------------------------------------------------------------------------------------------
// Diagnosis

namespace {

// Instruction `index` of stream `s` (read from the start: diagnosis only).
std::string instruction_text(const trace::TraceFile& tf, std::size_t s, std::uint64_t index) {
    try {
        trace::StreamReader r(tf, s);
        std::vector<Instruction> buf(4096);
        std::uint64_t pos = 0;
        while (std::size_t n = r.read(buf.data(), buf.size())) {
            if (index < pos + n) return trace::format_instruction(buf[index - pos]);
            pos += n;
        }
    } catch (const std::exception&) {
    }
    return "?";
}

}  // namespace

std::string Simulation::deadlock_diagnosis() const {
    std::ostringstream os;
    os << "deadlock at " << ticks_to_ns(now_ticks()) << " ns: no event can ever wake these cores:\n";
    struct Waiter {
        const SyncFlags* flags;
        FlagWaiter w;
        unsigned chip;
    };
    std::vector<Waiter> waiters;
    for (auto* m : platform_->modules())
        if (auto* f = dynamic_cast<SyncFlags*>(m))
            for (const auto& w : f->waiters()) waiters.push_back({f, w, static_cast<unsigned>(std::max(0, f->chip()))});

    // Which instructions of the trace could raise each awaited (chip, flag): sset/sadd of a
    // stream of that chip, DMAs whose completion flag lands there.
    struct Raiser {
        std::size_t stream;
        std::uint64_t index;
        std::string text;
    };
    std::map<std::pair<unsigned, unsigned>, std::vector<Raiser>> raisers;
    std::map<std::pair<unsigned, unsigned>, std::uint64_t> raiser_count;
    for (const auto& w : waiters)
        if (w.w.op == FlagCommand::Op::Wait) raisers[{w.chip, w.w.flag}];
    if (!raisers.empty()) {
        std::vector<Instruction> buf(4096);
        for (std::size_t s = 0; s < trace_.streams().size(); ++s) {
            const unsigned chip = trace_.streams()[s].chip;
            try {
                trace::StreamReader r(trace_.with_feed(nullptr), s);  // its own, not the run's
                std::uint64_t index = 0;
                while (std::size_t n = r.read(buf.data(), buf.size()))
                    for (std::size_t i = 0; i < n; ++i, ++index) {
                        const Instruction& in = buf[i];
                        unsigned target = chip;
                        if (in.op == Opcode::Dma) {
                            if (!in.has(kFlag)) continue;
                            if (in.mem_dst.chip != kLocalChip) target = in.mem_dst.chip;
                        } else if (in.op != Opcode::SSet && in.op != Opcode::SAdd) {
                            continue;
                        }
                        auto it = raisers.find({target, in.has(kFlag) ? in.flag : 0u});
                        if (it == raisers.end()) continue;
                        if (++raiser_count[it->first] <= 4)
                            it->second.push_back({s, index, trace::format_instruction(in)});
                    }
            } catch (const std::exception&) {
            }
        }
    }
    auto core_of_stream = [&](std::size_t s) -> const ScalarCore* {
        for (auto* c : platform_->cores())
            if (c->config().chip == trace_.streams()[s].chip && c->config().core == trace_.streams()[s].core) return c;
        return nullptr;
    };

    for (auto* core : platform_->cores()) {
        if (core->finished()) continue;
        os << "  " << core->name() << " (chip " << core->config().chip << ", core " << core->config().core << ")";
        if (const Instruction* in = core->blocked_on())
            os << " blocked at instruction " << core->blocked_index() << ": " << trace::format_instruction(*in);
        os << "\n";
        for (const auto& wt : waiters) {
            const FlagWaiter& w = wt.w;
            if (w.requester != core->name()) continue;
            if (w.op == FlagCommand::Op::Barrier) {
                os << "    waits at a barrier of " << wt.flags->name() << " (" << wt.flags->barrier_arrivals()
                   << " core(s) of chip " << wt.chip << " arrived); the others:";
                bool any = false;
                for (auto* other : platform_->cores()) {
                    if (other == core || other->config().chip != wt.chip) continue;
                    const Instruction* b = other->blocked_on();
                    if (b && b->op == Opcode::Barrier) continue;
                    any = true;
                    os << "\n      " << other->name() << ": ";
                    if (other->finished()) os << "finished its stream without reaching this barrier";
                    else if (b) os << "blocked at instruction " << other->blocked_index() << ": " << trace::format_instruction(*b);
                    else os << "running";
                }
                if (!any) os << " none missing";
                os << "\n";
                continue;
            }
            os << "    waits until flag " << w.flag << " of " << wt.flags->name() << " is " << cond_symbol(w.cond) << " "
               << w.value << "; its value is " << wt.flags->value(w.flag) << " and nothing pending will change it\n";
            const auto key = std::make_pair(wt.chip, static_cast<unsigned>(w.flag));
            const auto& list = raisers[key];
            if (list.empty()) {
                os << "    no instruction in the trace sets or adds flag " << w.flag << " on chip " << wt.chip
                   << " (no sset/sadd flag=" << w.flag << " in its streams, no dma with flag=" << w.flag << " to it)\n";
                continue;
            }
            os << "    instructions of the trace that target flag " << w.flag << " on chip " << wt.chip << " ("
               << raiser_count[key] << " in all" << (raiser_count[key] > list.size() ? ", the first " + std::to_string(list.size()) : std::string()) << "):\n";
            for (const auto& r : list) {
                os << "      " << trace_.describe_stream(r.stream).substr(trace_.path().size() + 2) << ", instruction "
                   << r.index << ": " << r.text;
                const ScalarCore* c = core_of_stream(r.stream);
                if (!c) os << " (no core runs it)";
                else if (r.index < c->retired()) os << " (executed)";
                else if (c->blocked_on()) os << " (not reached: " << c->name() << " is blocked at instruction " << c->blocked_index() << ")";
                else os << " (not reached)";
                os << "\n";
            }
        }
    }
    return os.str();
}

std::string Simulation::position_diagnosis(const char* why) const {
    std::ostringstream os;
    os << why << " at " << time_text(ticks_to_ns(now_ticks())) << " simulated; where each core was:\n";
    for (auto* core : platform_->cores()) {
        os << "  " << core->name() << " (chip " << core->config().chip << ", core " << core->config().core << "): ";
        std::size_t stream = trace_.streams().size();
        for (std::size_t s = 0; s < trace_.streams().size(); ++s)
            if (trace_.streams()[s].chip == core->config().chip && trace_.streams()[s].core == core->config().core) stream = s;
        const std::uint64_t total = stream < trace_.streams().size() ? trace_.streams()[stream].instructions : 0;
        if (core->finished()) {
            os << "finished (" << core->retired() << " instructions) at " << ticks_to_ns(core->finish_time()) << " ns\n";
            continue;
        }
        os << core->retired() << " of " << total << " instructions retired; ";
        if (const Instruction* in = core->blocked_on()) {
            os << "blocked at instruction " << core->blocked_index() << ": " << trace::format_instruction(*in);
        } else if (core->retired() < total) {
            os << "at instruction " << core->retired() << ": " << instruction_text(trace_.with_feed(nullptr), stream, core->retired());
        } else {
            os << "draining (waiting for its last results)";
        }
        os << "\n";
    }
    return os.str();
}

// ---------------------------------------------------------------------------------------------
// The run

RunResult Simulation::run(const std::function<void(std::uint64_t, double)>& progress) {
    RunOptions o;
    o.progress = progress;
    return run(o);
}

RunResult Simulation::run(const RunOptions& opts) {
    RunResult r;
    auto t0 = std::chrono::steady_clock::now();
    auto last_report = t0;
    // Slices of simulated time: a stop request or the time limit is noticed between two.
    // Their length adapts so that one takes about 20-100 ms of host time (a trace dense in
    // events, e.g. tiny DMA chunks, could otherwise spend seconds in 100 us of simulated
    // time); where the slices fall has no effect on the results.
    const Tick max_slice = 100'000'000, min_slice = 1'000;  // 100 us, 1 ns
    Tick slice = max_slice;
    auto retired = [&] {
        std::uint64_t n = 0;
        for (auto* c : platform_->cores()) n += c->retired();
        return n;
    };
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    // SC_EXIT_ON_STARVATION leaves the time at the last event (not at the end of the slice),
    // which is what simulated_time_ns reports; but it also means a slice with no event in it
    // does not advance the time at all: when the next event is further away than a slice, the
    // slice is stretched to reach it (else the loop would spin for ever).
    while (sc_core::sc_pending_activity()) {
        if (opts.stop_requested && opts.stop_requested()) {
            r.stop = StopReason::Interrupted;
            break;
        }
        sc_core::sc_time step = to_sc(slice);
        const sc_core::sc_time to_next = sc_core::sc_time_to_pending_activity();
        if (to_next > step) step = to_next;
        if (opts.max_sim_time) {
            const Tick now = now_ticks();
            const Tick left = opts.max_sim_time > now ? opts.max_sim_time - now : 0;
            if (to_next.value() > left) {
                // Nothing happens before the limit: the run stands at the limit.
                if (left) sc_core::sc_start(to_sc(left), sc_core::SC_RUN_TO_TIME);
                r.stop = StopReason::MaxSimTime;
                break;
            }
            if (step.value() > left) step = to_sc(left);
        }
        const auto before = std::chrono::steady_clock::now();
        sc_core::sc_start(step, sc_core::SC_EXIT_ON_STARVATION);
        const auto now = std::chrono::steady_clock::now();
        const auto took = now - before;
        if (took > std::chrono::milliseconds(100)) slice = std::max(min_slice, slice / 4);
        else if (took < std::chrono::milliseconds(20)) slice = std::min(max_slice, slice * 2);
        if (opts.progress && std::chrono::duration<double>(now - last_report).count() >= opts.progress_seconds) {
            opts.progress(retired(), ticks_to_ns(now_ticks()));
            last_report = now;
        }
    }
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.build_seconds = build_seconds_;
    r.peak_rss_bytes = process_peak_rss();
    r.simulated_ns = ticks_to_ns(now_ticks());
    r.instructions = retired();
    r.streams = trace_.streams().size();
    if (r.stop == StopReason::Completed)
        for (auto* c : platform_->cores())
            if (!c->finished()) r.stop = StopReason::Deadlock;
    r.completed = r.stop == StopReason::Completed;
    switch (r.stop) {
        case StopReason::Completed: break;
        case StopReason::Deadlock: r.diagnosis = deadlock_diagnosis(); break;
        case StopReason::MaxSimTime: {
            std::ostringstream why;
            why << "time limit (--max-sim-time " << time_text(ticks_to_ns(opts.max_sim_time)) << ") reached";
            r.diagnosis = position_diagnosis(why.str().c_str());
            break;
        }
        case StopReason::Interrupted: r.diagnosis = position_diagnosis("interrupted"); break;
    }

    collect_figures(r);
    return r;
}

// The run's figures, from what each module says of itself: every unit's utilisation, the HBM
// traffic against its peak, the compute against its peak, the breakdown by chip and op.
void Simulation::collect_figures(RunResult& r) const {
    for (auto* m : platform_->modules()) {
        if (auto busy = m->busy_time()) {
            UnitFigure u;
            u.name = m->name();
            u.kind = m->kind();
            u.role = m->role();
            u.busy_ns = ticks_to_ns(*busy);
            u.utilization = r.simulated_ns > 0 ? u.busy_ns / r.simulated_ns : 0;
            // A run stopped early may have work booked beyond the stop time (units answer
            // ahead of the kernel under temporal decoupling).
            if (!r.completed) u.utilization = std::min(u.utilization, 1.0);
            r.units.push_back(u);
        }
        const ModuleFacts f = m->facts();
        if (m->role() == Role::Hbm) {
            r.hbm_bytes_read += f.bytes_read;
            r.hbm_bytes_written += f.bytes_written;
            r.hbm_peak_gbps += f.peak_gbps;
        }
        if (f.peak_flops_per_s > 0) {
            r.flops += f.flops;
            r.peak_flops_per_s += f.peak_flops_per_s;
        }
    }
    r.breakdown = breakdown(*platform_, trace_.strings());
}

}  // namespace xpu::platform
