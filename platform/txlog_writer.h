// TxlogWriter: a Recorder that streams every event of a run into OUT/txlog.bin (format in
// txlog_format.h). It buffers about one block (1 MiB) and appends it to the file, so its memory
// does not grow with the run. Errors (disk full) are remembered and reported by finish().
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/recorder.h"

namespace xpu::txlog {

class Writer : public Recorder {
public:
    // Opens `path` and writes the header with `meta` ("key value" lines, see txlog_format.h).
    // Throws std::runtime_error naming the file if it cannot be created.
    Writer(const std::string& path, const std::string& meta);
    ~Writer() override;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    void on_instruction(const InstrEvent& e) override;
    void on_dma(const DmaEvent& e) override;
    void on_flag(const FlagEvent& e) override;
    void on_mem(const MemEvent& e) override;
    void on_unit_op(const UnitOpEvent& e) override;
    void on_hbm_channel(const HbmChannelEvent& e) override;

    // Writes the End record and closes the file; throws std::runtime_error on any write error.
    void finish(Tick end_time, unsigned status);
    std::uint64_t records() const { return records_; }
    std::uint64_t bytes_written() const { return file_bytes_; }
    const std::string& path() const { return path_; }

private:
    std::uint64_t name_id(const char* s);  // interns (by pointer, then by value)
    void begin(std::uint8_t type);
    void put(std::uint64_t v);
    void put_delta(Tick later, Tick earlier);
    void end_record();
    void flush();

    std::string path_;
    std::FILE* f_ = nullptr;
    std::vector<std::uint8_t> buf_;
    std::size_t used_ = 0;
    std::uint32_t block_records_ = 0;
    std::uint64_t records_ = 0, file_bytes_ = 0;
    bool failed_ = false;
    std::unordered_map<const char*, std::uint64_t> by_ptr_;
    std::unordered_map<std::string, std::uint64_t> by_value_;
};

}  // namespace xpu::txlog
