// Validation (`xpu_trace validate`) and summary (`xpu_trace info`) of binary traces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "traces/instruction.h"
#include "traces/trace_format.h"

namespace xpu::trace {

class TraceFile;

// One thing wrong with a trace; the message names the file and the place (stream with its chip
// and core, instruction index within the stream, or byte offset).
struct Problem {
    std::string message;
};

// Decodes everything and checks, beyond decoding: the block structure agrees with the header
// and stream table; per-opcode required operands are present (docs/trace-format.md, "Operand
// conventions"); register ids are < kNumRegs and of the class the opcode wants; ann < string
// count; dtype/cond/space are known; bytes > 0 for dma/vld/vst; shape dims > 0 for
// matmul/mpush/mpop; vld/vst address local vmem; strings are UTF-8 without NUL, and distinct
// (the text form names a string by its text: duplicates could not round-trip).
// Returns at most max_problems problems (empty = valid). Never throws TraceError: a file that
// cannot be opened or decoded is reported as a problem.
std::vector<Problem> validate(const std::string& bin_path, std::size_t max_problems = 100);

// The problems of one instruction against the operand conventions (empty = fine); each is a
// short phrase such as "missing required operand shape". `stream_chip`: the chip of the
// instruction's stream, if known (a DMA reads from its own chip only). The one checker of
// these rules: validate() and sim_main's check of a trace before a run both call it.
std::vector<std::string> check_instruction(const Instruction& in, std::size_t string_count, int stream_chip = -1);
// check_instruction is these two: a test without messages (true: nothing to report; every
// instruction of every run goes through it), then, only if it fails, the messages.
bool instruction_conforms(const Instruction& in, std::size_t string_count, int stream_chip = -1);
std::vector<std::string> instruction_problems(const Instruction& in, std::size_t string_count, int stream_chip = -1);

// The problems of the string table (duplicates, NUL bytes, invalid UTF-8), at most `max`, each
// a message "PATH: string table, string I: ...". Shared by validate() and sim_main.
std::vector<std::string> string_table_problems(const TraceFile& tf, std::size_t max);

// Bytes moved by DMA, by direction.
struct DmaBytes {
    std::uint64_t hbm_to_vmem = 0;  // local hbm -> local vmem
    std::uint64_t vmem_to_hbm = 0;  // local vmem -> local hbm
    std::uint64_t remote = 0;       // src or dst on another chip
    std::uint64_t other = 0;        // local hbm->hbm, vmem->vmem, or src/dst not recorded
};

struct StreamSummary {
    std::uint16_t chip = 0, core = 0;  // for the totals: unused
    std::uint64_t instructions = 0;
    std::array<std::uint64_t, 256> opcode_counts{};  // indexed by the opcode byte
    DmaBytes dma;
    std::uint64_t vld_bytes = 0, vst_bytes = 0;

    std::uint64_t count(Opcode op) const { return opcode_counts[static_cast<std::uint8_t>(op)]; }
    void add(const Instruction& in);
    void merge(const StreamSummary& o);  // adds o's counts (not chip/core)
};

struct TraceSummary {
    std::string path;
    std::uint16_t version_major = 0, version_minor = 0;
    std::uint64_t file_size = 0;
    std::size_t strings = 0;
    std::vector<StreamSummary> streams;
    StreamSummary total;
};

// Reads every instruction (bounded memory). Throws TraceError on a corrupt file.
TraceSummary summarize(const std::string& bin_path);

// The `xpu_trace info` report.
void print_summary(const TraceSummary& s, std::ostream& out);

}  // namespace xpu::trace
