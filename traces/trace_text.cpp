#include "traces/trace_text.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace xpu::trace {

namespace {

// ---------------------------------------------------------------------------------------------
// Formatting

constexpr std::size_t kLineMax = 512;  // longest possible formatted instruction is ~300 chars

char* put(char* p, std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
}
char* put_dec(char* p, std::uint64_t v) { return std::to_chars(p, p + 24, v).ptr; }
char* put_sdec(char* p, std::int64_t v) { return std::to_chars(p, p + 24, v).ptr; }
char* put_hex(char* p, std::uint64_t v) {
    p = put(p, "0x");
    return std::to_chars(p, p + 20, v, 16).ptr;
}
char* put_reg(char* p, std::uint8_t r) {
    if (r < kVectorRegBase) {
        *p++ = 's';
        return put_dec(p, r - kScalarRegBase);
    }
    if (r < kMatrixRegBase) {
        *p++ = 'v';
        return put_dec(p, r - kVectorRegBase);
    }
    if (r < kMatrixRegBase + kRegsPerClass) {
        *p++ = 'm';
        return put_dec(p, r - kMatrixRegBase);
    }
    *p++ = 'r';  // raw id of an invalid register (the validator reports it); parses back
    return put_dec(p, r);
}
char* put_mem(char* p, const MemRef& m) {
    p = put(p, space_name(m.space));
    if (m.chip != kLocalChip) {
        *p++ = '@';
        p = put_dec(p, m.chip);
    }
    *p++ = ':';
    return put_hex(p, m.addr);
}

char* format_to(char* p, const Instruction& in) {
    p = put(p, mnemonic(in.op));
    if (in.unit != 0) p = put_dec(put(p, " u="), in.unit);
    const std::uint16_t m = in.present;
    if (m & kDst) p = put_reg(put(p, " d="), in.dst);
    if (m & kSrc0) p = put_reg(put(p, " s0="), in.src[0]);
    if (m & kSrc1) p = put_reg(put(p, " s1="), in.src[1]);
    if (m & kSrc2) p = put_reg(put(p, " s2="), in.src[2]);
    if (m & kMemSrc) p = put_mem(put(p, " src="), in.mem_src);
    if (m & kMemDst) p = put_mem(put(p, " dst="), in.mem_dst);
    if (m & kBytes) p = put_dec(put(p, " bytes="), in.bytes);
    if (m & kShape) {
        p = put_dec(put(p, " shape="), in.m);
        p = put_dec(put(p, "x"), in.n);
        p = put_dec(put(p, "x"), in.k);
    }
    if (m & kDtype) p = put(put(p, " dtype="), dtype_name(in.dtype));
    if (m & kCount) p = put_dec(put(p, " count="), in.count);
    if (m & kFlag) p = put_dec(put(p, " flag="), in.flag);
    if (m & kValue) p = put_sdec(put(p, " val="), in.value);
    if (m & kCond) p = put(put(p, " cond="), cond_name(in.cond));
    if (m & kAnn) p = put_dec(put(p, " ann="), in.ann);
    if (m & kTimestamp) p = put_dec(put(p, " ts="), in.timestamp);
    return p;
}

// ---------------------------------------------------------------------------------------------
// Parsing

bool is_space(char c) { return c == ' ' || c == '\t'; }

struct LineCtx {
    std::string_view s;
    const std::string& file;
    std::size_t line_no;

