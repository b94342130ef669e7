#include "traces/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "traces/checked_feed.h"
#include "traces/crc32.h"
#include "traces/file_digest.h"

namespace xpu::trace {

namespace {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Printable rendering of up to n raw bytes (for "found ..." in magic errors).
std::string show_bytes(const std::uint8_t* p, std::size_t n) {
    std::string s = "\"";
    for (std::size_t i = 0; i < n; ++i) {
        if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '"' && p[i] != '\\') {
            s += static_cast<char>(p[i]);
        } else {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02X", p[i]);
            s += b;
        }
    }
    return s + "\"";
}

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw TraceError(path + ": " + what); }

// Reads a region sequentially through a bounded buffer, checksumming what it consumes.
class SeqReader {
 public:
    SeqReader(detail::InputFile& f, std::uint64_t offset, std::uint64_t limit) : f_(f), pos_(offset), limit_(limit) {}
    std::uint64_t pos() const { return pos_; }
    std::uint32_t crc() const { return crc_; }
    bool read(void* dst, std::size_t n) {
        if (n > limit_ - pos_) return false;
        auto* d = static_cast<std::uint8_t*>(dst);
        while (n > 0) {
            if (head_ == fill_) {
                const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, limit_ - pos_));
                buf_.resize(kChunk);
                if (!f_.read_at(pos_, buf_.data(), want)) return false;
                head_ = 0;
                fill_ = want;
            }
            const std::size_t take = std::min(n, fill_ - head_);
            std::memcpy(d, buf_.data() + head_, take);
            crc_ = crc32(buf_.data() + head_, take, crc_);
            head_ += take;
            pos_ += take;
            d += take;
            n -= take;
        }
        return true;
    }
    // Returns false at the limit, sets err on a malformed varint.
    bool varint(std::uint64_t& v, codec::DecodeError& err) {
        std::uint8_t b[kMaxVarintBytes + 1] = {};
        for (std::size_t i = 0; i < kMaxVarintBytes; ++i) {
            if (!read(&b[i], 1)) return false;
            if (b[i] < 0x80) break;
        }
        if (!codec::get_varint(b, v, err)) return true;
        err = codec::DecodeError::None;
        return true;
    }

 private:
    static constexpr std::size_t kChunk = 64 * 1024;
    detail::InputFile& f_;
    std::uint64_t pos_, limit_;
    std::vector<std::uint8_t> buf_;
    std::size_t head_ = 0, fill_ = 0;
    std::uint32_t crc_ = 0;
};

}  // namespace

namespace codec {

const char* describe(DecodeError e) {
    switch (e) {
        case DecodeError::None: return "no error";
        case DecodeError::UnknownOpcode: return "unknown opcode";
        case DecodeError::ReservedBit: return "reserved present bit 15 is set";
        case DecodeError::OverlongVarint: return "overlong (non-canonical) varint";
        case DecodeError::VarintTooLong: return "varint longer than 10 bytes";
        case DecodeError::VarintOverflow: return "varint overflows 64 bits";
        case DecodeError::OutOfRange: return "value out of range for the field";
        case DecodeError::UnknownSpace: return "unknown memory space";
        case DecodeError::UnknownDtype: return "unknown dtype";
        case DecodeError::UnknownCond: return "unknown cond";
    }
    return "unknown error";
}

}  // namespace codec

// ---------------------------------------------------------------------------------------------
// InputFile

namespace detail {

InputFile::InputFile(const std::string& path) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
    if (fseeko(f_, 0, SEEK_END) != 0) {
        std::fclose(f_);
        f_ = nullptr;
        fail(path, "cannot seek (not a regular file?)");
    }
    const auto end = ftello(f_);
    size_ = end < 0 ? 0 : static_cast<std::uint64_t>(end);
    pos_ = size_;
}

InputFile::~InputFile() {
    if (f_) std::fclose(f_);
}

InputFile::InputFile(InputFile&& o) noexcept : f_(o.f_), digest_(o.digest_), size_(o.size_), pos_(o.pos_) { o.f_ = nullptr; }

InputFile& InputFile::operator=(InputFile&& o) noexcept {
    if (this != &o) {
        if (f_) std::fclose(f_);
        f_ = o.f_;
        digest_ = o.digest_;
        size_ = o.size_;
        pos_ = o.pos_;
        o.f_ = nullptr;
    }
    return *this;
}

