// Fuzz target: the binary trace reader. Any bytes: TraceFile::open, then every stream through
// a StreamReader, then validate() and, for a file that validates, the text round trip. Each
// input runs twice: as it is, and with its file_size and every CRC it has recomputed (so that
// mutations get past the checksums to the block walk and the instruction decoder).
// Must never crash, hang or leak; the only error allowed is TraceError. Invariants:
//   - a stream that reads to the end yields exactly the instruction count of the stream table;
//   - validate() never throws, and reports no problem for nothing (open + reads succeeded and
//     it says OK => every check of the reader passed too);
//   - a file validate() accepts disassembles, and the text assembles to a file with the same
//     streams and instructions (asm(dis(x)) has x's content).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "traces/crc32.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"
#include "traces/trace_validate.h"

using namespace xpu;
using namespace xpu::trace;

namespace {

// Every instruction of every stream; false (and nothing else) on a TraceError.
bool read_all(const std::string& path, std::vector<std::vector<Instruction>>& out, std::vector<StreamInfo>* infos) {
    try {
        const TraceFile tf = TraceFile::open(path);
        if (infos) *infos = tf.streams();
        out.assign(tf.streams().size(), {});
        std::vector<Instruction> buf(97);  // an odd batch size: reads cross block boundaries
        for (std::size_t s = 0; s < tf.streams().size(); ++s) {
            StreamReader r(tf, s);
            while (std::size_t n = r.read(buf.data(), buf.size())) {
                out[s].insert(out[s].end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
                if (out[s].size() > tf.streams()[s].instructions) fuzz::broken("a stream yielded more instructions than its count");
            }
            if (out[s].size() != tf.streams()[s].instructions) fuzz::broken("a stream ended before its count without an error");
            if (r.read(buf.data(), buf.size()) != 0) fuzz::broken("read after the end returned instructions");
        }
        return true;
    } catch (const TraceError&) {
        return false;
    }
}

// Best effort: file_size := the real size, then the CRCs of the header, of every block found
// by walking the block headers from offset 64, and of the two tables.
std::vector<std::uint8_t> fix_crcs(const std::uint8_t* data, std::size_t size) {
    using namespace codec;
    std::vector<std::uint8_t> b(data, data + size);
    if (size < kHeaderSize) return b;
    std::uint8_t* p = b.data();
    put_u64(p + 40, size);
    const std::uint64_t st = get_u64(p + 24), ss = get_u64(p + 32);
    const std::uint64_t end = std::min<std::uint64_t>({st, ss, size});
    for (std::uint64_t off = kHeaderSize; off + kBlockHeaderSize <= end;) {
        if (std::memcmp(p + off, kBlockMagic, 4) != 0) break;
        const std::uint32_t payload = get_u32(p + off + 12);
        if (payload > end - off - kBlockHeaderSize) break;
        put_u32(p + off + 16, crc32(p + off + kBlockHeaderSize, payload));
        off += kBlockHeaderSize + payload;
    }
    if (st >= kHeaderSize && st <= size && size - st >= 8 && std::memcmp(p + st, kStreamTableMagic, 4) == 0) {
        const std::uint64_t n = get_u32(p + st + 4), len = 8 + n * kStreamEntrySize;
        if (len <= size - st && size - st - len >= 4) put_u32(p + st + len, crc32(p + st, len));
    }
    if (ss >= kHeaderSize && ss <= size && size - ss >= 8 && std::memcmp(p + ss, kStringTableMagic, 4) == 0) {
        const std::uint32_t n = get_u32(p + ss + 4);
        std::uint64_t off = ss + 8;
        bool ok = true;
        for (std::uint32_t i = 0; i < n && ok; ++i) {
            std::uint64_t len = 0;
            unsigned shift = 0;
            while (true) {
                if (off >= size || shift > 63) { ok = false; break; }
                const std::uint8_t c = p[off++];
                len |= std::uint64_t(c & 0x7F) << shift;
                shift += 7;
                if (c < 0x80) break;
            }
            if (!ok || len > size - off) ok = false;
            else off += len;
        }
        if (ok && size - off >= 4) put_u32(p + off, crc32(p + ss, off - ss));
    }
    put_u32(p + kHeaderCrcOffset, crc32(p, kHeaderCrcOffset));
    return b;
}

void one_input(const std::uint8_t* data, std::size_t size);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    one_input(data, size);
    const std::vector<std::uint8_t> fixed = fix_crcs(data, size);
    one_input(fixed.data(), fixed.size());
    return 0;
}

namespace {

void one_input(const std::uint8_t* data, std::size_t size) {
    const std::string in = fuzz::scratch("in.bin");
    fuzz::write_file(in, data, size);
    std::vector<std::vector<Instruction>> ins;
    std::vector<StreamInfo> infos;
    const bool readable = read_all(in, ins, &infos);

    std::vector<Problem> problems;
    try {
        problems = validate(in, 20);
    } catch (const std::exception& e) {
        fuzz::broken(std::string("validate() threw: ") + e.what());
    }
    if (problems.empty() && !readable) fuzz::broken("validate() accepts a file the reader rejects");
    if (!problems.empty() || !readable) return;

    // A valid file: the text form must carry all of it.
    std::ostringstream text;
    try {
        disassemble(in, text);
    } catch (const TraceError& e) {
        fuzz::broken(std::string("disassemble() of a valid file failed: ") + e.what());
    }
    const std::string xtr = fuzz::scratch("dis.xtr"), again = fuzz::scratch("again.bin");
    const std::string t = text.str();
    fuzz::write_file(xtr, reinterpret_cast<const std::uint8_t*>(t.data()), t.size());
    try {
        assemble(xtr, again);
    } catch (const TraceError& e) {
        fuzz::broken(std::string("the disassembly of a valid file does not assemble: ") + e.what());
    }
    std::vector<std::vector<Instruction>> ins2;
    std::vector<StreamInfo> infos2;
    if (!read_all(again, ins2, &infos2)) fuzz::broken("asm(dis(x)) is unreadable");
    if (ins2 != ins) fuzz::broken("asm(dis(x)) has other instructions than x");
    if (infos2.size() != infos.size()) fuzz::broken("asm(dis(x)) has another number of streams");
    for (std::size_t s = 0; s < infos.size(); ++s)
        if (infos2[s].chip != infos[s].chip || infos2[s].core != infos[s].core) fuzz::broken("asm(dis(x)) renamed a stream");
    }

}  // namespace