    [[noreturn]] void error(std::size_t pos, const std::string& msg) const {
        throw TraceError(file + ":" + std::to_string(line_no) + ":" + std::to_string(pos + 1) + ": " + msg);
    }
    std::size_t skip_ws(std::size_t pos) const {
        while (pos < s.size() && is_space(s[pos])) ++pos;
        return pos;
    }
    bool at_end(std::size_t pos) const { return pos >= s.size() || s[pos] == '#'; }
    // A token runs to the next blank or '#'.
    std::size_t token_end(std::size_t pos) const {
        while (pos < s.size() && !is_space(s[pos]) && s[pos] != '#') ++pos;
        return pos;
    }
};

std::string show(std::string_view tok) { return "'" + std::string(tok) + "'"; }

enum class Num { Ok, Syntax, Range };

// Decimal, or hexadecimal with a 0x prefix.
Num parse_u64(std::string_view s, std::uint64_t& v) {
    int base = 10;
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    if (s.empty()) return Num::Syntax;
    for (char c : s) {
        const bool ok = base == 10 ? (c >= '0' && c <= '9')
                                   : ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
        if (!ok) return Num::Syntax;
    }
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (r.ec == std::errc::result_out_of_range) return Num::Range;
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return Num::Syntax;
    return Num::Ok;
}

std::uint64_t number(const LineCtx& c, std::size_t pos, std::string_view tok, std::uint64_t max, const char* what) {
    std::uint64_t v = 0;
    const Num r = parse_u64(tok, v);
    if (r == Num::Syntax)
        c.error(pos, std::string("expected a number (decimal or 0x hex) for ") + what + ", got " + show(tok));
    if (r == Num::Range || v > max)
        c.error(pos, std::string("number out of range for ") + what + ": " + std::string(tok) + " (expected 0.." +
                         std::to_string(max) + ")");
    return v;
}

std::int64_t signed_number(const LineCtx& c, std::size_t pos, std::string_view tok, const char* what) {
    bool neg = false;
    std::string_view digits = tok;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
        neg = digits[0] == '-';
        digits.remove_prefix(1);
    }
    std::uint64_t v = 0;
    const Num r = parse_u64(digits, v);
    if (r == Num::Syntax)
        c.error(pos, std::string("expected a signed number for ") + what + ", got " + show(tok));
    const std::uint64_t limit = neg ? (std::uint64_t{1} << 63) : (std::uint64_t{1} << 63) - 1;
    if (r == Num::Range || v > limit)
        c.error(pos, std::string("number out of range for ") + what + ": " + std::string(tok) +
                         " (expected -9223372036854775808..9223372036854775807)");
    if (neg) return v == (std::uint64_t{1} << 63) ? INT64_MIN : -static_cast<std::int64_t>(v);
    return static_cast<std::int64_t>(v);
}

std::uint8_t reg(const LineCtx& c, std::size_t pos, std::string_view tok, const char* key) {
    const std::string expect = std::string("expected a register (s0..s63, v0..v63, m0..m63) for ") + key + ", got " + show(tok);
    if (tok.size() < 2) c.error(pos, expect);
    const std::string_view digits = tok.substr(1);
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) c.error(pos, expect);
    std::uint64_t n = 0;
    const Num r = parse_u64(digits, n);
    if (r == Num::Syntax) c.error(pos, expect);
    std::uint64_t base = 0, limit = kRegsPerClass;
    switch (tok[0]) {
        case 's': base = kScalarRegBase; break;
        case 'v': base = kVectorRegBase; break;
        case 'm': base = kMatrixRegBase; break;
        case 'r': limit = 256; break;  // raw register id (what dis prints for invalid ids)
        default: c.error(pos, expect);
    }
    if (r == Num::Range || n >= limit)
        c.error(pos, "register number out of range: " + std::string(tok) + " (expected " + tok[0] + "0.." + tok[0] +
                         std::to_string(limit - 1) + ")");
    return static_cast<std::uint8_t>(base + n);
}

MemRef mem(const LineCtx& c, std::size_t pos, std::string_view tok, const char* key) {
    const std::size_t colon = tok.find(':');
    if (colon == std::string_view::npos)
        c.error(pos, std::string("expected a memory operand SPACE[@CHIP]:ADDR for ") + key +
                         " (e.g. hbm:0x1000, vmem@3:0x0), got " + show(tok));
    std::string_view head = tok.substr(0, colon);
    const std::size_t at = head.find('@');
    const std::string_view space = head.substr(0, at);
    MemRef m;
    if (auto sp = space_from_name(space)) {
        m.space = *sp;
    } else {
        c.error(pos, "unknown memory space " + show(space) + " (expected vmem or hbm)");
    }
    if (at != std::string_view::npos)
        m.chip = static_cast<std::uint16_t>(
            number(c, pos + at + 1, head.substr(at + 1), kLocalChip - 1, "chip (omit @CHIP for the local chip)"));
    m.addr = number(c, pos + colon + 1, tok.substr(colon + 1), ~std::uint64_t{0}, "address");
    return m;
}