bool InputFile::read_at(std::uint64_t offset, void* dst, std::size_t n) {
    if (!f_ || offset > size_ || n > size_ - offset) return false;
    if (pos_ != offset) {
        if (fseeko(f_, static_cast<off_t>(offset), SEEK_SET) != 0) {
            pos_ = ~std::uint64_t{0};
            return false;
        }
        pos_ = offset;
    }
    const std::size_t got = std::fread(dst, 1, n, f_);
    pos_ += got;
    if (got != n) {
        std::clearerr(f_);
        pos_ = ~std::uint64_t{0};
        return false;
    }
    if (digest_) digest_->observe(offset, dst, n);
    return true;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// TraceFile

std::string TraceFile::describe_stream(std::size_t index) const {
    std::string s = path_ + ": stream " + std::to_string(index);
    if (index < streams_.size())
        s += " (chip " + std::to_string(streams_[index].chip) + ", core " + std::to_string(streams_[index].core) + ")";
    return s;
}

TraceFile TraceFile::open(const std::string& path) { return open(path, nullptr); }

TraceFile TraceFile::with_digest(std::shared_ptr<FileDigest> digest) const {
    TraceFile t = *this;
    t.digest_ = std::move(digest);
    return t;
}

TraceFile TraceFile::with_feed(std::shared_ptr<CheckedFeed> feed) const {
    TraceFile t = *this;
    t.feed_ = std::move(feed);
    return t;
}

TraceFile TraceFile::open(const std::string& path, const std::shared_ptr<FileDigest>& digest) {
    TraceFile t;
    t.path_ = path;
    t.digest_ = digest;
    detail::InputFile f(path);
    f.report_to(digest.get());
    const std::uint64_t actual = f.size();

    std::uint8_t h[kHeaderSize];
    if (actual < kHeaderSize)
        fail(path, "file is " + std::to_string(actual) + " bytes, too short for the 64-byte header at offset 0 "
                   "(not a binary trace, or truncated)");
    if (!f.read_at(0, h, kHeaderSize)) fail(path, "cannot read the header at offset 0");
    if (std::memcmp(h, kFileMagic, 8) != 0)
        fail(path, "header at offset 0: bad magic " + show_bytes(h, 8) +
                       " (expected \"XPUTRACE\"): not an xpusim binary trace");
    FileHeader& hd = t.header_;
    hd.version_major = codec::get_u16(h + 8);
    hd.version_minor = codec::get_u16(h + 10);
    if (hd.version_major != kVersionMajor)
        fail(path, "header at offset 8: unsupported format version " + std::to_string(hd.version_major) + "." +
                       std::to_string(hd.version_minor) + " (this reader reads version 1.x)");
    const std::uint32_t stored_crc = codec::get_u32(h + kHeaderCrcOffset);
    const std::uint32_t crc = crc32(h, kHeaderCrcOffset);
    if (stored_crc != crc)
        fail(path, "header at offset 60: header CRC mismatch (stored " + hex(stored_crc) + ", computed " + hex(crc) +
                       " over bytes 0..59): header corrupt");
    hd.flags = codec::get_u32(h + 12);
    hd.stream_count = codec::get_u32(h + 16);
    hd.block_count = codec::get_u32(h + 20);
    hd.stream_table_offset = codec::get_u64(h + 24);
    hd.string_table_offset = codec::get_u64(h + 32);
    hd.file_size = codec::get_u64(h + 40);
    if (hd.flags & ~kKnownFlags)
        fail(path, "header at offset 12: unknown flag bits " + hex(hd.flags & ~kKnownFlags) +
                       " (this reader knows none; the file needs a newer reader)");
    for (std::size_t i = 48; i < kHeaderCrcOffset; ++i)
        if (h[i] != 0) fail(path, "header at offset " + std::to_string(i) + ": reserved byte is not zero");
    if (hd.file_size != actual)
        fail(path, "header at offset 40: file_size says " + std::to_string(hd.file_size) + " bytes but the file has " +
                       std::to_string(actual) + " bytes (truncated or appended to)");
    const std::uint64_t st = hd.stream_table_offset, ss = hd.string_table_offset;
    if (st < kHeaderSize || st > actual || actual - st < 12)
        fail(path, "header at offset 24: stream_table_offset " + hex(st) + " is outside the file (size " +
                       std::to_string(actual) + ")");
    if (ss < kHeaderSize || ss > actual || actual - ss < 12)
        fail(path, "header at offset 32: string_table_offset " + hex(ss) + " is outside the file (size " +
                       std::to_string(actual) + ")");
    if (st == ss) fail(path, "header: stream and string tables both at offset " + hex(st));
    t.block_area_end_ = std::min(st, ss);

    // Stream table.
    std::uint8_t sh[8];
    if (!f.read_at(st, sh, 8)) fail(path, "stream table at offset " + hex(st) + ": truncated");
    if (std::memcmp(sh, kStreamTableMagic, 4) != 0)
        fail(path, "stream table at offset " + hex(st) + ": bad magic " + show_bytes(sh, 4) + " (expected \"XSTR\")");
    const std::uint32_t count = codec::get_u32(sh + 4);
    if (count != hd.stream_count)
        fail(path, "stream table at offset " + hex(st) + ": holds " + std::to_string(count) +
                       " streams but the header says " + std::to_string(hd.stream_count));
    const std::uint64_t st_size = 8 + std::uint64_t{count} * kStreamEntrySize + 4;
    const std::uint64_t st_limit = ss > st ? ss : actual;
    if (st_size > st_limit - st)
        fail(path, "stream table at offset " + hex(st) + ": " + std::to_string(count) +
                       " entries do not fit before offset " + hex(st_limit) + " (truncated)");
    std::vector<std::uint8_t> table(static_cast<std::size_t>(st_size));
    if (!f.read_at(st, table.data(), table.size())) fail(path, "stream table at offset " + hex(st) + ": truncated");
    const std::uint32_t st_crc = crc32(table.data(), table.size() - 4);
    if (st_crc != codec::get_u32(table.data() + table.size() - 4))
        fail(path, "stream table at offset " + hex(st) + ": CRC mismatch (stored " +
                       hex(codec::get_u32(table.data() + table.size() - 4)) + ", computed " + hex(st_crc) + ")");
    t.streams_.resize(count);
    std::set<std::pair<std::uint16_t, std::uint16_t>> seen;
    std::uint64_t blocks = 0;
    const std::uint64_t area = t.block_area_end_ - kHeaderSize;
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint8_t* e = table.data() + 8 + std::size_t{i} * kStreamEntrySize;
        StreamInfo& s = t.streams_[i];
        s.chip = codec::get_u16(e);
        s.core = codec::get_u16(e + 2);
        s.instructions = codec::get_u64(e + 4);
        s.first_block_offset = codec::get_u64(e + 12);
        s.blocks = codec::get_u64(e + 20);
        const std::string where = "stream table entry " + std::to_string(i) + " (chip " + std::to_string(s.chip) +
                                  ", core " + std::to_string(s.core) + ") at offset " +
                                  hex(st + 8 + std::uint64_t{i} * kStreamEntrySize) + ": ";
        if (!seen.insert({s.chip, s.core}).second) fail(path, where + "duplicate (chip, core) pair");
        if (s.instructions == 0) {
            if (s.blocks != 0 || s.first_block_offset != 0)
                fail(path, where + "no instructions but blocks=" + std::to_string(s.blocks) +
                               " first_block_offset=" + hex(s.first_block_offset) + " (both must be 0)");
            continue;
        }
        // Every block takes at least a header and one 4-byte instruction, and holds at most
        // kMaxBlockPayload / 4 instructions: bounds the counts by the size of the block area.
        if (s.blocks == 0 || s.blocks > area / (kBlockHeaderSize + kMinInstructionBytes) ||
            s.instructions < s.blocks || s.instructions / s.blocks > kMaxBlockPayload / kMinInstructionBytes)
            fail(path, where + std::to_string(s.instructions) + " instructions in " + std::to_string(s.blocks) +
                           " blocks is impossible for a block area of " + std::to_string(area) + " bytes");
        if (s.first_block_offset < kHeaderSize || s.first_block_offset >= t.block_area_end_)
            fail(path, where + "first_block_offset " + hex(s.first_block_offset) + " is outside the block area [" +
                           hex(kHeaderSize) + ", " + hex(t.block_area_end_) + ")");
        blocks += s.blocks;
        t.total_instructions_ += s.instructions;
    }
    if (blocks != hd.block_count)
        fail(path, "header at offset 20: block_count is " + std::to_string(hd.block_count) +
                       " but the stream table's streams have " + std::to_string(blocks) + " blocks");
    // All streams together: every instruction takes at least 4 bytes of the block area beside
    // the block headers. Readers size arrays by these counts (the analysis holds an entry per
    // instruction), so a count the file cannot hold must not get that far.
    const std::uint64_t room = blocks * kBlockHeaderSize > area ? 0 : (area - blocks * kBlockHeaderSize) / kMinInstructionBytes;
    if (t.total_instructions_ > room)
        fail(path, "stream table at offset " + hex(st) + ": the streams claim " + std::to_string(t.total_instructions_) +
                       " instructions, but the block area of " + std::to_string(area) + " bytes (" + std::to_string(blocks) +
                       " blocks) holds at most " + std::to_string(room) + " (4 bytes each at least)");

    // The block index (interleaved streams only: one stream's blocks are back to back).
    if (count > 1) {
        auto index = std::make_shared<std::vector<std::vector<std::uint64_t>>>(count);
        bool ok = true;
        std::uint64_t off = kHeaderSize, walked = 0;
        while (ok && off < t.block_area_end_) {
            std::uint8_t b[kBlockHeaderSize];
            if (t.block_area_end_ - off < kBlockHeaderSize || !f.read_at(off, b, kBlockHeaderSize) ||
                std::memcmp(b, kBlockMagic, 4) != 0) {
                ok = false;
                break;
            }
            const std::uint32_t si = codec::get_u32(b + 4), payload = codec::get_u32(b + 12);
            if (si >= count || payload > kMaxBlockPayload || payload > t.block_area_end_ - off - kBlockHeaderSize ||
                ++walked > blocks) {
                ok = false;
                break;
            }
            (*index)[si].push_back(off);
            off += kBlockHeaderSize + payload;
        }
        for (std::uint32_t i = 0; ok && i < count; ++i) {
            const auto& v = (*index)[i];
            ok = v.size() == t.streams_[i].blocks && (v.empty() || v.front() == t.streams_[i].first_block_offset);
        }
        if (ok) t.block_index_ = std::move(index);
    }

    // String table.
    const std::uint64_t ss_limit = st > ss ? st : actual;
    if (ss_limit - ss < 12)
        fail(path, "string table at offset " + hex(ss) + ": only " + std::to_string(ss_limit - ss) +
                       " bytes before offset " + hex(ss_limit) + " (at least 12 expected: magic, count, CRC)");
    SeqReader r(f, ss, ss_limit);
    std::uint8_t th[8];
    if (!r.read(th, 8)) fail(path, "string table at offset " + hex(ss) + ": truncated");
    if (std::memcmp(th, kStringTableMagic, 4) != 0)
        fail(path, "string table at offset " + hex(ss) + ": bad magic " + show_bytes(th, 4) + " (expected \"XSTS\")");
    const std::uint32_t nstr = codec::get_u32(th + 4);
    if (nstr > ss_limit - ss - 12)
        fail(path, "string table at offset " + hex(ss) + ": " + std::to_string(nstr) + " strings cannot fit before " +
                       hex(ss_limit));
    t.strings_.reserve(nstr);
    for (std::uint32_t i = 0; i < nstr; ++i) {
        const std::uint64_t at = r.pos();
        std::uint64_t len = 0;
        codec::DecodeError err = codec::DecodeError::None;
        if (!r.varint(len, err))
            fail(path, "string table, string " + std::to_string(i) + " at offset " + hex(at) + ": truncated");
        if (err != codec::DecodeError::None)
            fail(path, "string table, string " + std::to_string(i) + " at offset " + hex(at) + ": length is an " +
                           codec::describe(err));
        if (len > ss_limit - r.pos())
            fail(path, "string table, string " + std::to_string(i) + " at offset " + hex(at) + ": length " +
                           std::to_string(len) + " runs past offset " + hex(ss_limit) + " (truncated)");
        std::string s(static_cast<std::size_t>(len), '\0');
        if (!r.read(s.data(), s.size()))
            fail(path, "string table, string " + std::to_string(i) + " at offset " + hex(at) + ": truncated");
        t.strings_.push_back(std::move(s));
    }
    const std::uint32_t ss_crc = r.crc();
    std::uint8_t cb[4];
    if (!r.read(cb, 4)) fail(path, "string table at offset " + hex(ss) + ": truncated before its CRC");
    if (codec::get_u32(cb) != ss_crc)
        fail(path, "string table at offset " + hex(ss) + ": CRC mismatch (stored " + hex(codec::get_u32(cb)) +
                       ", computed " + hex(ss_crc) + ")");
    if (ss < st && r.pos() > st) fail(path, "string table at offset " + hex(ss) + " overlaps the stream table");
    return t;
}

