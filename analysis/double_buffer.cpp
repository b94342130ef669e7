#include "analysis/double_buffer.h"

#include <algorithm>

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kAlign = 4096;

std::uint64_t align_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// The VMEM operand fields of an instruction on `chip`: (field, is_destination).
template <typename F>
void for_each_vmem_field(Instruction& in, std::uint16_t chip, F f) {
    auto local = [&](const MemRef& r) { return r.space == Space::Vmem && (r.chip == kLocalChip || r.chip == chip); };
    if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc) && local(in.mem_src)) f(in.mem_src);
    if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst) && local(in.mem_dst)) f(in.mem_dst);
}

}  // namespace

BufferRenamer::BufferRenamer(const RunData& run, const Planner& plan) : run_(run), plan_(plan) {
    for (const Unit& u : run.units) {
        if (u.kind != "Vmem" || u.chip < 0) continue;
        ChipRoom& c = chips_[static_cast<std::uint16_t>(u.chip)];
        c.capacity = ++c.vmems == 1 ? u.capacity : 0;  // several VMEMs (cores): no renaming
    }
    for (const Stream& st : run.streams) ++chips_[st.chip].streams;
}

// The highest VMEM address each chip's instructions touch: one pass over the program, made
// only once a buffer is to be renamed.
void BufferRenamer::find_tops() const {
    if (tops_known_) return;
    tops_known_ = true;
    for (const Stream& st : run_.streams)
        for (const Instruction& in : st.code) {
            auto touch = [&](std::uint16_t chip, const MemRef& r) {
                ChipRoom& c = chips_[chip];
                c.top = std::max(c.top, r.addr + (in.has(kBytes) ? in.bytes : 0));
            };
            if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc) && in.mem_src.space == Space::Vmem)
                touch(in.mem_src.chip == kLocalChip ? st.chip : in.mem_src.chip, in.mem_src);
            if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst) && in.mem_dst.space == Space::Vmem)
                touch(in.mem_dst.chip == kLocalChip ? st.chip : in.mem_dst.chip, in.mem_dst);
        }
}

bool BufferRenamer::blocked_by_buffer(std::uint32_t s, std::uint64_t k, std::uint64_t p) const {
    const Stream& st = run_.streams[s];
    if (p == 0 || st.code[k].op != Opcode::Dma || st.code[k].mem_dst.space != Space::Vmem) return false;
    const Instruction& y = st.code[p - 1];
    if (y.op == Opcode::SWait || is_barrier_like(y.op)) return false;
    Access d[2], a[2];
    if (accesses(st.code[k], st.chip, d) != 2) return false;
    const int n = accesses(y, st.chip, a);
    return conflict(&d[1], 1, a, n) && !conflict(&d[0], 1, a, n);
}

bool BufferRenamer::can_rename(std::uint32_t s, std::uint64_t k) const {
    const Instruction& d = run_.streams[s].code[k];
    const auto key = std::make_tuple(s, d.mem_dst.addr, d.bytes);
    auto it = renamable_.find(key);
    if (it != renamable_.end()) return it->second;
    const Stream& st = run_.streams[s];
    auto f = fills_.find(s);
    if (f == fills_.end()) {
        std::vector<Fill>& v = fills_[s];
        for (const Instruction& in : st.code)
            if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip))
                v.push_back({in.mem_dst.addr, in.bytes});
        f = fills_.find(s);
    }
    bool ok = chips_.at(st.chip).streams == 1;
    const std::uint64_t lo = d.mem_dst.addr, hi = lo + d.bytes;
    for (const Fill& x : f->second)
        if (x.addr < hi && lo < x.addr + x.bytes && (x.addr != lo || x.bytes != d.bytes)) ok = false;
    return renamable_[key] = ok;
}

std::uint64_t BufferRenamer::renamed_point(std::uint32_t s, std::uint64_t k) const {
    auto cached = renamed_point_.find({s, k});
    if (cached != renamed_point_.end()) return cached->second;
    const Stream& st = run_.streams[s];
    find_tops();
    auto c = chips_.find(st.chip);
    Instruction d = st.code[k];
    const std::uint64_t shadow = c == chips_.end() ? 0 : align_up(c->second.top);
    if (c == chips_.end() || c->second.streams != 1 || shadow + d.bytes > c->second.capacity) return k;
    d.mem_dst.addr = shadow;
    Planner::Edited e;
    e.emplace(k, d);
    return renamed_point_[{s, k}] = plan_.hoist_point(s, k, e);
}

bool BufferRenamer::rename(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited& edited, std::string& why) const {
    const Stream& st = run_.streams[s];
    find_tops();
    const ChipRoom& room = chips_.at(st.chip);
    if (room.streams != 1) {
        why = "several cores share the chip's VMEM";
        return false;
    }
    // The buffers: distinct destinations of the DMAs, lowest first.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> buffers;  // (addr, bytes)
    for (std::uint64_t k : dmas) buffers.push_back({st.code[k].mem_dst.addr, st.code[k].bytes});
    std::sort(buffers.begin(), buffers.end());
    buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
    std::uint64_t next = align_up(room.top);
    for (const auto& [lo, bytes] : buffers) {
        const std::uint64_t hi = lo + bytes, shadow = next;
        next = align_up(shadow + bytes);
        if (next > room.capacity) {
            why = "no VMEM headroom for a second buffer";
            return false;
        }
        // Every other stream's DMAs into this chip must stay clear of the buffer.
        for (std::uint32_t o = 0; o < run_.streams.size(); ++o) {
            if (o == s) continue;
            for (const Instruction& in : run_.streams[o].code)
                if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && in.mem_dst.chip == st.chip &&
                    in.mem_dst.addr < hi && lo < in.mem_dst.addr + in.bytes) {
                    why = "another chip writes the buffer";
                    return false;
                }
        }
        // The DMAs that fill the buffer, in program order; each must fill exactly it.
        std::vector<std::uint64_t> fills;
        for (std::uint64_t j = 0; j < st.code.size(); ++j) {
            const Instruction& in = st.code[j];
            if (in.op != Opcode::Dma || in.mem_dst.space != Space::Vmem || !(in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip))
                continue;
            if (in.mem_dst.addr >= hi || lo >= in.mem_dst.addr + in.bytes) continue;
            if (in.mem_dst.addr != lo || in.bytes != bytes) {
                why = "a DMA writes part of the buffer";
                return false;
            }
            fills.push_back(j);
        }
        for (std::size_t i = 1; i < fills.size(); i += 2) {
            const std::uint64_t end = i + 1 < fills.size() ? fills[i + 1] : st.code.size();
            for (std::uint64_t j = fills[i]; j < end; ++j) {
                auto it = edited.find(j);
                Instruction in = it == edited.end() ? st.code[j] : it->second;
                bool changed = false, straddles = false;
                const std::uint64_t n = in.has(kBytes) ? in.bytes : 0;
                for_each_vmem_field(in, st.chip, [&](MemRef& r) {
                    if (r.addr >= hi || lo >= r.addr + std::max<std::uint64_t>(n, 1)) return;
                    if (r.addr < lo || r.addr + n > hi) {
                        straddles = true;
                        return;
                    }
                    r.addr = r.addr - lo + shadow;
                    changed = true;
                });
                if (straddles) {
                    why = "an access straddles the buffer";
                    return false;
                }
                if (changed) edited[j] = in;
            }
        }
    }
    return true;
}

}  // namespace xpu::analysis