// Shape MxNxK, decimal.
void shape(const LineCtx& c, std::size_t pos, std::string_view tok, Instruction& in) {
    std::uint32_t dims[3] = {0, 0, 0};
    std::size_t start = 0;
    for (int i = 0; i < 3; ++i) {
        const std::size_t x = i < 2 ? tok.find('x', start) : tok.size();
        if (x == std::string_view::npos)
            c.error(pos, "expected shape=MxNxK (e.g. 128x128x128), got " + show(tok));
        const std::string_view part = tok.substr(start, x - start);
        if (part.empty() || part.find_first_not_of("0123456789") != std::string_view::npos)
            c.error(pos + start, "expected shape=MxNxK (decimal numbers, e.g. 128x128x128), got " + show(tok));
        dims[i] = static_cast<std::uint32_t>(number(c, pos + start, part, 0xFFFFFFFFu, "a shape dimension"));
        start = x + 1;
    }
    in.m = dims[0];
    in.n = dims[1];
    in.k = dims[2];
}

std::string_view mnemonic_list() {
    return "salu branch nop halt vld vst valu vtrans vreduce vperm mpush matmul mpop dma swait sset sadd barrier";
}

constexpr std::string_view kKeys[] = {"u",     "d",     "s0",    "s1",   "s2",  "src", "dst",  "bytes",
                                      "shape", "dtype", "count", "flag", "val", "cond", "ann", "ts"};

