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
        if (u.role != Role::Vmem || u.chip < 0) continue;
        ChipRoom& c = chips_[static_cast<std::uint16_t>(u.chip)];
        c.capacity = ++c.vmems == 1 ? u.capacity : 0;  // several VMEMs (cores): no renaming
    }
    for (const Unit& u : run.units)
        if (u.role == Role::Flags && u.chip >= 0) chips_[static_cast<std::uint16_t>(u.chip)].flags = u.capacity;
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
    if (accesses(st.code[k], st, d) != 2) return false;
    const int n = accesses(y, st, a);
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
        for (std::uint64_t j : plan_.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip))
                v.push_back({in.mem_dst.addr, in.bytes});
        }
        f = fills_.find(s);
    }
    std::size_t exact = 0;
    for (const Fill& x : f->second) exact += x.addr == d.mem_dst.addr && x.bytes == d.bytes;
    bool ok = chips_.at(st.chip).streams == 1 && exact >= 2;  // a second fill to rename
    if (ok) {  // and nothing straddles it (the renaming itself, its edits thrown away)
        Planner::Edited scratch;
        std::string why;
        ok = rename(s, {k}, scratch, why);
    }
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
    for (const auto& buffer : buffers) {
        // Not a structured binding: C++17 does not let a lambda capture one (clang rejects it).
        const std::uint64_t lo = buffer.first, bytes = buffer.second;
        const std::uint64_t hi = lo + bytes;
        std::uint64_t shadow[kBufferCopies] = {lo};
        for (unsigned c = 1; c < kBufferCopies; ++c) {
            shadow[c] = next;
            next = align_up(next + bytes);
        }
        if (next > room.capacity) {
            why = "no VMEM headroom for more buffers";
            return false;
        }
        // Every other stream's DMAs into this chip must stay clear of the buffer.
        for (std::uint32_t o = 0; o < run_.streams.size(); ++o) {
            if (o == s) continue;
            for (std::uint64_t j : plan_.sync_and_dma(o)) {
                const Instruction& in = run_.streams[o].code[j];
                if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && in.mem_dst.chip == st.chip &&
                    in.mem_dst.addr < hi && lo < in.mem_dst.addr + in.bytes) {
                    why = "another chip writes the buffer";
                    return false;
                }
            }
        }
        // The DMAs that write into the buffer, in program order, and which of them fill exactly
        // it. Each exact fill moves to its step's copy with the accesses up to the next DMA into
        // the buffer, provided that one overwrites all of it (else a later read of the rest
        // would still want the copy's bytes).
        std::vector<std::uint64_t> over;
        std::vector<std::size_t> exact;  // positions in `over`
        for (std::uint64_t j : plan_.sync_and_dma(s)) {  // the DMAs are among these
            const Instruction& in = st.code[j];
            if (in.op != Opcode::Dma || in.mem_dst.space != Space::Vmem || !(in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip))
                continue;
            if (in.mem_dst.addr >= hi || lo >= in.mem_dst.addr + in.bytes) continue;
            if (in.mem_dst.addr == lo && in.bytes == bytes) exact.push_back(over.size());
            over.push_back(j);
        }
        for (std::size_t x = 0; x < exact.size(); ++x) {
            const std::size_t at = exact[x];
            const unsigned copy = static_cast<unsigned>(step_of(s, over[at]) % kBufferCopies);
            if (copy == 0) continue;
            const std::uint64_t end = at + 1 < over.size() ? over[at + 1] : st.code.size();
            if (at + 1 < over.size()) {
                const Instruction& next = st.code[end];
                if (next.mem_dst.addr > lo || next.mem_dst.addr + next.bytes < hi) continue;
            }
            for (std::uint64_t j = over[at]; j < end; ++j) {
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
                    r.addr = r.addr - lo + shadow[copy];
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

std::size_t BufferRenamer::split_flags(std::uint32_t s, const std::vector<std::uint64_t>& renamed, Planner::Edited& edited) const {
    const Stream& st = run_.streams[s];
    const ChipRoom& room = chips_.at(st.chip);
    if (room.streams != 1 || room.flags == 0) return 0;
    auto current = [&](std::uint64_t j) -> Instruction {
        auto it = edited.find(j);
        return it == edited.end() ? st.code[j] : it->second;
    };
    auto local = [&](const Instruction& in) { return in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip; };
    // Every flag of this chip the program names (flags are only on syncs and DMAs).
    std::vector<bool> named(room.flags, false);
    for (std::uint32_t o = 0; o < run_.streams.size(); ++o)
        for (std::uint64_t j : plan_.sync_and_dma(o)) {
            const Instruction& in = run_.streams[o].code[j];
            if (in.has(kFlag) && in.flag < room.flags && flag_chip(in, run_.streams[o].chip) == st.chip) named[in.flag] = true;
        }
    std::vector<std::uint16_t> flags;
    for (std::uint64_t k : renamed) {
        const Instruction& in = st.code[k];
        if (in.has(kFlag) && local(in) && std::find(flags.begin(), flags.end(), in.flag) == flags.end()) flags.push_back(in.flag);
    }
    std::size_t split = 0;
    for (std::uint16_t f : flags) {
        // The plain counting: one stream's DMAs raise it, each of its waits waits for all so far.
        const FlagCounting& counting = plan_.flag_counting(st.chip, f);
        if (!counting.monotone || !counting.one_stream || !counting.waits_for_all) continue;
        std::vector<std::uint64_t> uses;  // the DMAs and waits on the flag, program order
        bool plain = true;                // nothing else names it (a barrier, a remote raise)
        for (std::uint64_t j : plan_.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (!in.has(kFlag) || in.flag != f) continue;
            uses.push_back(j);
            plain = plain && (in.op == Opcode::SWait || (in.op == Opcode::Dma && flag_chip(in, st.chip) == st.chip));
        }
        if (!plain) continue;
        // The flag of each copy's steps: f for copy 0, flags nothing on the chip names for the others.
        std::uint16_t flag_of[kBufferCopies] = {f};
        for (unsigned c = 1; c < kBufferCopies; ++c) {
            std::uint16_t g = 0;
            while (g < room.flags && named[g]) ++g;
            if (g >= room.flags) return split;
            named[g] = true;
            flag_of[c] = g;
        }
        // Step j (its DMAs, then its wait) raises and waits on its copy's flag; each wait waits
        // for every DMA issued on that flag so far.
        std::int64_t count[kBufferCopies] = {};
        std::uint64_t step = 0;
        for (std::uint64_t j : uses) {
            Instruction in = current(j);
            const unsigned c = static_cast<unsigned>(step % kBufferCopies);
            in.flag = flag_of[c];
            if (in.op == Opcode::Dma) {
                count[c] += flag_increment(in);
            } else {
                in.value = count[c];
                ++step;
            }
            edited[j] = in;
        }
        ++split;
    }
    return split;
}

std::uint64_t BufferRenamer::step_of(std::uint32_t s, std::uint64_t k) const {
    auto it = steps_.find(s);
    if (it == steps_.end()) {
        const Stream& st = run_.streams[s];
        std::map<std::uint64_t, std::uint64_t>& m = steps_[s];
        std::map<std::uint16_t, std::uint64_t> waits;  // per flag of this chip: swaits so far
        for (std::uint64_t j : plan_.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (!in.has(kFlag)) continue;
            if (in.op == Opcode::SWait) ++waits[in.flag];
            else if (in.op == Opcode::Dma && flag_chip(in, st.chip) == st.chip) m[j] = waits[in.flag];
        }
        it = steps_.find(s);
    }
    auto j = it->second.find(k);
    return j == it->second.end() ? 0 : j->second;
}

}  // namespace xpu::analysis
