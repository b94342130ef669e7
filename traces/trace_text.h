// Text form of traces (".xtr"): one instruction per line. docs/trace-format.md describes it.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "traces/instruction.h"
#include "traces/trace_format.h"

namespace xpu::trace {

// Version of the text form, printed on the required first line ".xtr 1.0".
inline constexpr std::string_view kTextVersion = "1.0";

// One line, no newline, no annotation comment: the mnemonic, "u=N" when unit != 0, then the
// present fields in the order d s0 s1 s2 src dst bytes shape dtype count flag val cond ann ts.
std::string format_instruction(const Instruction& in);

// Parses one instruction line (a trailing "# comment" is allowed). Throws TraceError
// "file:line:col: expected ..." on any error.
Instruction parse_instruction(std::string_view line, const std::string& file, std::size_t line_no);

// Strict UTF-8 check (no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// The string as a double-quoted .xtr literal with C-style escapes (\" \\ \n \t \xHH).
std::string quote_string(std::string_view s);

// Whole binary file to text: ".xtr 1.0", every ".string", then each stream (".stream" line and
// its instructions; an instruction with an annotation gets it as a trailing comment).
void disassemble(const std::string& bin_path, std::ostream& out);

// Text file to binary (through TraceWriter: PATH.tmp renamed when complete). Throws
// TraceError "file:line:col: ..." on the first error; no output file is left then.
void assemble(const std::string& xtr_path, const std::string& bin_path);

}  // namespace xpu::trace