Instruction parse_line(const LineCtx& c, std::size_t* ann_col) {
    Instruction in;
    std::size_t pos = c.skip_ws(0);
    if (c.at_end(pos)) c.error(pos, "expected an instruction mnemonic (" + std::string(mnemonic_list()) + ")");
    std::size_t end = c.token_end(pos);
    const std::string_view mn = c.s.substr(pos, end - pos);
    if (auto op = opcode_from_mnemonic(mn)) {
        in.op = *op;
    } else {
        c.error(pos, "unknown mnemonic " + show(mn) + " (expected one of: " + std::string(mnemonic_list()) + ")");
    }
    std::size_t seen_at[16] = {};  // 1-based column where each key was first given
    pos = c.skip_ws(end);
    while (!c.at_end(pos)) {
        end = c.token_end(pos);
        const std::string_view tok = c.s.substr(pos, end - pos);
        const std::size_t eq = tok.find('=');
        if (eq == std::string_view::npos) c.error(pos, "expected key=value, got " + show(tok));
        const std::string_view key = tok.substr(0, eq);
        const std::string_view val = tok.substr(eq + 1);
        const std::size_t vpos = pos + eq + 1;
        int ki = -1;
        for (int i = 0; i < 16; ++i)
            if (kKeys[i] == key) ki = i;
        if (ki < 0)
            c.error(pos, "unknown key " + show(key) +
                             " (expected one of: u d s0 s1 s2 src dst bytes shape dtype count flag val cond ann ts)");
        if (seen_at[ki] != 0)
            c.error(pos, "key " + show(key) + " given twice (first at column " + std::to_string(seen_at[ki]) + ")");
        seen_at[ki] = pos + 1;
        if (val.empty()) c.error(vpos, "expected a value after " + std::string(key) + "=");
        switch (ki) {
            case 0: in.unit = static_cast<std::uint8_t>(number(c, vpos, val, 255, "u (unit index)")); break;
            case 1: in.dst = reg(c, vpos, val, "d"); in.set(kDst); break;
            case 2: in.src[0] = reg(c, vpos, val, "s0"); in.set(kSrc0); break;
            case 3: in.src[1] = reg(c, vpos, val, "s1"); in.set(kSrc1); break;
            case 4: in.src[2] = reg(c, vpos, val, "s2"); in.set(kSrc2); break;
            case 5: in.mem_src = mem(c, vpos, val, "src"); in.set(kMemSrc); break;
            case 6: in.mem_dst = mem(c, vpos, val, "dst"); in.set(kMemDst); break;
            case 7: in.bytes = number(c, vpos, val, ~std::uint64_t{0}, "bytes"); in.set(kBytes); break;
            case 8: shape(c, vpos, val, in); in.set(kShape); break;
            case 9:
                if (auto d = dtype_from_name(val)) in.dtype = *d;
                else c.error(vpos, "unknown dtype " + show(val) + " (expected bf16 f32 int8 f16 fp8 int32)");
                in.set(kDtype);
                break;
            case 10: in.count = static_cast<std::uint32_t>(number(c, vpos, val, 0xFFFFFFFFu, "count")); in.set(kCount); break;
            case 11: in.flag = static_cast<std::uint16_t>(number(c, vpos, val, 0xFFFF, "flag")); in.set(kFlag); break;
            case 12: in.value = signed_number(c, vpos, val, "val"); in.set(kValue); break;
            case 13:
                if (auto cd = cond_from_name(val)) in.cond = *cd;
                else c.error(vpos, "unknown cond " + show(val) + " (expected eq ne ge gt le lt)");
                in.set(kCond);
                break;
            case 14:
                in.ann = static_cast<std::uint32_t>(number(c, vpos, val, 0xFFFFFFFFu, "ann (string id)"));
                in.set(kAnn);
                if (ann_col) *ann_col = vpos;
                break;
            case 15: in.timestamp = number(c, vpos, val, ~std::uint64_t{0}, "ts"); in.set(kTimestamp); break;
        }
        pos = c.skip_ws(end);
    }
    return in;
}

// A quoted string literal starting at pos (which holds '"'); returns the position after it.
std::size_t parse_quoted(const LineCtx& c, std::size_t pos, std::string& out) {
    if (pos >= c.s.size() || c.s[pos] != '"') c.error(pos, "expected a double-quoted string");
    const std::size_t open = pos++;
    auto hexval = [](char ch) -> int {
        if (ch >= '0' && ch <= '9') return ch - '0';
        if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
        return -1;
    };
    while (true) {
        if (pos >= c.s.size()) c.error(open, "unterminated string (expected a closing '\"')");
        const char ch = c.s[pos];
        if (ch == '"') return pos + 1;
        if (ch != '\\') {
            if (ch == '\0') c.error(pos, "NUL is not allowed in strings");
            out += ch;
            ++pos;
            continue;
        }
        if (pos + 1 >= c.s.size()) c.error(pos, "unterminated escape at end of line");
        switch (c.s[pos + 1]) {
            case '"': out += '"'; pos += 2; break;
            case '\\': out += '\\'; pos += 2; break;
            case 'n': out += '\n'; pos += 2; break;
            case 't': out += '\t'; pos += 2; break;
            case 'x': {
                const int hi = pos + 2 < c.s.size() ? hexval(c.s[pos + 2]) : -1;
                const int lo = pos + 3 < c.s.size() ? hexval(c.s[pos + 3]) : -1;
                if (hi < 0 || lo < 0) c.error(pos, "expected two hex digits after \\x");
                if (hi == 0 && lo == 0) c.error(pos, "NUL (\\x00) is not allowed in strings");
                out += static_cast<char>(hi * 16 + lo);
                pos += 4;
                break;
            }
            default:
                c.error(pos, std::string("unknown escape '\\") + c.s[pos + 1] +
                                 "' (expected \\\" \\\\ \\n \\t or \\xHH)");
        }
    }
}

