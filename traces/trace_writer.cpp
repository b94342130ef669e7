#include "traces/trace_writer.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "traces/crc32.h"
#include "traces/file_paths.h"

namespace xpu::trace {

namespace codec {

void encode_header(const FileHeader& h, std::uint8_t out[kHeaderSize]) {
    std::memset(out, 0, kHeaderSize);
    std::memcpy(out, kFileMagic, 8);
    put_u16(out + 8, h.version_major);
    put_u16(out + 10, h.version_minor);
    put_u32(out + 12, h.flags);
    put_u32(out + 16, h.stream_count);
    put_u32(out + 20, h.block_count);
    put_u64(out + 24, h.stream_table_offset);
    put_u64(out + 32, h.string_table_offset);
    put_u64(out + 40, h.file_size);
    put_u32(out + kHeaderCrcOffset, crc32(out, kHeaderCrcOffset));
}

}  // namespace codec

namespace {
constexpr std::size_t kOutBuffer = 1 << 20;
// The file a trace named `path` goes to (a link's end; never a device or folder: file_paths.h).
std::string target_of(const std::string& path) {
    try {
        return output_target(path);
    } catch (const std::runtime_error& e) {
        throw TraceError(e.what());
    }
}
constexpr std::size_t kStreamBuffer = kBlockPayloadTarget + kMaxInstructionBytes;

// The temp files of the writers still writing: fixed arrays and a flag per slot, so that a signal
// handler can walk them (unlink is async-signal-safe; nothing here allocates or locks).
constexpr int kTempSlots = 8;
constexpr std::size_t kTempPathMax = 4096;
char g_temp_paths[kTempSlots][2][kTempPathMax];
std::atomic<bool> g_temp_used[kTempSlots];

int take_temp_slot(const std::string& tmp, const std::string& sort) {
    if (tmp.size() >= kTempPathMax || sort.size() >= kTempPathMax) return -1;
    for (int i = 0; i < kTempSlots; ++i) {
        bool free = false;
        if (!g_temp_used[i].load() && g_temp_used[i].compare_exchange_strong(free, true)) {
            std::memcpy(g_temp_paths[i][0], tmp.c_str(), tmp.size() + 1);
            std::memcpy(g_temp_paths[i][1], sort.c_str(), sort.size() + 1);
            return i;
        }
    }
    return -1;
}

void free_temp_slot(int& slot) {
    if (slot < 0) return;
    g_temp_paths[slot][0][0] = g_temp_paths[slot][1][0] = '\0';
    g_temp_used[slot].store(false);
    slot = -1;
}

extern "C" void remove_temp_files_and_die(int sig) {
    remove_open_temp_files();
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}
}  // namespace

void remove_open_temp_files() noexcept {
    for (int i = 0; i < kTempSlots; ++i)
        if (g_temp_used[i].load())
            for (int k = 0; k < 2; ++k)
                if (g_temp_paths[i][k][0]) ::unlink(g_temp_paths[i][k]);
}

void remove_temp_files_on_signals() {
    struct sigaction sa {};
    sa.sa_handler = remove_temp_files_and_die;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

TraceWriter::TraceWriter(const std::string& path)
    : path_(target_of(path)), tmp_path_(path_ + ".tmp"), sort_path_(path_ + ".tmp.sort") {
    temp_slot_ = take_temp_slot(tmp_path_, sort_path_);
    f_ = std::fopen(tmp_path_.c_str(), "w+b");
    if (!f_) {
        free_temp_slot(temp_slot_);
        throw TraceError(tmp_path_ + ": cannot create: " + std::strerror(errno));
    }
    std::setvbuf(f_, nullptr, _IOFBF, kOutBuffer);
    // Placeholder header: all zero (no magic) until close() writes the real one.
    const std::uint8_t zero[kHeaderSize] = {};
    write(f_, zero, kHeaderSize, tmp_path_);
    offset_ = kHeaderSize;
}

TraceWriter::~TraceWriter() {
    if (!closed_) cleanup();
}

void TraceWriter::cleanup() noexcept {
    if (f_) std::fclose(f_);
    if (sorted_) std::fclose(sorted_);
    f_ = sorted_ = nullptr;
    std::remove(tmp_path_.c_str());
    std::remove(sort_path_.c_str());
    free_temp_slot(temp_slot_);
}

void TraceWriter::check_open(const char* what) const {
    if (closed_) throw TraceError(path_ + ": " + what + " after close()");
    if (failed_) throw TraceError(path_ + ": " + what + " after an earlier write error");
}

void TraceWriter::io_fail(const std::string& name, const char* what) {
    failed_ = true;
    throw TraceError(name + ": " + what + ": " + std::strerror(errno));
}

void TraceWriter::write(std::FILE* f, const void* data, std::size_t n, const std::string& name) {
    if (n != 0 && std::fwrite(data, 1, n, f) != n) io_fail(name, "write failed");
}

std::uint32_t TraceWriter::add_string(const std::string& s) {
    check_open("add_string");
    auto it = string_ids_.find(s);
    if (it != string_ids_.end()) return it->second;
    if (s.find('\0') != std::string::npos) throw TraceError(path_ + ": string table entries cannot contain NUL");
    if (strings_.size() >= 0xFFFFFFFFu) throw TraceError(path_ + ": too many strings");
    const auto id = static_cast<std::uint32_t>(strings_.size());
    strings_.push_back(s);
    string_ids_.emplace(s, id);
    return id;
}

std::size_t TraceWriter::add_stream(std::uint16_t chip, std::uint16_t core) {
    check_open("add_stream");
    for (const auto& s : streams_)
        if (s.chip == chip && s.core == core)
            throw TraceError(path_ + ": duplicate stream (chip " + std::to_string(chip) + ", core " +
                             std::to_string(core) + ")");
    if (streams_.size() >= 0xFFFFFFFFu) throw TraceError(path_ + ": too many streams");
    Stream s;
    s.chip = chip;
    s.core = core;
    streams_.push_back(std::move(s));
    return streams_.size() - 1;
}

void TraceWriter::append(std::size_t stream, const Instruction& in) {
    if (stream >= streams_.size() || closed_ || failed_) {
        check_open("append");
        throw TraceError(path_ + ": append to stream " + std::to_string(stream) + ", but only " +
                         std::to_string(streams_.size()) + " streams were added");
    }
    if (const char* why = codec::unencodable_reason(in))
        throw TraceError(path_ + ": stream " + std::to_string(stream) + ", instruction " +
                         std::to_string(streams_[stream].instructions) + ": cannot encode: " + why);
    Stream& s = streams_[stream];
    if (!s.buf) s.buf.reset(new std::uint8_t[kStreamBuffer]);
    std::uint8_t* end = codec::encode_instruction(in, s.buf.get() + s.fill);
    s.fill = static_cast<std::size_t>(end - s.buf.get());
    ++s.count;
    ++s.instructions;
    if (s.fill >= kBlockPayloadTarget) flush_block(stream);
}

void TraceWriter::flush_block(std::size_t stream) {
    Stream& s = streams_[stream];
    if (s.count == 0) return;
    if (blocks_ >= 0xFFFFFFFFu) {
        failed_ = true;
        throw TraceError(path_ + ": too many blocks for the format (block_count is 32-bit)");
    }
    std::uint8_t h[kBlockHeaderSize];
    std::memcpy(h, kBlockMagic, 4);
    codec::put_u32(h + 4, static_cast<std::uint32_t>(stream));
    codec::put_u32(h + 8, s.count);
    codec::put_u32(h + 12, static_cast<std::uint32_t>(s.fill));
    codec::put_u32(h + 16, crc32(s.buf.get(), s.fill));
    write(f_, h, kBlockHeaderSize, tmp_path_);
    write(f_, s.buf.get(), s.fill, tmp_path_);
    if (blocks_ > 0 && stream < last_block_stream_) canonical_ = false;
    last_block_stream_ = stream;
    s.block_offsets.push_back(offset_);
    offset_ += kBlockHeaderSize + s.fill;
    ++blocks_;
    s.fill = 0;
    s.count = 0;
}

void TraceWriter::close() {
    if (closed_) return;
    check_open("close");
    try {
        for (std::size_t i = 0; i < streams_.size(); ++i) flush_block(i);
        std::vector<std::uint64_t> first(streams_.size(), 0);
        if (canonical_) {
            for (std::size_t i = 0; i < streams_.size(); ++i)
                if (!streams_[i].block_offsets.empty()) first[i] = streams_[i].block_offsets.front();
            finish(f_, tmp_path_, offset_, std::move(first));
            f_ = nullptr;
            if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) io_fail(path_, "cannot rename the temp file");
        } else {
            // Rewrite the blocks grouped by stream (see the class comment).
            if (std::fflush(f_) != 0) io_fail(tmp_path_, "write failed");
            sorted_ = std::fopen(sort_path_.c_str(), "wb");
            if (!sorted_) io_fail(sort_path_, "cannot create");
            std::setvbuf(sorted_, nullptr, _IOFBF, kOutBuffer);
            const std::uint8_t zero[kHeaderSize] = {};
            write(sorted_, zero, kHeaderSize, sort_path_);
            std::uint64_t out = kHeaderSize;
            std::vector<std::uint8_t> block(kBlockHeaderSize + kStreamBuffer);
            for (std::size_t i = 0; i < streams_.size(); ++i) {
                for (std::size_t b = 0; b < streams_[i].block_offsets.size(); ++b) {
                    if (b == 0) first[i] = out;
                    if (fseeko(f_, static_cast<off_t>(streams_[i].block_offsets[b]), SEEK_SET) != 0)
                        io_fail(tmp_path_, "seek failed");
                    if (std::fread(block.data(), 1, kBlockHeaderSize, f_) != kBlockHeaderSize)
                        io_fail(tmp_path_, "read back failed");
                    const std::size_t payload = codec::get_u32(block.data() + 12);
                    if (std::fread(block.data() + kBlockHeaderSize, 1, payload, f_) != payload)
                        io_fail(tmp_path_, "read back failed");
                    write(sorted_, block.data(), kBlockHeaderSize + payload, sort_path_);
                    out += kBlockHeaderSize + payload;
                }
            }
            std::fclose(f_);
            f_ = nullptr;
            std::remove(tmp_path_.c_str());
            finish(sorted_, sort_path_, out, std::move(first));
            sorted_ = nullptr;
            if (std::rename(sort_path_.c_str(), path_.c_str()) != 0) io_fail(path_, "cannot rename the temp file");
        }
    } catch (...) {
        failed_ = true;
        cleanup();
        closed_ = true;  // nothing left to clean up in the destructor
        throw;
    }
    closed_ = true;
    free_temp_slot(temp_slot_);
    for (auto& s : streams_) s.buf.reset();
}

// Writes the tables at `offset` (the end of the blocks), then the header; closes f.
void TraceWriter::finish(std::FILE* f, const std::string& name, std::uint64_t offset,
                         std::vector<std::uint64_t> first_offsets) {
    FileHeader h;
    h.stream_count = static_cast<std::uint32_t>(streams_.size());
    h.block_count = static_cast<std::uint32_t>(blocks_);
    h.stream_table_offset = offset;

    std::vector<std::uint8_t> t(8 + streams_.size() * kStreamEntrySize + 4);
    std::memcpy(t.data(), kStreamTableMagic, 4);
    codec::put_u32(t.data() + 4, h.stream_count);
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        std::uint8_t* e = t.data() + 8 + i * kStreamEntrySize;
        codec::put_u16(e, streams_[i].chip);
        codec::put_u16(e + 2, streams_[i].core);
        codec::put_u64(e + 4, streams_[i].instructions);
        codec::put_u64(e + 12, first_offsets[i]);
        codec::put_u64(e + 20, streams_[i].block_offsets.size());
    }
    codec::put_u32(t.data() + t.size() - 4, crc32(t.data(), t.size() - 4));
    write(f, t.data(), t.size(), name);
    offset += t.size();

