#include "platform/txlog_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "traces/crc32.h"
#include "traces/trace_format.h"
#include "traces/txlog_format.h"

namespace xpu::txlog {

namespace {
// A record is at most ~16 varints (a Mem record that opens a slot) and its pieces' times.
constexpr std::size_t kMaxRecordBytes = 256;
constexpr std::size_t kMaxVarint = 10;
}  // namespace

Writer::Writer(const std::string& path, const Header& header) : path_(path) {
    const std::string meta = format_header(header);
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
    // The header's units are the names, ids 1, 2, 3... (the first of equal paths, as a reader
    // that looks a name up finds it).
    for (const Unit& u : header.units) by_value_.emplace(u.path, next_name_++);
    layouts_ = header.hbm;
    layout_of_.assign(next_name_, nullptr);
    for (const HbmLayout& l : layouts_) {
        auto it = by_value_.find(l.path);
        if (it != by_value_.end() && !layout_of_[it->second]) layout_of_[it->second] = &l;
    }
    next_addr_.assign(next_name_, 0);
}

Writer::~Writer() {
    if (f_) std::fclose(f_);
}

void Writer::begin(std::uint8_t type, std::size_t extra) {
    if (used_ >= kBlockHeaderBytes + kBlockTarget || used_ + kMaxRecordBytes + extra > buf_.size()) flush();
    if (used_ + kMaxRecordBytes + extra > buf_.size()) buf_.resize(used_ + kMaxRecordBytes + extra);
    buf_[used_++] = type;
}

void Writer::put(std::uint64_t v) { used_ = static_cast<std::size_t>(trace::codec::put_varint(buf_.data() + used_, v) - buf_.data()); }

void Writer::put_delta(Tick later, Tick earlier) { put_zz(static_cast<std::int64_t>(later - earlier)); }

void Writer::end_record() {
    ++block_records_;
    ++records_;
}

StreamState& Writer::stream(std::uint16_t chip, std::uint16_t core) {
    const std::uint32_t key = std::uint32_t(chip) << 16 | core;
    if (last_stream_ && key == last_stream_key_) return *last_stream_;  // records come in runs of one stream
    last_stream_key_ = key;
    last_stream_ = &streams_[key];  // stable: an unordered_map's elements do not move
    return *last_stream_;
}

void Writer::put_index(std::uint16_t chip, std::uint16_t core, std::uint64_t index, bool update) {
    StreamState& s = stream(chip, core);
    put(chip);
    put(core);
    put_zz(static_cast<std::int64_t>(index - s.index));
    if (update) s.index = index;
}

std::uint64_t Writer::name_id(const char* s) {
    if (!s || !*s) return 0;
    // A few modules name most events: a small cache by pointer before the map.
    NameCache& c = name_cache_[(reinterpret_cast<std::uintptr_t>(s) >> 4) % kNameCache];
    if (c.ptr == s) return c.id;
    auto it = by_ptr_.find(s);
    if (it != by_ptr_.end()) {
        c = {s, it->second};
        return it->second;
    }
    std::string v(s);
    auto jt = by_value_.find(v);
    std::uint64_t id;
    if (jt != by_value_.end()) {
        id = jt->second;
    } else {  // not a unit of the header: a Name record
        id = next_name_++;
        by_value_.emplace(v, id);
        layout_of_.push_back(nullptr);
        next_addr_.push_back(0);
        begin(static_cast<std::uint8_t>(Rec::Name), v.size());
        put(id);
        put(v.size());
        std::memcpy(buf_.data() + used_, v.data(), v.size());
        used_ += v.size();
        end_record();
    }
    // Module names are stable for the run (sc_object::name()); other strings are looked up
    // by value each time, since their pointer may be reused.
    by_ptr_.emplace(s, id);
    c = {s, id};
    return id;
}

void Writer::settle_op() {
    if (!op_waiting_) return;
    op_waiting_ = false;
    write_unit_op(op_);
}

void Writer::settle_pieces() {
    for (const HbmChannelEvent& p : pieces_) write_piece(pieces_of_, p);
    pieces_.clear();
}

void Writer::write_piece(std::uint64_t controller, const HbmChannelEvent& e) {
    begin(static_cast<std::uint8_t>(Rec::HbmPiece));
    put(controller);
    put(e.channel);
    put(e.bytes);
    put_delta(e.start, g_.piece_start);
    g_.piece_start = e.start;
    put_delta(e.done, e.start);
    end_record();
}

void Writer::write_instr(const InstrEvent& e, const UnitOpEvent* op) {
    begin(static_cast<std::uint8_t>(op ? Rec::InstrOp : Rec::Instr));
    put_index(e.chip, e.core, e.index, true);
    StreamState& s = stream(e.chip, e.core);
    put_delta(e.arrival, s.time);
    s.time = e.arrival;
    put_delta(e.ready, e.arrival);
    put_delta(e.issue, e.ready);
    put_delta(e.complete, e.issue);
    if (op) {
        put(name_id(op->unit));
        put(static_cast<std::uint8_t>(op->op));
        put_delta(op->start, op->accept);
        put_delta(op->end, op->start);
        put_delta(op->complete, op->end);
    }
    end_record();
}

void Writer::on_instruction(const InstrEvent& e) {
    settle_pieces();
    if (op_waiting_) {
        op_waiting_ = false;
        const UnitOpEvent& o = op_;
        if (o.chip == e.chip && o.core == e.core && o.index == e.index && o.accept == e.issue && o.complete == e.complete) {
            name_id(o.unit);  // a Name record, if any, before the record that uses it
            write_instr(e, &o);
            return;
        }
        write_unit_op(o);
    }
    write_instr(e, nullptr);
}

void Writer::write_unit_op(const UnitOpEvent& e) {
    const std::uint64_t unit = name_id(e.unit);
    begin(static_cast<std::uint8_t>(Rec::UnitOp));
    put(unit);
    put_index(e.chip, e.core, e.index, true);
    put(static_cast<std::uint8_t>(e.op));
    StreamState& s = stream(e.chip, e.core);
    put_delta(e.accept, s.time);
    s.time = e.accept;
    put_delta(e.start, e.accept);
    put_delta(e.end, e.start);
    put_delta(e.complete, e.end);
    end_record();
}

void Writer::on_unit_op(const UnitOpEvent& e) {
    settle_pieces();
    settle_op();
    op_ = e;
    op_waiting_ = true;
}

void Writer::on_dma(const DmaEvent& e) {
    settle_pieces();
    settle_op();
    const std::uint64_t engine = name_id(e.engine);
    begin(static_cast<std::uint8_t>(Rec::Dma));
    put(engine);
    put_index(e.chip, e.core, e.index, true);
    StreamState& s = stream(e.chip, e.core);
    put_delta(e.issue, s.time);
    s.time = e.issue;
    put_delta(e.start, e.issue);
    put_delta(e.complete, e.start);
    put(e.bytes);
    end_record();
}

void Writer::on_flag(const FlagEvent& e) {
    settle_pieces();
    settle_op();
    const std::uint64_t owner = name_id(e.owner);
    begin(static_cast<std::uint8_t>(Rec::Flag));
    put(owner);
    put(e.flag);
    put_zz(e.old_value);
    put_zz(static_cast<std::int64_t>(static_cast<std::uint64_t>(e.new_value) - static_cast<std::uint64_t>(e.old_value)));
    put_delta(e.time, g_.flag_time);
    g_.flag_time = e.time;
    put(e.by.known ? 1 : 0);
    if (e.by.known) put_index(e.by.chip, e.by.core, e.by.index, false);
    end_record();
}

void Writer::on_hbm_channel(const HbmChannelEvent& e) {
    settle_op();
    const std::uint64_t controller = name_id(e.controller);
    if (!pieces_.empty() && controller != pieces_of_) settle_pieces();
    pieces_of_ = controller;
    pieces_.push_back(e);
}

Pieces Writer::derive(const HbmLayout& layout, std::uint64_t controller, const MemEvent& e) const {
    if (controller != pieces_of_ && !pieces_.empty()) return Pieces::Explicit;
    if (layout.pieces(e.addr, e.bytes) != pieces_.size() || pieces_.size() > kMaxDerivedPieces || e.addr < layout.base) return Pieces::Explicit;
    if (pieces_.empty()) return Pieces::Once;
    unsigned passes = 0;
    bool timed = false, exact = true;
    std::size_t k = 0;
    const Tick granule_service = layout.transfer_ps(layout.interleave);
    layout.for_each_piece(e.addr, e.bytes, [&](std::uint16_t channel, std::uint64_t bytes) {
        const HbmChannelEvent& p = pieces_[k++];
        if (passes == 0) passes = p.bytes == bytes ? 1 : p.bytes == 2 * bytes ? 2 : 3;
        const Tick service = bytes == layout.interleave ? granule_service : layout.transfer_ps(bytes);
        exact = exact && p.channel == channel && p.bytes == bytes * passes && p.done <= e.done &&
                p.start == layout.start_of(e.arrival, p.done, service * passes);
        timed = timed || p.done != e.done;
    });
    if (!exact || passes > 2) return Pieces::Explicit;
    return passes == 1 ? (timed ? Pieces::OnceTimed : Pieces::Once) : (timed ? Pieces::TwiceTimed : Pieces::Twice);
}

void Writer::on_mem(const MemEvent& e) {
    settle_op();
    const std::uint64_t target = name_id(e.target), initiator = name_id(e.initiator);
    const HbmLayout* layout = target < layout_of_.size() ? layout_of_[target] : nullptr;
    Pieces mode = Pieces::Explicit;
    if (layout) mode = derive(*layout, target, e);
    if (mode == Pieces::Explicit) settle_pieces();

    const SlotKey key{target, e.for_instr.known ? e.for_instr.index : 0,
                      e.for_instr.known ? (std::uint32_t(e.for_instr.chip) << 16 | e.for_instr.core) : 0u, e.for_instr.known};
    // The slot this target used last is most often the one (a DMA's chunks come one after
    // another on each target): looked up in the map only otherwise.
    if (target >= last_slot_.size()) last_slot_.resize(target + 1, kSlots);
    unsigned slot;
    bool next = false;
    auto it = slot_of_.end();
    const unsigned cached = last_slot_[target];
    if (cached < kSlots && slot_used_[cached] && slot_key_[cached] == key) {
        slot = cached;
        const ChunkSlot& s = slots_[slot];
        next = s.initiator == initiator && s.write == e.write && s.addr + s.bytes == e.addr && s.bytes == e.bytes;
    } else if ((it = slot_of_.find(key)) != slot_of_.end()) {
        slot = it->second;
        const ChunkSlot& s = slots_[slot];
        next = s.initiator == initiator && s.write == e.write && s.addr + s.bytes == e.addr && s.bytes == e.bytes;
    } else {  // a slot for it, in turn: the oldest one's DMA is likely done
        slot = next_slot_;
        next_slot_ = (next_slot_ + 1) % kSlots;
        if (slot_used_[slot]) slot_of_.erase(slot_key_[slot]);
        slot_used_[slot] = 1;
        slot_key_[slot] = key;
        slot_of_.emplace(key, slot);
    }
    last_slot_[target] = slot;
    ChunkSlot& s = slots_[slot];
    const std::size_t extra = pieces_.size() * kMaxVarint;
    if (next) {
        begin(static_cast<std::uint8_t>(static_cast<unsigned>(Rec::MemNext) | slot), extra);
        put_zz(static_cast<std::int64_t>(e.arrival - s.predict(g_.mem_done)));
        put_zz(static_cast<std::int64_t>((e.done - e.arrival) - s.latency));
        s.next(e.arrival, e.done, g_.mem_done);
    } else {
        begin(static_cast<std::uint8_t>(Rec::Mem), extra);
        put(slot);
        put(target);
        put(initiator);
        put((e.write ? 1u : 0u) | (e.for_instr.known ? 2u : 0u));
        put_zz(static_cast<std::int64_t>(e.addr - (target < next_addr_.size() ? next_addr_[target] : 0)));
        put(e.bytes);
        put_delta(e.arrival, g_.mem_arrival);
        put_delta(e.done, e.arrival);
        if (e.for_instr.known) put_index(e.for_instr.chip, e.for_instr.core, e.for_instr.index, false);
        s.target = target;
        s.initiator = initiator;
        s.write = e.write;
        s.known = e.for_instr.known;
        s.chip = e.for_instr.chip;
        s.core = e.for_instr.core;
        s.index = e.for_instr.index;
        s.addr = e.addr;
        s.bytes = e.bytes;
        s.open(e.arrival, e.done, g_.mem_done);
    }
    if (target < next_addr_.size()) next_addr_[target] = e.addr + e.bytes;
    g_.mem_arrival = e.arrival;
    g_.mem_done = e.done;
    if (layout) {
        put(static_cast<std::uint8_t>(mode));
        if (mode == Pieces::OnceTimed || mode == Pieces::TwiceTimed)
            for (const HbmChannelEvent& p : pieces_) put(e.done - p.done);
        if (mode != Pieces::Explicit) pieces_.clear();
    }
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
    settle_op();
    settle_pieces();
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