// ---------------------------------------------------------------------------------------------
// StreamReader

namespace {
detail::InputFile open_for_stream(const TraceFile& file, std::size_t index, bool fed) {
    if (index >= file.streams().size())
        fail(file.path(), "stream index " + std::to_string(index) + " out of range (the file has " +
                              std::to_string(file.streams().size()) + " streams)");
    return fed ? detail::InputFile() : detail::InputFile(file.path());
}

bool fed_by(const std::shared_ptr<CheckedFeed>& feed) { return feed && feed->started(); }
}  // namespace

StreamReader::StreamReader(const TraceFile& file, std::size_t stream_index)
    : file_(open_for_stream(file, stream_index, fed_by(file.feed_))) {
    file_.report_to(file.digest_.get());
    where_ = file.describe_stream(stream_index);
    info_ = file.streams()[stream_index];
    stream_index_ = stream_index;
    stream_count_ = file.streams().size();
    block_area_end_ = file.block_area_end();
    next_offset_ = info_.first_block_offset;
    block_offsets_ = file.block_offsets(stream_index);
    if (block_offsets_) index_ = file.block_index_;
    if (fed_by(file.feed_)) {
        feed_ = file.feed_;
        return;
    }
    if (file_.size() != file.file_size())
        throw TraceError(file.path() + ": file changed size since it was opened (" + std::to_string(file.file_size()) +
                         " -> " + std::to_string(file_.size()) + " bytes)");
}