void expect_end(const LineCtx& c, std::size_t pos) {
    pos = c.skip_ws(pos);
    if (!c.at_end(pos)) c.error(pos, "expected end of line (or a # comment), got " + show(c.s.substr(pos, c.token_end(pos) - pos)));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool is_valid_utf8(std::string_view s) {
    std::size_t i = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    while (i < s.size()) {
        const unsigned char b = p[i];
        if (b < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1Fu; }
        else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0Fu; }
        else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07u; }
        else return false;
        if (i + len > s.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i + k] & 0x3Fu);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

std::string quote_string(std::string_view s) {
    const bool utf8 = is_valid_utf8(s);
    std::string out = "\"";
    for (const char ch : s) {
        const auto b = static_cast<unsigned char>(ch);
        if (ch == '"') out += "\\\"";
        else if (ch == '\\') out += "\\\\";
        else if (ch == '\n') out += "\\n";
        else if (ch == '\t') out += "\\t";
        else if (b < 0x20 || b == 0x7F || (b >= 0x80 && !utf8)) {
            static const char* digits = "0123456789ABCDEF";
            out += "\\x";
            out += digits[b >> 4];
            out += digits[b & 15];
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string format_instruction(const Instruction& in) {
    char buf[kLineMax];
    return std::string(buf, format_to(buf, in));
}

Instruction parse_instruction(std::string_view line, const std::string& file, std::size_t line_no) {
    const LineCtx c{line, file, line_no};
    return parse_line(c, nullptr);
}

void disassemble(const std::string& bin_path, std::ostream& out) {
    const TraceFile tf = TraceFile::open(bin_path);
    std::string buf;
    buf.reserve(1 << 20);
    auto flush = [&] {
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        buf.clear();
        if (!out) throw TraceError(bin_path + ": disassembly output failed");
    };
    buf += ".xtr ";
    buf += kTextVersion;
    buf += "\n# " + std::to_string(tf.streams().size()) + " streams, " + std::to_string(tf.total_instructions()) +
           " instructions, " + std::to_string(tf.strings().size()) + " strings (binary format " +
           std::to_string(tf.version_major()) + "." + std::to_string(tf.version_minor()) + ")\n";
    std::vector<std::string> quoted;
    quoted.reserve(tf.strings().size());
    for (std::size_t i = 0; i < tf.strings().size(); ++i) {
        quoted.push_back(quote_string(tf.strings()[i]));
        buf += ".string " + std::to_string(i) + " " + quoted.back() + "\n";
        if (buf.size() > (1 << 20)) flush();
    }
    constexpr std::size_t kChunk = 4096;
    std::vector<Instruction> ins(kChunk);
    char line[kLineMax];
    for (std::size_t s = 0; s < tf.streams().size(); ++s) {
        const StreamInfo& si = tf.streams()[s];
        buf += "\n.stream chip=" + std::to_string(si.chip) + " core=" + std::to_string(si.core) + "  # stream " +
               std::to_string(s) + ": " + std::to_string(si.instructions) + " instructions\n";
        StreamReader r(tf, s);
        while (std::size_t n = r.read(ins.data(), kChunk)) {
            for (std::size_t i = 0; i < n; ++i) {
                buf.append(line, format_to(line, ins[i]));
                if (ins[i].has(kAnn) && ins[i].ann < quoted.size()) {
                    buf += "  # ";
                    buf += quoted[ins[i].ann];
                }
                buf += '\n';
            }
            if (buf.size() > (1 << 20)) flush();
        }
    }
    flush();
    out.flush();
    if (!out) throw TraceError(bin_path + ": disassembly output failed");
}

void assemble(const std::string& xtr_path, const std::string& bin_path) {
    std::ifstream in(xtr_path, std::ios::binary);
    if (!in) throw TraceError(xtr_path + ": cannot open for reading: " + std::strerror(errno));
    TraceWriter w(bin_path);
    bool have_version = false;
    std::optional<std::size_t> stream;
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::size_t> streams;
    std::string line;
    std::size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const LineCtx c{line, xtr_path, line_no};
        std::size_t pos = c.skip_ws(0);
        if (c.at_end(pos)) continue;
        if (c.s[pos] != '.') {
            if (!have_version) c.error(pos, "expected the version line '.xtr 1.0' before any instruction");
            if (!stream) c.error(pos, "expected a '.stream chip=N core=M' line before the first instruction");
            std::size_t ann_col = 0;
            const Instruction ins = parse_line(c, &ann_col);
            if (ins.has(kAnn) && ins.ann >= w.string_count())
                c.error(ann_col, "ann=" + std::to_string(ins.ann) + " names no string (expected a .string " +
                                     std::to_string(ins.ann) + " line before it; " + std::to_string(w.string_count()) +
                                     " defined)");
            w.append(*stream, ins);
            continue;
        }
        const std::size_t end = c.token_end(pos);
        const std::string_view dir = c.s.substr(pos, end - pos);
        if (dir == ".xtr") {
            if (have_version) c.error(pos, "duplicate '.xtr' version line");
            const std::size_t vp = c.skip_ws(end);
            const std::string_view ver = c.s.substr(vp, c.token_end(vp) - vp);
            if (ver != kTextVersion)
                c.error(vp, "expected text format version 1.0 ('.xtr 1.0'), got " + show(ver));
            expect_end(c, c.token_end(vp));
            have_version = true;
            continue;
        }
        if (!have_version) c.error(pos, "expected the version line '.xtr 1.0' first");
        if (dir == ".string") {
            const std::size_t ip = c.skip_ws(end);
            const std::size_t ie = c.token_end(ip);
            const std::uint64_t id = number(c, ip, c.s.substr(ip, ie - ip), 0xFFFFFFFFu, "the string id");
            if (id != w.string_count())
                c.error(ip, "expected string id " + std::to_string(w.string_count()) +
                                " (ids must be 0, 1, 2, ... in order), got " + std::to_string(id));
            std::string text;
            const std::size_t qp = c.skip_ws(ie);
            const std::size_t after = parse_quoted(c, qp, text);
            expect_end(c, after);
            const std::uint32_t got = w.add_string(text);
            if (got != id) c.error(qp, "duplicate string: the same text is string " + std::to_string(got));
            continue;
        }
        if (dir == ".stream") {
            std::optional<std::uint16_t> chip, core;
            std::size_t p = c.skip_ws(end);
            while (!c.at_end(p)) {
                const std::size_t te = c.token_end(p);
                const std::string_view tok = c.s.substr(p, te - p);
                const std::size_t eq = tok.find('=');
                const std::string_view key = tok.substr(0, eq);
                if (eq == std::string_view::npos || (key != "chip" && key != "core"))
                    c.error(p, "expected chip=N or core=M, got " + show(tok));
                auto& slot = key == "chip" ? chip : core;
                if (slot) c.error(p, "key " + show(key) + " given twice");
                slot = static_cast<std::uint16_t>(number(c, p + eq + 1, tok.substr(eq + 1), 0xFFFF, key == "chip" ? "chip" : "core"));
                p = c.skip_ws(te);
            }
            if (!chip || !core) c.error(p, "expected both chip=N and core=M on the .stream line");
            const auto keyp = std::make_pair(*chip, *core);
            auto it = streams.find(keyp);
            if (it == streams.end()) it = streams.emplace(keyp, w.add_stream(*chip, *core)).first;
            stream = it->second;  // a repeated .stream line switches back to that stream
            continue;
        }
        c.error(pos, "unknown directive " + show(dir) + " (expected .xtr, .string or .stream)");
    }
    if (in.bad()) throw TraceError(xtr_path + ": read error");
    if (!have_version)
        throw TraceError(xtr_path + ":" + std::to_string(line_no + 1) +
                         ":1: expected the version line '.xtr 1.0' (the file has none)");
    w.close();
}

}  // namespace xpu::trace
