// xpu_trace: assemble, disassemble, inspect and validate instruction traces.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "traces/file_paths.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"
#include "traces/trace_validate.h"
#include "traces/trace_writer.h"

#ifndef XPU_VERSION_STRING
#define XPU_VERSION_STRING "0.1.0"
#endif

namespace {

constexpr int kOk = 0, kInvalid = 1, kUsage = 2;

const char* kUsageText =
    "usage: xpu_trace COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  asm IN.xtr -o OUT.bin     assemble a text trace into a binary trace\n"
    "  dis IN.bin [-o OUT.xtr]   disassemble a binary trace (to stdout by default)\n"
    "  info IN.bin               version, streams, counts per opcode, bytes moved\n"
    "  validate IN.bin           check everything; prints OK or the problems\n"
    "  --help                    this text\n"
    "  --version                 program and trace format versions\n"
    "\n"
    "exit status: 0 ok, 1 invalid trace or input, 2 usage error\n"
    "format: docs/trace-format.md\n";

int usage(const std::string& msg) {
    std::cerr << "xpu_trace: " << msg << "\n"
              << "usage: xpu_trace asm IN.xtr -o OUT.bin | dis IN.bin [-o OUT.xtr] | info IN.bin | validate IN.bin\n"
              << "(xpu_trace --help for more)\n";
    return kUsage;
}

// Splits the arguments after the command into positionals and an optional "-o FILE".
struct Args {
    std::vector<std::string> pos;
    std::string out;
    bool has_out = false;
};

bool parse_args(int argc, char** argv, Args& a, std::string& err) {
    for (int i = 2; i < argc; ++i) {
        const std::string s = argv[i];
        if (s == "-o") {
            if (a.has_out) {
                err = "-o given twice";
                return false;
            }
            if (i + 1 >= argc) {
                err = "-o needs a file name";
                return false;
            }
            a.out = argv[++i];
            a.has_out = true;
        } else if (s.size() > 1 && s[0] == '-') {
            err = "unknown option '" + s + "'";
            return false;
        } else {
            a.pos.push_back(s);
        }
    }
    return true;
}

int cmd_dis(const Args& a) {
    if (!a.has_out) {
        xpu::trace::disassemble(a.pos[0], std::cout);
        return kOk;
    }
    const std::string out = xpu::output_target(a.out), tmp = out + ".tmp";
    try {
        {
            std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
            if (!f) throw xpu::trace::TraceError(tmp + ": cannot create: " + std::strerror(errno));
            xpu::trace::disassemble(a.pos[0], f);
            f.close();
            if (!f) throw xpu::trace::TraceError(tmp + ": write failed");
        }
        if (std::rename(tmp.c_str(), out.c_str()) != 0)
            throw xpu::trace::TraceError(out + ": cannot rename " + tmp + ": " + std::strerror(errno));
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    return kOk;
}

int cmd_validate(const std::string& path) {
    constexpr std::size_t kMax = 100;
    const auto problems = xpu::trace::validate(path, kMax);
    if (problems.empty()) {
        const auto tf = xpu::trace::TraceFile::open(path);
        std::cout << "OK: " << tf.total_instructions() << " instructions in " << tf.streams().size() << " streams\n";
        return kOk;
    }
    // The report on stdout; one line on stderr naming the file and the first place.
    for (const auto& p : problems) std::cout << "error: " << p.message << "\n";
    std::cout << path << ": INVALID: " << problems.size() << (problems.size() >= kMax ? " or more" : "")
              << (problems.size() == 1 ? " problem" : " problems") << "\n";
    std::cerr << "xpu_trace: " << problems.front().message;
    if (problems.size() > 1)
        std::cerr << " (and " << problems.size() - 1 << (problems.size() >= kMax ? " or more" : "") << " more)";
    std::cerr << "\n";
    return kInvalid;
}

int run(int argc, char** argv) {
    if (argc < 2) return usage("missing command");
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        std::cout << kUsageText;
        return kOk;
    }
    if (cmd == "--version") {
        std::cout << "xpu_trace " << XPU_VERSION_STRING << " (binary trace format " << xpu::trace::kVersionMajor << "."
                  << xpu::trace::kVersionMinor << ", text format " << xpu::trace::kTextVersion << ")\n";
        return kOk;
    }
    Args a;
    std::string err;
    if (!parse_args(argc, argv, a, err)) return usage(err);
    // An output never replaces its input (asm and dis write their output whole, then rename it
    // into place: the input would be gone).
    if (a.has_out && a.pos.size() == 1 && xpu::same_file(a.out, a.pos[0]))
        return usage("-o " + a.out + " would overwrite the input " + a.pos[0] + ": choose another output name");
    if (cmd == "asm") {
        if (a.pos.size() != 1) return usage("asm takes one input file");
        if (!a.has_out) return usage("asm needs -o OUT.bin");
        xpu::trace::assemble(a.pos[0], a.out);
        return kOk;
    }
    if (cmd == "dis") {
        if (a.pos.size() != 1) return usage("dis takes one input file");
        return cmd_dis(a);
    }
    if (cmd == "info" || cmd == "validate") {
        if (a.pos.size() != 1) return usage(cmd + " takes one input file");
        if (a.has_out) return usage(cmd + " does not take -o");
        if (cmd == "validate") return cmd_validate(a.pos[0]);
        xpu::trace::print_summary(xpu::trace::summarize(a.pos[0]), std::cout);
        return kOk;
    }
    return usage("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
    xpu::trace::remove_temp_files_on_signals();  // an interrupted asm leaves no OUT.bin.tmp behind
    try {
        const int rc = run(argc, argv);
        std::cout.flush();
        if (!std::cout) {
            std::cerr << "xpu_trace: error writing to standard output\n";
            return kInvalid;
        }
        return rc;
    } catch (const xpu::trace::TraceError& e) {
        std::cerr << "xpu_trace: " << e.what() << "\n";
    } catch (const std::bad_alloc&) {
        std::cerr << "xpu_trace: out of memory\n";
    } catch (const std::exception& e) {
        std::cerr << "xpu_trace: " << e.what() << "\n";
    }
    return kInvalid;
}
