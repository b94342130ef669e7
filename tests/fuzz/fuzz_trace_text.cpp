// Fuzz target: the text assembler. Any bytes as a whole .xtr file through assemble(). Must
// never crash, hang or leak; the only error allowed is TraceError, and then no output file may
// be left (neither OUT nor OUT.tmp). Invariants for text that assembles:
//   - the binary reads back (every stream to its count) and validates structurally;
//   - dis(asm(x)) assembles again to the very same bytes (the canonical layout).
#include <cstdint>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "tests/fuzz/fuzz_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"

using namespace xpu;
using namespace xpu::trace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string in = fuzz::scratch("in.xtr"), out = fuzz::scratch("out.bin");
    fuzz::write_file(in, data, size);
    std::remove(out.c_str());
    try {
        assemble(in, out);
    } catch (const TraceError&) {
        if (access(out.c_str(), F_OK) == 0 || access((out + ".tmp").c_str(), F_OK) == 0)
            fuzz::broken("assemble() failed but left an output file");
        return 0;
    }
    std::uint64_t total = 0;
    try {
        const TraceFile tf = TraceFile::open(out);
        std::vector<Instruction> buf(256);
        for (std::size_t s = 0; s < tf.streams().size(); ++s) {
            StreamReader r(tf, s);
            std::uint64_t n = 0;
            while (std::size_t k = r.read(buf.data(), buf.size())) n += k;
            if (n != tf.streams()[s].instructions) fuzz::broken("stream count mismatch in an assembled file");
            total += n;
        }
        if (total != tf.total_instructions()) fuzz::broken("total_instructions mismatch");
    } catch (const TraceError& e) {
        fuzz::broken(std::string("an assembled file does not read back: ") + e.what());
    }
    std::ostringstream text;
    try {
        disassemble(out, text);
    } catch (const TraceError& e) {
        fuzz::broken(std::string("an assembled file does not disassemble: ") + e.what());
    }
    const std::string xtr = fuzz::scratch("dis.xtr"), again = fuzz::scratch("again.bin");
    const std::string t = text.str();
    fuzz::write_file(xtr, reinterpret_cast<const std::uint8_t*>(t.data()), t.size());
    try {
        assemble(xtr, again);
    } catch (const TraceError& e) {
        fuzz::broken(std::string("dis(asm(x)) does not assemble: ") + e.what());
    }
    if (fuzz::read_file(out) != fuzz::read_file(again)) fuzz::broken("asm(dis(asm(x))) != asm(x)");
    return 0;
}