StreamReader::~StreamReader() = default;
StreamReader::StreamReader(StreamReader&&) noexcept = default;
StreamReader& StreamReader::operator=(StreamReader&&) noexcept = default;

void StreamReader::fail_block(const std::string& what) const {
    throw TraceError(where_ + ", block " + std::to_string(blocks_read_) + " at offset " + hex(block_offset_) + ": " +
                     what);
}

void StreamReader::fail_instruction(const std::uint8_t* at, const std::string& what) const {
    const std::uint64_t file_off = block_offset_ + kBlockHeaderSize + static_cast<std::uint64_t>(at - buf_.get());
    throw TraceError(where_ + ", block " + std::to_string(blocks_read_ - 1) + " at offset " + hex(block_offset_) +
                     ", instruction " + std::to_string(position_) + " at offset " + hex(file_off) + ": " + what);
}

bool StreamReader::load_next_block() {
    if (blocks_read_ == info_.blocks) {
        if (decoded_through_blocks_ != info_.instructions)
            throw TraceError(where_ + ": the stream table says " + std::to_string(info_.instructions) +
                             " instructions but its " + std::to_string(info_.blocks) + " blocks hold " +
                             std::to_string(decoded_through_blocks_));
        return false;
    }
    std::uint64_t off = block_offsets_ && blocks_read_ < block_offsets_->size() ? (*block_offsets_)[blocks_read_] : next_offset_;
    std::uint8_t h[kBlockHeaderSize];
    std::uint32_t count = 0, payload = 0, crc = 0;
    for (;;) {
        block_offset_ = off;
        if (off < kHeaderSize || off > block_area_end_ || block_area_end_ - off < kBlockHeaderSize)
            fail_block("expected block " + std::to_string(blocks_read_) + " of " + std::to_string(info_.blocks) +
                       " (the stream table says " + std::to_string(info_.instructions) +
                       " instructions; " + std::to_string(decoded_through_blocks_) +
                       " found so far) but reached the end of the block area at offset " + hex(block_area_end_));
        if (!file_.read_at(off, h, kBlockHeaderSize)) fail_block("truncated block header");
        if (std::memcmp(h, kBlockMagic, 4) != 0)
            fail_block("bad block magic " + show_bytes(h, 4) + " (expected \"XBLK\")");
        const std::uint32_t si = codec::get_u32(h + 4);
        count = codec::get_u32(h + 8);
        payload = codec::get_u32(h + 12);
        crc = codec::get_u32(h + 16);
        if (si >= stream_count_)
            fail_block("block names stream " + std::to_string(si) + " but the file has " +
                       std::to_string(stream_count_) + " streams");
        if (payload > kMaxBlockPayload)
            fail_block("payload_bytes " + std::to_string(payload) + " exceeds the 16 MiB limit");
        if (payload > block_area_end_ - off - kBlockHeaderSize)
            fail_block("payload of " + std::to_string(payload) + " bytes runs past the end of the block area at " +
                       hex(block_area_end_) + " (truncated)");
        if (si == stream_index_) break;
        if (blocks_read_ == 0)
            fail_block("the stream table's first_block_offset points at a block of stream " + std::to_string(si));
        off += kBlockHeaderSize + payload;  // another stream's block: skip it
    }
    if (count == 0) fail_block("instruction_count is 0");
    if (payload < std::uint64_t{count} * kMinInstructionBytes)
        fail_block("payload of " + std::to_string(payload) + " bytes cannot hold " + std::to_string(count) +
                   " instructions (at least 4 bytes each)");
    if (count > info_.instructions - decoded_through_blocks_)
        fail_block("block holds " + std::to_string(count) + " instructions, more than the " +
                   std::to_string(info_.instructions) + " the stream table gives the stream");
    const std::size_t need = payload + kDecodePadding;
    if (need > capacity_) {
        buf_.reset(new std::uint8_t[need]);
        capacity_ = need;
    }
    if (!file_.read_at(off + kBlockHeaderSize, buf_.get(), payload)) fail_block("truncated block payload");
    std::memset(buf_.get() + payload, 0, kDecodePadding);
    const std::uint32_t actual = crc32(buf_.get(), payload);
    if (actual != crc)
        fail_block("payload CRC mismatch (stored " + hex(crc) + ", computed " + hex(actual) + "): block corrupt");
    cur_ = buf_.get();
    end_ = cur_ + payload;
    left_in_block_ = count;
    next_offset_ = off + kBlockHeaderSize + payload;
    ++blocks_read_;
    decoded_through_blocks_ += count;
    return true;
}

