#include "traces/trace_validate.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <string_view>
#include <unordered_map>

#include "traces/trace_reader.h"
#include "traces/trace_text.h"

namespace xpu::trace {

namespace {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

enum class RC : std::uint8_t { Any, S, V, M };

struct Rule {
    std::uint16_t required = 0;
    RC d = RC::Any, s0 = RC::Any, s1 = RC::Any, s2 = RC::Any;
    bool local_vmem_src = false, local_vmem_dst = false;
    bool bytes_positive = false;
    bool dim_m = false, dim_n = false, dim_k = false;  // which shape dims must be > 0
};

Rule rule_for(Opcode op) {
    Rule r;
    switch (op) {
        case Opcode::SAlu: r.required = kDst; r.d = r.s0 = r.s1 = RC::S; break;
        case Opcode::Branch: r.s0 = RC::S; break;
        case Opcode::Nop:
        case Opcode::Halt: break;
        case Opcode::VLoad:
            r.required = kDst | kMemSrc | kBytes;
            r.d = RC::V;
            r.local_vmem_src = r.bytes_positive = true;
            break;
        case Opcode::VStore:
            r.required = kSrc0 | kMemDst | kBytes;
            r.s0 = RC::V;
            r.local_vmem_dst = r.bytes_positive = true;
            break;
        case Opcode::VAlu: r.required = kDst | kSrc0; r.d = r.s0 = r.s1 = r.s2 = RC::V; break;
        case Opcode::VTrans:
        case Opcode::VReduce:
        case Opcode::VPermute: r.required = kDst | kSrc0; r.d = r.s0 = RC::V; break;
        case Opcode::MPush:
            r.required = kSrc0 | kShape;
            r.s0 = RC::V;
            r.dim_n = r.dim_k = true;
            break;
        case Opcode::MatMul:
            r.required = kDst | kSrc0 | kShape | kDtype;
            r.d = RC::M;
            r.s0 = RC::V;
            r.s1 = RC::M;
            r.dim_m = r.dim_n = r.dim_k = true;
            break;
        case Opcode::MPop:
            r.required = kDst | kSrc0 | kShape;
            r.d = RC::V;
            r.s0 = RC::M;
            r.dim_m = r.dim_n = true;
            break;
        case Opcode::Dma: r.required = kMemSrc | kMemDst | kBytes; r.bytes_positive = true; break;
        case Opcode::SWait: r.required = kFlag | kCond | kValue; break;
        case Opcode::SSet:
        case Opcode::SAdd: r.required = kFlag | kValue; break;
        case Opcode::Barrier: break;
    }
    return r;
}

// rule_for, one entry per opcode byte, built once (the checks run on every instruction).
const Rule& rule_of(Opcode op) {
    static const std::array<Rule, 256> table = [] {
        std::array<Rule, 256> t{};
        for (unsigned i = 0; i < 256; ++i)
            if (is_valid_opcode(static_cast<std::uint8_t>(i))) t[i] = rule_for(static_cast<Opcode>(i));
        return t;
    }();
    return table[static_cast<std::uint8_t>(op)];
}

const char* field_name(std::uint16_t bit) {
    switch (bit) {
        case kDst: return "d";
        case kSrc0: return "s0";
        case kSrc1: return "s1";
        case kSrc2: return "s2";
        case kMemSrc: return "src";
        case kMemDst: return "dst";
        case kBytes: return "bytes";
        case kShape: return "shape";
        case kDtype: return "dtype";
        case kCount: return "count";
        case kFlag: return "flag";
        case kValue: return "val";
        case kCond: return "cond";
        case kAnn: return "ann";
        case kTimestamp: return "ts";
        default: return "?";
    }
}

std::string reg_name(std::uint8_t r) {
    if (r < kVectorRegBase) return "s" + std::to_string(r - kScalarRegBase);
    if (r < kMatrixRegBase) return "v" + std::to_string(r - kVectorRegBase);
    if (r < kNumRegs) return "m" + std::to_string(r - kMatrixRegBase);
    return "r" + std::to_string(r);
}

void check_reg(std::vector<std::string>& out, const char* key, std::uint8_t r, RC want) {
    if (r >= kNumRegs) {
        out.push_back(std::string(key) + ": register id " + std::to_string(r) + " is invalid (ids are < " +
                      std::to_string(kNumRegs) + ")");
        return;
    }
    RC have = r < kVectorRegBase ? RC::S : r < kMatrixRegBase ? RC::V : RC::M;
    if (want == RC::Any || want == have) return;
    const char* cls = want == RC::S ? "a scalar register (s0..s63)"
                      : want == RC::V ? "a vector register (v0..v63)"
                                      : "a matrix register (m0..m63)";
    out.push_back(std::string(key) + "=" + reg_name(r) + " should be " + cls);
}

void check_mem(std::vector<std::string>& out, const char* key, const MemRef& m, bool local_vmem) {
    if (static_cast<unsigned>(m.space) > static_cast<unsigned>(Space::Hbm)) {
        out.push_back(std::string(key) + ": unknown memory space " + std::to_string(static_cast<unsigned>(m.space)));
        return;
    }
    if (local_vmem && (m.space != Space::Vmem || m.chip != kLocalChip))
        out.push_back(std::string(key) + " must be local vmem, got " + std::string(space_name(m.space)) +
                      (m.chip != kLocalChip ? "@" + std::to_string(m.chip) : std::string()) + ":" + hex(m.addr));
}

}  // namespace

namespace {

bool reg_conforms(std::uint8_t r, RC want) {
    if (r >= kNumRegs) return false;
    const RC have = r < kVectorRegBase ? RC::S : r < kMatrixRegBase ? RC::V : RC::M;
    return want == RC::Any || want == have;
}

bool mem_conforms(const MemRef& m, bool local_vmem) {
    if (static_cast<unsigned>(m.space) > static_cast<unsigned>(Space::Hbm)) return false;
    return !local_vmem || (m.space == Space::Vmem && m.chip == kLocalChip);
}

}  // namespace

// The conditions of check_instruction below, without building a message: that function takes
// the slow path (the messages) only when this says no. The two must agree on every
// instruction (test: TraceValidate.FastCheckAgreesWithTheMessages).
bool instruction_conforms(const Instruction& in, std::size_t string_count, int stream_chip) {
    if (!is_valid_opcode(static_cast<std::uint8_t>(in.op))) return false;
    if (in.present & kReservedFieldBits) return false;
    const Rule& r = rule_of(in.op);
    if (r.required & ~in.present) return false;
    if (in.has(kDst) && !reg_conforms(in.dst, r.d)) return false;
    if (in.has(kSrc0) && !reg_conforms(in.src[0], r.s0)) return false;
    if (in.has(kSrc1) && !reg_conforms(in.src[1], r.s1)) return false;
    if (in.has(kSrc2) && !reg_conforms(in.src[2], r.s2)) return false;
    if (in.has(kMemSrc) && !mem_conforms(in.mem_src, r.local_vmem_src)) return false;
    if (in.has(kMemDst) && !mem_conforms(in.mem_dst, r.local_vmem_dst)) return false;
    if (in.has(kBytes) && r.bytes_positive && in.bytes == 0) return false;
    if (in.has(kShape) && ((r.dim_m && in.m == 0) || (r.dim_n && in.n == 0) || (r.dim_k && in.k == 0))) return false;
    if (in.has(kDtype) && dtype_name(in.dtype) == "?") return false;
    if (in.has(kCond) && cond_name(in.cond) == "?") return false;
    if (in.op == Opcode::Dma && in.has(kMemSrc) && in.mem_src.chip != kLocalChip && stream_chip >= 0 &&
        in.mem_src.chip != static_cast<unsigned>(stream_chip))
        return false;
    if (in.has(kAnn) && in.ann >= string_count) return false;
    return true;
}

std::vector<std::string> check_instruction(const Instruction& in, std::size_t string_count, int stream_chip) {
    if (instruction_conforms(in, string_count, stream_chip)) return {};
    return instruction_problems(in, string_count, stream_chip);
}

std::vector<std::string> instruction_problems(const Instruction& in, std::size_t string_count, int stream_chip) {
    std::vector<std::string> out;
    if (!is_valid_opcode(static_cast<std::uint8_t>(in.op))) {
        out.push_back("unknown opcode " + hex(static_cast<std::uint8_t>(in.op)));
        return out;
    }
    if (in.present & kReservedFieldBits) out.push_back("reserved present bit 15 is set");
    const Rule& r = rule_of(in.op);
    for (std::uint16_t bit = 1; bit < kReservedFieldBits; bit = static_cast<std::uint16_t>(bit << 1))
        if ((r.required & bit) && !in.has(static_cast<Field>(bit)))
            out.push_back(std::string("missing required operand ") + field_name(bit));
    if (in.has(kDst)) check_reg(out, "d", in.dst, r.d);
    if (in.has(kSrc0)) check_reg(out, "s0", in.src[0], r.s0);
    if (in.has(kSrc1)) check_reg(out, "s1", in.src[1], r.s1);
    if (in.has(kSrc2)) check_reg(out, "s2", in.src[2], r.s2);
    if (in.has(kMemSrc)) check_mem(out, "src", in.mem_src, r.local_vmem_src);
    if (in.has(kMemDst)) check_mem(out, "dst", in.mem_dst, r.local_vmem_dst);
    if (in.has(kBytes) && r.bytes_positive && in.bytes == 0) out.push_back("bytes must be > 0");
    // The shape's text only when it is wrong: checked for every matmul of every run, this
    // string was most of a valid trace's check.
    if (in.has(kShape) && ((r.dim_m && in.m == 0) || (r.dim_n && in.n == 0) || (r.dim_k && in.k == 0))) {
        const std::string shape =
            " (shape=" + std::to_string(in.m) + "x" + std::to_string(in.n) + "x" + std::to_string(in.k) + ")";
        if (r.dim_m && in.m == 0) out.push_back("shape dimension m must be > 0" + shape);
        if (r.dim_n && in.n == 0) out.push_back("shape dimension n must be > 0" + shape);
        if (r.dim_k && in.k == 0) out.push_back("shape dimension k must be > 0" + shape);
    }
    if (in.has(kDtype) && dtype_name(in.dtype) == "?")
        out.push_back("unknown dtype " + std::to_string(static_cast<unsigned>(in.dtype)));
    if (in.has(kCond) && cond_name(in.cond) == "?")
        out.push_back("unknown cond " + std::to_string(static_cast<unsigned>(in.cond)));
    if (in.op == Opcode::Dma && in.has(kMemSrc) && in.mem_src.chip != kLocalChip && stream_chip >= 0 &&
        in.mem_src.chip != static_cast<unsigned>(stream_chip))
        out.push_back("src=" + std::string(space_name(in.mem_src.space)) + "@" + std::to_string(in.mem_src.chip) + ":" +
                      hex(in.mem_src.addr) + ": a DMA reads from its own chip only (write to the other chip from there)");
    if (in.has(kAnn) && in.ann >= string_count)
        out.push_back("ann=" + std::to_string(in.ann) + " but the string table has " + std::to_string(string_count) +
                      " strings");
    return out;
}

std::vector<std::string> string_table_problems(const TraceFile& tf, std::size_t max) {
    std::vector<std::string> out;
    const std::string& bin_path = tf.path();
    const auto& strings = tf.strings();
    std::unordered_map<std::string_view, std::size_t> first_of;
    for (std::size_t i = 0; i < strings.size() && out.size() < max; ++i) {
        auto [it, fresh] = first_of.emplace(strings[i], i);
        if (!fresh)
            out.push_back(bin_path + ": string table, string " + std::to_string(i) + ": duplicate of string " +
                          std::to_string(it->second) + " " + quote_string(strings[i]) +
                          " (strings must be distinct: the text form names each by its text)");
        if (strings[i].find('\0') != std::string::npos)
            out.push_back(bin_path + ": string table, string " + std::to_string(i) + ": contains a NUL byte");
        else if (!is_valid_utf8(strings[i]))
            out.push_back(bin_path + ": string table, string " + std::to_string(i) + ": not valid UTF-8: " +
                          quote_string(strings[i]));
    }
    if (out.size() > max) out.resize(max);
    return out;
}

namespace {

// The problems found so far, at most `max`.
class Problems {
public:
    explicit Problems(std::size_t max) : max_(max == 0 ? 1 : max) {}
    // Adds m if there is room; false once the list is full.
    bool add(std::string m) {
        if (out_.size() < max_) out_.push_back({std::move(m)});
        return out_.size() < max_;
    }
    bool full() const { return out_.size() >= max_; }
    std::vector<Problem> take() { return std::move(out_); }

private:
    std::size_t max_;
    std::vector<Problem> out_;
};

// Walks every block header from offset 64 to the end of the block area and cross-checks the
// block structure with the header and the stream table.
void check_blocks(const TraceFile& tf, Problems& problems) {
    auto add = [&](std::string m) { return problems.add(std::move(m)); };
    const std::string& path = tf.path();
    detail::InputFile f(path);
    const std::size_t ns = tf.streams().size();
    std::vector<std::uint64_t> blocks(ns, 0), instrs(ns, 0), first(ns, 0);
    std::uint64_t off = kHeaderSize, total_blocks = 0;
    const std::uint64_t end = tf.block_area_end();
    bool scanned = true;
    while (off < end) {
        std::uint8_t h[kBlockHeaderSize];
        const std::string at = path + ": block at offset " + hex(off) + ": ";
        if (end - off < kBlockHeaderSize || !f.read_at(off, h, kBlockHeaderSize)) {
            add(at + "truncated block header before the tables at " + hex(end));
            scanned = false;
            break;
        }
        if (std::memcmp(h, kBlockMagic, 4) != 0) {
            add(at + "expected block magic \"XBLK\" (the block area holds something else)");
            scanned = false;
            break;
        }
        const std::uint32_t si = codec::get_u32(h + 4), count = codec::get_u32(h + 8), payload = codec::get_u32(h + 12);
        if (si >= ns || count == 0 || payload > kMaxBlockPayload || payload > end - off - kBlockHeaderSize) {
            add(at + "bad block header (stream " + std::to_string(si) + ", " + std::to_string(count) +
                " instructions, " + std::to_string(payload) + " payload bytes)");
            scanned = false;
            break;
        }
        if (blocks[si] == 0) first[si] = off;
        ++blocks[si];
        instrs[si] += count;
        ++total_blocks;
        off += kBlockHeaderSize + payload;
    }
    if (!scanned) return;
    if (total_blocks != tf.block_count())
        add(path + ": header says " + std::to_string(tf.block_count()) + " blocks but the block area holds " +
            std::to_string(total_blocks));
    for (std::size_t s = 0; s < ns; ++s) {
        const StreamInfo& si = tf.streams()[s];
        if (blocks[s] != si.blocks)
            add(tf.describe_stream(s) + ": stream table says " + std::to_string(si.blocks) +
                " blocks but the file holds " + std::to_string(blocks[s]));
        if (instrs[s] != si.instructions)
            add(tf.describe_stream(s) + ": stream table says " + std::to_string(si.instructions) +
                " instructions but its blocks hold " + std::to_string(instrs[s]));
        if (first[s] != si.first_block_offset)
            add(tf.describe_stream(s) + ": stream table's first_block_offset is " + hex(si.first_block_offset) +
                " but the stream's first block is at " + hex(first[s]));
    }
}

// The string table: strings are distinct (the text form names each by its text), without NUL,
// valid UTF-8.
void check_strings(const TraceFile& tf, Problems& problems) {
    for (auto& m : string_table_problems(tf, 1000)) problems.add(std::move(m));
}

// Every instruction of stream s against the operand conventions (check_instruction). False
// once the list of problems is full.
bool check_stream(const TraceFile& tf, std::size_t s, Problems& problems) {
    constexpr std::size_t kChunk = 4096;
    std::vector<Instruction> buf(kChunk);
    StreamReader r(tf, s);
    std::uint64_t index = 0;
    while (std::size_t n = r.read(buf.data(), kChunk)) {
        for (std::size_t i = 0; i < n; ++i, ++index) {
            auto issues = check_instruction(buf[i], tf.strings().size(), tf.streams()[s].chip);
            if (issues.empty()) continue;
            std::string msg = tf.describe_stream(s) + ", instruction " + std::to_string(index) + " (" +
                              format_instruction(buf[i]) + "): ";
            for (std::size_t k = 0; k < issues.size(); ++k) msg += (k ? "; " : "") + issues[k];
            if (!problems.add(std::move(msg))) return false;
        }
    }
    return true;
}

}  // namespace

std::vector<Problem> validate(const std::string& bin_path, std::size_t max_problems) {
    Problems problems(max_problems);
    TraceFile tf;
    try {
        tf = TraceFile::open(bin_path);
    } catch (const TraceError& e) {
        problems.add(e.what());
        return problems.take();
    }
    check_strings(tf, problems);
    try {
        check_blocks(tf, problems);
    } catch (const TraceError& e) {
        problems.add(e.what());
    }
    for (std::size_t s = 0; s < tf.streams().size() && !problems.full(); ++s) {
        try {
            if (!check_stream(tf, s, problems)) break;
        } catch (const TraceError& e) {
            problems.add(e.what());
        }
    }
    return problems.take();
}

// ---------------------------------------------------------------------------------------------

void StreamSummary::add(const Instruction& in) {
    ++instructions;
    ++opcode_counts[static_cast<std::uint8_t>(in.op)];
    const std::uint64_t bytes = in.has(kBytes) ? in.bytes : 0;
    switch (in.op) {
        case Opcode::VLoad: vld_bytes += bytes; break;
        case Opcode::VStore: vst_bytes += bytes; break;
        case Opcode::Dma:
            if (!in.has(kMemSrc) || !in.has(kMemDst)) {
                dma.other += bytes;
            } else if (in.mem_src.chip != kLocalChip || in.mem_dst.chip != kLocalChip) {
                dma.remote += bytes;
            } else if (in.mem_src.space == Space::Hbm && in.mem_dst.space == Space::Vmem) {
                dma.hbm_to_vmem += bytes;
            } else if (in.mem_src.space == Space::Vmem && in.mem_dst.space == Space::Hbm) {
                dma.vmem_to_hbm += bytes;
            } else {
                dma.other += bytes;
            }
            break;
        default: break;
    }
}

void StreamSummary::merge(const StreamSummary& o) {
    instructions += o.instructions;
    for (std::size_t i = 0; i < opcode_counts.size(); ++i) opcode_counts[i] += o.opcode_counts[i];
    dma.hbm_to_vmem += o.dma.hbm_to_vmem;
    dma.vmem_to_hbm += o.dma.vmem_to_hbm;
    dma.remote += o.dma.remote;
    dma.other += o.dma.other;
    vld_bytes += o.vld_bytes;
    vst_bytes += o.vst_bytes;
}

TraceSummary summarize(const std::string& bin_path) {
    const TraceFile tf = TraceFile::open(bin_path);
    TraceSummary s;
    s.path = bin_path;
    s.version_major = tf.version_major();
    s.version_minor = tf.version_minor();
    s.file_size = tf.file_size();
    s.strings = tf.strings().size();
    constexpr std::size_t kChunk = 4096;
    std::vector<Instruction> buf(kChunk);
    for (std::size_t i = 0; i < tf.streams().size(); ++i) {
        StreamSummary ss;
        ss.chip = tf.streams()[i].chip;
        ss.core = tf.streams()[i].core;
        StreamReader r(tf, i);
        while (std::size_t n = r.read(buf.data(), kChunk))
            for (std::size_t k = 0; k < n; ++k) ss.add(buf[k]);
        s.total.merge(ss);
        s.streams.push_back(ss);
    }
    return s;
}

void print_summary(const TraceSummary& s, std::ostream& out) {
    out << "file: " << s.path << " (" << s.file_size << " bytes)\n";
    out << "format: " << s.version_major << "." << s.version_minor << "\n";
    out << "streams: " << s.streams.size() << "\n";
    out << "instructions: " << s.total.instructions << "\n";
    out << "strings: " << s.strings << "\n";
    for (std::size_t i = 0; i < s.streams.size(); ++i)
        out << "stream " << i << ": chip " << s.streams[i].chip << " core " << s.streams[i].core << ": "
            << s.streams[i].instructions << " instructions\n";
    out << "opcodes:\n";
    for (std::size_t op = 0; op < 256; ++op)
        if (s.total.opcode_counts[op] != 0)
            out << "  " << std::left << std::setw(8) << mnemonic(static_cast<Opcode>(op)) << std::right << " "
                << s.total.opcode_counts[op] << "\n";
    out << "dma bytes:\n";
    out << "  hbm->vmem " << s.total.dma.hbm_to_vmem << "\n";
    out << "  vmem->hbm " << s.total.dma.vmem_to_hbm << "\n";
    out << "  remote " << s.total.dma.remote << "\n";
    out << "  other " << s.total.dma.other << "\n";
    out << "vld bytes: " << s.total.vld_bytes << "\n";
    out << "vst bytes: " << s.total.vst_bytes << "\n";
}

}  // namespace xpu::trace