    h.string_table_offset = offset;
    std::uint8_t sh[8];
    std::memcpy(sh, kStringTableMagic, 4);
    codec::put_u32(sh + 4, static_cast<std::uint32_t>(strings_.size()));
    write(f, sh, 8, name);
    std::uint32_t crc = crc32(sh, 8);
    offset += 8;
    for (const auto& s : strings_) {
        std::uint8_t len[kMaxVarintBytes];
        const std::size_t n = static_cast<std::size_t>(codec::put_varint(len, s.size()) - len);
        write(f, len, n, name);
        write(f, s.data(), s.size(), name);
        crc = crc32(len, n, crc);
        crc = crc32(s.data(), s.size(), crc);
        offset += n + s.size();
    }
    std::uint8_t cb[4];
    codec::put_u32(cb, crc);
    write(f, cb, 4, name);
    offset += 4;

    h.file_size = offset;
    std::uint8_t hb[kHeaderSize];
    codec::encode_header(h, hb);
    if (std::fflush(f) != 0 || fseeko(f, 0, SEEK_SET) != 0) io_fail(name, "write failed");
    write(f, hb, kHeaderSize, name);
    if (std::fflush(f) != 0) io_fail(name, "write failed");
    if (fsync(fileno(f)) != 0 && errno != EINVAL) io_fail(name, "fsync failed");
    const int rc = std::fclose(f);
    if (f == f_) f_ = nullptr;
    if (f == sorted_) sorted_ = nullptr;
    if (rc != 0) io_fail(name, "close failed");
}

}  // namespace xpu::trace