namespace {
// True if decoding the instruction at p (its payload ending at `end`, zero padding after it)
// fails differently, or succeeds, when the padding holds other bytes: its outcome then comes
// from bytes past the payload.
bool runs_past_payload(const std::uint8_t* p, const std::uint8_t* end) {
    const std::size_t have = std::min<std::size_t>(static_cast<std::size_t>(end - p), kMaxInstructionBytes);
    if (have == static_cast<std::size_t>(end - p) && have >= kMaxInstructionBytes) return false;
    Instruction scratch;
    codec::DecodeFailure zero, other;
    std::vector<std::uint8_t> buf(have + kDecodePadding, 0);
    std::memcpy(buf.data(), p, have);
    const std::uint8_t* a = codec::decode_instruction(buf.data(), scratch, zero);
    std::fill(buf.begin() + static_cast<std::ptrdiff_t>(have), buf.end(), std::uint8_t{0xFF});
    const std::uint8_t* b = codec::decode_instruction(buf.data(), scratch, other);
    if (a && a > buf.data() + have) return true;  // it ends in the padding
    if ((a == nullptr) != (b == nullptr)) return true;
    if (a == nullptr && (zero.error != other.error || zero.offset != other.offset)) return true;
    return a == nullptr && zero.offset >= have;  // the failing byte itself lies past the payload
}
}  // namespace

