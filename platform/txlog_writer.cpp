#include "platform/txlog_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "traces/txlog_format.h"
#include "traces/crc32.h"
#include "traces/trace_format.h"

namespace xpu::txlog {

namespace {
constexpr std::size_t kMaxRecordBytes = 256;  // a record is at most ~12 varints + a short name
}

Writer::Writer(const std::string& path, const std::string& meta) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) throw std::runtime_error(path + ": cannot create the transaction log: " + std::strerror(errno));
    std::uint8_t h[16];
    std::memcpy(h, kMagic, 8);
    trace::codec::put_u32(h + 8, kVersion);
    trace::codec::put_u32(h + 12, static_cast<std::uint32_t>(meta.size()));
    if (std::fwrite(h, 1, sizeof h, f_) != sizeof h || std::fwrite(meta.data(), 1, meta.size(), f_) != meta.size())
        failed_ = true;
    file_bytes_ = sizeof h + meta.size();
    buf_.resize(kBlockHeaderBytes + kBlockTarget + 4 * kMaxRecordBytes);
    used_ = kBlockHeaderBytes;
}

Writer::~Writer() {
    if (f_) std::fclose(f_);
}

void Writer::begin(std::uint8_t type) {
    if (used_ >= kBlockHeaderBytes + kBlockTarget) flush();
    buf_[used_++] = type;
}

void Writer::put(std::uint64_t v) { used_ = static_cast<std::size_t>(trace::codec::put_varint(buf_.data() + used_, v) - buf_.data()); }

void Writer::put_delta(Tick later, Tick earlier) {
    put(trace::codec::zigzag(static_cast<std::int64_t>(later - earlier)));
}

void Writer::end_record() {
    ++block_records_;
    ++records_;
}

std::uint64_t Writer::name_id(const char* s) {
    if (!s || !*s) return 0;
    auto it = by_ptr_.find(s);
    if (it != by_ptr_.end()) return it->second;
    std::string v(s);
    auto jt = by_value_.find(v);
    std::uint64_t id;
    if (jt != by_value_.end()) {
        id = jt->second;
    } else {
        id = by_value_.size() + 1;
        by_value_.emplace(v, id);
        // A Name record may be long: give it room of its own.
        if (used_ + v.size() + 32 > buf_.size()) flush();
        if (kBlockHeaderBytes + v.size() + 32 > buf_.size()) buf_.resize(kBlockHeaderBytes + v.size() + 32);
        begin(static_cast<std::uint8_t>(Rec::Name));
        put(id);
        put(v.size());
        std::memcpy(buf_.data() + used_, v.data(), v.size());
        used_ += v.size();
        end_record();
    }
    // Module names are stable for the run (sc_object::name()); other strings are looked up
    // by value each time, since their pointer may be reused.
    by_ptr_.emplace(s, id);
    return id;
}

void Writer::on_instruction(const InstrEvent& e) {
    begin(static_cast<std::uint8_t>(Rec::Instr));
    put(e.chip);
    put(e.core);
    put(e.index);
    put(e.arrival);
    put_delta(e.ready, e.arrival);
    put_delta(e.issue, e.ready);
    put_delta(e.complete, e.issue);
    end_record();
}

void Writer::on_unit_op(const UnitOpEvent& e) {
    const std::uint64_t unit = name_id(e.unit);
    begin(static_cast<std::uint8_t>(Rec::UnitOp));
    put(unit);
    put(e.chip);
    put(e.core);
    put(e.index);
    put(static_cast<std::uint8_t>(e.op));
    put(e.accept);
    put_delta(e.start, e.accept);
    put_delta(e.end, e.start);
    put_delta(e.complete, e.end);
    end_record();
}

void Writer::on_dma(const DmaEvent& e) {
    const std::uint64_t engine = name_id(e.engine);
    begin(static_cast<std::uint8_t>(Rec::Dma));
    put(engine);
    put(e.chip);
    put(e.core);
    put(e.index);
    put(e.issue);
    put_delta(e.start, e.issue);
    put_delta(e.complete, e.start);
    put(e.bytes);
    end_record();
}

void Writer::on_flag(const FlagEvent& e) {
    const std::uint64_t owner = name_id(e.owner);
    begin(static_cast<std::uint8_t>(Rec::Flag));
    put(owner);
    put(e.flag);
    put(trace::codec::zigzag(e.old_value));
    put(trace::codec::zigzag(e.new_value));
    put(e.time);
    put(e.by.known ? 1 : 0);
    if (e.by.known) {
        put(e.by.chip);
        put(e.by.core);
        put(e.by.index);
    }
    end_record();
}

void Writer::on_mem(const MemEvent& e) {
    const std::uint64_t target = name_id(e.target), initiator = name_id(e.initiator);
    begin(static_cast<std::uint8_t>(Rec::Mem));
    put(target);
    put(initiator);
    put(e.write ? 1 : 0);
    put(e.addr);
    put(e.bytes);
    put(e.arrival);
    put_delta(e.done, e.arrival);
    put(e.for_instr.known ? 1 : 0);
    if (e.for_instr.known) {
        put(e.for_instr.chip);
        put(e.for_instr.core);
        put(e.for_instr.index);
    }
    end_record();
}

void Writer::on_hbm_channel(const HbmChannelEvent& e) {
    const std::uint64_t controller = name_id(e.controller);
    begin(static_cast<std::uint8_t>(Rec::HbmPiece));
    put(controller);
    put(e.channel);
    put(e.bytes);
    put(e.start);
    put_delta(e.done, e.start);
    end_record();
}

void Writer::flush() {
    if (used_ == kBlockHeaderBytes) return;
    const std::size_t payload = used_ - kBlockHeaderBytes;
    trace::codec::put_u32(buf_.data(), static_cast<std::uint32_t>(payload));
    trace::codec::put_u32(buf_.data() + 4, block_records_);
    trace::codec::put_u32(buf_.data() + 8, trace::crc32(buf_.data() + kBlockHeaderBytes, payload));
    if (f_ && std::fwrite(buf_.data(), 1, used_, f_) != used_) failed_ = true;
    file_bytes_ += used_;
    used_ = kBlockHeaderBytes;
    block_records_ = 0;
}

void Writer::finish(Tick end_time, unsigned status) {
    begin(static_cast<std::uint8_t>(Rec::End));
    put(end_time);
    put(status);
    end_record();
    flush();
    if (!f_) return;
    const bool close_failed = std::fclose(f_) != 0;
    f_ = nullptr;
    if (failed_ || close_failed) throw std::runtime_error(path_ + ": cannot write the transaction log (disk full?)");
}

}  // namespace xpu::txlog
