// Writing binary traces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/instruction.h"
#include "traces/trace_format.h"

namespace xpu::trace {

// Writes a trace to PATH.tmp and renames it to PATH in close(), so a crash never leaves a file
// at PATH that looks complete. Memory: one block buffer (~64 KiB) per stream with instructions
// pending, plus 8 bytes per written block.
//
// The output is canonical, whatever the order of append() calls across streams: blocks are
// grouped by stream in stream-index order and each stream is cut into blocks the same way
// (close a block when its payload reaches kBlockPayloadTarget). If the appends interleaved
// streams, close() rewrites the blocks into that order (one sequential copy). So the same
// streams, instructions and strings always give the same bytes, and dis/asm round-trips exactly.
// Removes the temp files of every TraceWriter of this process still writing (async-signal-safe:
// a signal handler's; up to 8 writers at once are covered).
void remove_open_temp_files() noexcept;
// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove them and then end the process as
// the signal would (its default action, raised again): for the tools that write traces and
// handle no signal themselves (xpu_tracegen, xpu_trace asm), so that an interrupted write leaves
// no gigabytes of PATH.tmp behind.
void remove_temp_files_on_signals();

class TraceWriter {
 public:
    explicit TraceWriter(const std::string& path);  // throws TraceError if PATH.tmp cannot be created
    ~TraceWriter();                                 // if close() was not called: removes the temp file(s)
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    std::uint32_t add_string(const std::string& s);                  // dedups, returns the id
    std::size_t add_stream(std::uint16_t chip, std::uint16_t core);  // throws TraceError on a duplicate
    // Throws TraceError on an unknown stream index, or an instruction the format cannot carry
    // (unknown opcode, present bit 15, unknown dtype/cond/space).
    void append(std::size_t stream, const Instruction& in);
    void close();  // flush, write tables and header, rename; a second call does nothing

    const std::string& path() const { return path_; }
    std::size_t stream_count() const { return streams_.size(); }
    std::size_t string_count() const { return strings_.size(); }

 private:
    struct Stream {
        std::uint16_t chip = 0, core = 0;
        std::uint64_t instructions = 0;
        std::vector<std::uint64_t> block_offsets;  // in the temp file
        std::unique_ptr<std::uint8_t[]> buf;       // pending block payload
        std::size_t fill = 0;
        std::uint32_t count = 0;  // instructions in the pending block
    };

    void check_open(const char* what) const;
    void flush_block(std::size_t stream);
    void write(std::FILE* f, const void* data, std::size_t n, const std::string& name);
    [[noreturn]] void io_fail(const std::string& name, const char* what);
    void finish(std::FILE* f, const std::string& name, std::uint64_t offset, std::vector<std::uint64_t> first_offsets);
    void cleanup() noexcept;

    std::string path_, tmp_path_, sort_path_;
    int temp_slot_ = -1;  // its temp files' place in remove_open_temp_files' list (-1: none)
    std::FILE* f_ = nullptr;
    std::FILE* sorted_ = nullptr;
    std::uint64_t offset_ = 0;  // bytes written to the temp file
    std::vector<Stream> streams_;
    std::vector<std::string> strings_;
    std::unordered_map<std::string, std::uint32_t> string_ids_;
    std::uint64_t blocks_ = 0;
    std::size_t last_block_stream_ = 0;
    bool canonical_ = true;  // blocks so far are in non-decreasing stream order
    bool closed_ = false;
    bool failed_ = false;
};

}  // namespace xpu::trace