std::size_t StreamReader::read(Instruction* out, std::size_t max) {
    return feed_ ? read_fed(out, max) : read_file(out, max, nullptr);
}

std::size_t StreamReader::read_encoded(Instruction* out, std::size_t max, std::vector<std::uint8_t>& encoded) {
    if (feed_) throw std::logic_error("StreamReader::read_encoded: the reader takes from a feed, not the file");
    return read_file(out, max, &encoded);
}

std::size_t StreamReader::read_file(Instruction* out, std::size_t max, std::vector<std::uint8_t>* encoded) {
    std::size_t n = 0;
    codec::DecodeFailure failure;
    while (n < max) {
        if (left_in_block_ == 0 && !load_next_block()) break;
        const std::size_t take = std::min<std::size_t>(max - n, left_in_block_);
        const std::uint8_t* p = cur_;
        const std::uint8_t* const end = end_;
        for (std::size_t i = 0; i < take; ++i) {
            const std::uint8_t* next = codec::decode_instruction(p, out[n + i], failure);
            if (next == nullptr || next > end) {
                cur_ = p;
                position_ += i;
                // The decoder reads without bounds checks into zero padding past the payload:
                // a failure that depends on those zeros is a truncated instruction, not the
                // byte the decoder saw there. Decoded again with other padding to tell.
                if (next == nullptr && runs_past_payload(p, end)) next = end + 1;
                if (next == nullptr) {
                    std::string what = codec::describe(failure.error);
                    what += std::string(" (field ") + failure.field;
                    if (failure.error == codec::DecodeError::UnknownOpcode ||
                        failure.error == codec::DecodeError::UnknownSpace ||
                        failure.error == codec::DecodeError::UnknownDtype ||
                        failure.error == codec::DecodeError::UnknownCond ||
                        failure.error == codec::DecodeError::OutOfRange || failure.error == codec::DecodeError::ReservedBit)
                        what += ", value " + hex(failure.value);
                    what += ", at byte " + std::to_string(failure.offset) + " of the instruction)";
                    fail_instruction(p, what);
                }
                fail_instruction(p, "instruction runs past the end of the block payload (truncated payload or "
                                    "instruction_count too large)");
            }
            p = next;
        }
        if (encoded) encoded->insert(encoded->end(), cur_, p);
        cur_ = p;
        n += take;
        position_ += take;
        left_in_block_ -= static_cast<std::uint32_t>(take);
        if (left_in_block_ == 0 && cur_ != end_)
            fail_instruction(cur_, std::to_string(end_ - cur_) +
                                       " bytes left in the block after its last instruction (instruction_count too "
                                       "small, or garbage)");
    }
    return n;
}

