// TxlogWriter: a Recorder that streams every event of a run into OUT/txlog.bin (format in
// txlog_format.h, version 3: compact). It buffers about one block (1 MiB) and appends it to the
// file, so its memory does not grow with the run. Errors (disk full) are remembered and reported
// by finish().
//
// What makes the log compact needs a little look-ahead, never more than one event: a unit
// operation waits for its instruction (the two become one record when they agree), and an HBM
// controller's pieces for their request's transaction (they are then derived from the header's
// interleave rule, if it gives them exactly). Every event reaches the log, in its order among
// the events of its kind.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/recorder.h"
#include "traces/trace_format.h"
#include "traces/txlog_codec.h"
#include "traces/txlog_format.h"
#include "traces/txlog_header.h"

namespace xpu::txlog {

class Writer : public Recorder {
public:
    // Opens `path` and writes `header` (its unit lines are the log's names, ids 1, 2, 3...).
    // Throws std::runtime_error naming the file if it cannot be created.
    Writer(const std::string& path, const Header& header);
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
    std::uint64_t records() const { return records_; }  // records written (physical)
    std::uint64_t bytes_written() const { return file_bytes_; }
    const std::string& path() const { return path_; }

private:
    std::uint64_t name_id(const char* s);  // the header's id, by pointer then by value; else a Name record
    void begin(std::uint8_t type, std::size_t extra = 0);
    void put(std::uint64_t v);
    void put_zz(std::int64_t v) { put(trace::codec::zigzag(v)); }
    void put_delta(Tick later, Tick earlier);
    void put_index(std::uint16_t chip, std::uint16_t core, std::uint64_t index, bool update);  // chip, core, index-Δ
    void end_record();
    void flush();
    StreamState& stream(std::uint16_t chip, std::uint16_t core);

    void write_instr(const InstrEvent& e, const UnitOpEvent* op);
    void write_unit_op(const UnitOpEvent& e);
    void write_piece(std::uint64_t controller, const HbmChannelEvent& e);
    void settle_op();      // writes a unit operation still waiting for its instruction
    void settle_pieces();  // writes pieces still waiting for their transaction, as HbmPiece records
    // The Pieces mode of the waiting pieces as the transaction `e` on `layout`'s controller.
    Pieces derive(const HbmLayout& layout, std::uint64_t controller, const MemEvent& e) const;

    std::string path_;
    std::FILE* f_ = nullptr;
    std::vector<std::uint8_t> buf_;
    std::size_t used_ = 0;
    std::uint32_t block_records_ = 0;
    std::uint64_t records_ = 0, file_bytes_ = 0;
    bool failed_ = false;
    std::unordered_map<const char*, std::uint64_t> by_ptr_;
    struct NameCache {
        const char* ptr = nullptr;
        std::uint64_t id = 0;
    };
    static constexpr std::size_t kNameCache = 16;
    NameCache name_cache_[kNameCache];
    std::unordered_map<std::string, std::uint64_t> by_value_;
    std::uint64_t next_name_ = 1;
    std::vector<const HbmLayout*> layout_of_;  // by name id: its interleave rule, if the header gives one
    std::vector<HbmLayout> layouts_;
    std::vector<std::uint64_t> next_addr_;     // by name id: where the last transaction on it ended

    std::unordered_map<std::uint32_t, StreamState> streams_;  // chip << 16 | core
    std::uint32_t last_stream_key_ = 0;
    StreamState* last_stream_ = nullptr;
    GlobalState g_;
    struct SlotKey {
        std::uint64_t target, index;
        std::uint32_t stream;  // chip << 16 | core
        bool known;
        bool operator==(const SlotKey& o) const { return target == o.target && index == o.index && stream == o.stream && known == o.known; }
    };
    struct SlotKeyHash {
        std::size_t operator()(const SlotKey& k) const {
            return std::hash<std::uint64_t>()(k.index * 0x9E3779B97F4A7C15ull ^ (k.target << 40) ^ (std::uint64_t(k.stream) << 8) ^ k.known);
        }
    };
    std::unordered_map<SlotKey, unsigned, SlotKeyHash> slot_of_;
    std::vector<ChunkSlot> slots_ = std::vector<ChunkSlot>(kSlots);
    std::vector<SlotKey> slot_key_ = std::vector<SlotKey>(kSlots);
    std::vector<char> slot_used_ = std::vector<char>(kSlots, 0);
    unsigned next_slot_ = 0;
    std::vector<unsigned> last_slot_;  // by target name id: the slot it used last (kSlots: none)

    bool op_waiting_ = false;
    UnitOpEvent op_;
    std::vector<HbmChannelEvent> pieces_;  // waiting for their transaction
    std::uint64_t pieces_of_ = 0;          // their controller's name id
};

}  // namespace xpu::txlog
