// Reading binary traces: TraceFile (header, stream table, string table) and StreamReader (the
// instructions of one stream, one block in memory at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "traces/checked_feed.h"
#include "traces/instruction.h"
#include "traces/trace_format.h"

namespace xpu::trace {

class FileDigest;

// The metadata of a trace file. Opening reads and checks the header, the stream table and the
// string table (not the blocks). Cheap to copy; immutable, so it can be shared between threads.
class TraceFile {
 public:
    static TraceFile open(const std::string& path);  // throws TraceError
    // The same, every read of the file (here and by its StreamReaders) reported to `digest`
    // (traces/file_digest.h). Such a TraceFile and its readers belong to one thread.
    static TraceFile open(const std::string& path, const std::shared_ptr<FileDigest>& digest);

    const std::string& path() const { return path_; }
    const std::vector<StreamInfo>& streams() const { return streams_; }
    const std::vector<std::string>& strings() const { return strings_; }
    std::uint64_t total_instructions() const { return total_instructions_; }
    std::uint16_t version_major() const { return header_.version_major; }
    std::uint16_t version_minor() const { return header_.version_minor; }

    // Extras for tools (info, validate).
    // Copies of this TraceFile whose StreamReaders report every read to `digest`, or, made once
    // `feed` has started, take their instructions from it (traces/checked_feed.h) instead of
    // reading the file; null: neither.
    TraceFile with_digest(std::shared_ptr<FileDigest> digest) const;
    TraceFile with_feed(std::shared_ptr<CheckedFeed> feed) const;

    const FileHeader& header() const { return header_; }
    std::uint64_t file_size() const { return header_.file_size; }
    std::uint32_t block_count() const { return header_.block_count; }
    // Blocks lie in [kHeaderSize, block_area_end()): the tables follow the last block.
    std::uint64_t block_area_end() const { return block_area_end_; }
    // "PATH: stream 2 (chip 0, core 1)", for messages.
    std::string describe_stream(std::size_t index) const;
    // The file offsets of stream i's blocks, in order, found by one walk over the block
    // headers at open (null if the walk found anything odd: readers then walk themselves and
    // report it). With interleaved streams, a reader jumps to its blocks instead of reading
    // every other stream's headers: reading all streams stays linear in the file.
    const std::vector<std::uint64_t>* block_offsets(std::size_t i) const {
        return block_index_ && i < block_index_->size() ? &(*block_index_)[i] : nullptr;
    }

 private:
    friend class StreamReader;
    std::string path_;
    FileHeader header_;
    std::vector<StreamInfo> streams_;
    std::vector<std::string> strings_;
    std::uint64_t total_instructions_ = 0;
    std::uint64_t block_area_end_ = kHeaderSize;
    std::shared_ptr<const std::vector<std::vector<std::uint64_t>>> block_index_;
    std::shared_ptr<FileDigest> digest_;
    std::shared_ptr<CheckedFeed> feed_;
};

namespace detail {
// A read-only file handle that reads at explicit offsets (no shared position).
class InputFile {
 public:
    InputFile() = default;  // none: reads fail
    explicit InputFile(const std::string& path);  // throws TraceError if it cannot be opened
    ~InputFile();
    InputFile(InputFile&& o) noexcept;
    InputFile& operator=(InputFile&& o) noexcept;
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::uint64_t size() const { return size_; }
    // Reads exactly n bytes at offset; returns false if the file ends first.
    bool read_at(std::uint64_t offset, void* dst, std::size_t n);
    void report_to(FileDigest* d) { digest_ = d; }  // every read from now on

 private:
    std::FILE* f_ = nullptr;
    FileDigest* digest_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t pos_ = ~std::uint64_t{0};  // current file position, if known
};
}  // namespace detail

// Reads the instructions of one stream in order. Memory is one block payload (at most
// kMaxBlockPayload, normally ~kBlockPayloadTarget) whatever the stream's length. Each reader has
// its own file handle: several streams can be read concurrently, each by its own reader.
class StreamReader {
 public:
    StreamReader(const TraceFile& file, std::size_t stream_index);
    ~StreamReader();
    StreamReader(StreamReader&&) noexcept;
    StreamReader& operator=(StreamReader&&) noexcept;

    // Fills out[0..max) with the next instructions; returns how many (0 at the end of the
    // stream). Throws TraceError on any corruption, naming the place, and, for a reader fed by
    // a check (TraceFile::with_feed), when the check ended without passing them.
    std::size_t read(Instruction* out, std::size_t max);
    // The same, read in place: `first` points at the next instructions (up to `max`, > 0),
    // which stay valid until the next call or the reader's end; returns how many (0 at the
    // end of the stream), decoded into a buffer of the reader's (from the file, or from the
    // check's piece when fed). Throws as read() does.
    std::size_t read_in_place(const Instruction*& first, std::size_t max);
    // read() from the file (not for a fed reader), also appending the instructions' encoded
    // bytes, back to back, to `encoded`: what a check hands the run (traces/checked_feed.h).
    std::size_t read_encoded(Instruction* out, std::size_t max, std::vector<std::uint8_t>& encoded);
    std::uint64_t position() const { return position_; }  // instructions read so far
    const StreamInfo& info() const { return info_; }

    // Bytes held for the current block (payload + decode padding): never more than the largest
    // block read so far.
    std::size_t buffer_capacity() const { return capacity_; }

 private:
    bool load_next_block();  // false at the end of the stream
    // read() from the file; with `encoded`, read_encoded().
    std::size_t read_file(Instruction* out, std::size_t max, std::vector<std::uint8_t>* encoded);
    // read() from feed_: decodes the piece taken from it (held_), held_left_ instructions left
    // from held_at_ on.
    std::size_t read_fed(Instruction* out, std::size_t max);
    FeedPiece held_;
    const std::uint8_t* held_at_ = nullptr;
    std::size_t held_left_ = 0;
    std::vector<Instruction> decoded_;  // what read_in_place() lends
    [[noreturn]] void fail_block(const std::string& what) const;
    [[noreturn]] void fail_instruction(const std::uint8_t* at, const std::string& what) const;

    std::string where_;  // "PATH: stream N (chip C, core K)"
    StreamInfo info_;
    std::size_t stream_index_ = 0;
    std::size_t stream_count_ = 0;
    std::uint64_t block_area_end_ = 0;
    detail::InputFile file_;

    std::unique_ptr<std::uint8_t[]> buf_;
    std::size_t capacity_ = 0;
    const std::uint8_t* cur_ = nullptr;  // next instruction in the current block
    const std::uint8_t* end_ = nullptr;  // end of the current block's payload
    std::uint32_t left_in_block_ = 0;    // instructions not yet decoded in the current block
    std::uint64_t block_offset_ = 0;     // file offset of the current block's header
    std::uint64_t next_offset_ = 0;      // where to look for the next block
    std::uint64_t blocks_read_ = 0;
    std::uint64_t decoded_through_blocks_ = 0;  // instructions in blocks loaded so far
    std::uint64_t position_ = 0;
    const std::vector<std::uint64_t>* block_offsets_ = nullptr;  // TraceFile::block_offsets
    std::shared_ptr<const std::vector<std::vector<std::uint64_t>>> index_;  // keeps it alive
    // Set: the instructions come decoded and checked from here, and the file is not opened.
    std::shared_ptr<CheckedFeed> feed_;
};

}  // namespace xpu::trace