std::size_t StreamReader::read_in_place(const Instruction*& first, std::size_t max) {
    if (max == 0) return 0;
    // Decoded `max` at a time into a buffer of the reader's: the core's batch (256 by default,
    // 24 KB) stays in its first-level cache between the decode and the core's reads.
    if (decoded_.size() < max) decoded_.resize(max);
    const std::size_t n = feed_ ? read_fed(decoded_.data(), max) : read_file(decoded_.data(), max, nullptr);
    first = decoded_.data();
    return n;
}

std::size_t StreamReader::read_fed(Instruction* out, std::size_t max) {
    std::size_t n = 0;
    while (n < max) {
        if (held_left_ == 0) {
            // What the piece held is out; the next is waited for only if nothing is.
            if (n > 0 || position_ == info_.instructions) break;
            if (feed_->take_piece(stream_index_, held_) == 0)
                throw TraceError(where_ + ": instruction " + std::to_string(position_) +
                                 " not run: the check of the trace ended without passing it");
            if (held_.bytes.size() < kDecodePadding)
                throw TraceError(where_ + ": instruction " + std::to_string(position_) +
                                 ": the check's piece has no decode padding (internal error)");
            held_at_ = held_.bytes.data();
            // The check hands a stream no more than its instructions; the bound only keeps
            // position() within the stream whatever a feed holds.
            held_left_ = static_cast<std::size_t>(std::min<std::uint64_t>(held_.count, info_.instructions - position_));
        }
        // The bytes are the file's, decoded and passed by the check: they decode again (the
        // piece ends in kDecodePadding zero bytes). A failure is the feed's fault, not the file's.
        const std::uint8_t* const end = held_.bytes.data() + (held_.bytes.size() - kDecodePadding);
        const std::size_t k = std::min(max - n, held_left_);
        codec::DecodeFailure failure;
        const std::uint8_t* p = held_at_;
        for (std::size_t i = 0; i < k; ++i) {
            p = codec::decode_instruction(p, out[n + i], failure);
            if (p == nullptr || p > end)
                throw TraceError(where_ + ": instruction " + std::to_string(position_ + i) +
                                 ": the check's piece does not decode again (internal error)");
        }
        held_at_ = p;
        held_left_ -= k;
        position_ += k;
        n += k;
    }
    return n;
}

}  // namespace xpu::trace
