#include "analysis/double_buffer.h"

#include <algorithm>
#include <set>

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

// Does the DMA over[n] into buffer [lo, hi) leave nothing of the buffer that is read before it
// is written again? True when it overwrites all of it; also when it writes only part (an edge
// tile, smaller than the rest) and no instruction reads the part it leaves before a DMA that
// overwrites the whole buffer. Then the fill before it may move to another copy of the buffer
// with its readers: the bytes that stay behind in the copy are never read in their old place.
bool rest_unread(const Stream& st, const std::vector<std::uint64_t>& over, std::size_t n, std::uint64_t lo, std::uint64_t hi) {
    const Instruction& next = st.code[over[n]];
    const std::uint64_t w_lo = std::max(lo, next.mem_dst.addr), w_hi = std::min(hi, next.mem_dst.addr + next.bytes);
    if (w_lo <= lo && w_hi >= hi) return true;
    const std::uint64_t stop = [&] {  // the next DMA that overwrites the whole buffer
        for (std::size_t m = n + 1; m < over.size(); ++m) {
            const Instruction& d = st.code[over[m]];
            if (d.mem_dst.addr <= lo && d.mem_dst.addr + d.bytes >= hi) return over[m];
        }
        return static_cast<std::uint64_t>(st.code.size());
    }();
    auto reads_rest = [&](const MemRef& r, std::uint64_t bytes) {
        const std::uint64_t a = r.addr, b = r.addr + std::max<std::uint64_t>(bytes, 1);
        if (b <= lo || a >= hi) return false;
        return a < w_lo || b > w_hi;  // touches a byte of the buffer the partial DMA did not write
    };
    for (std::uint64_t j = over[n] + 1; j < stop; ++j) {
        const Instruction& in = st.code[j];
        const bool local = in.has(kMemSrc) && in.mem_src.space == Space::Vmem && (in.mem_src.chip == kLocalChip || in.mem_src.chip == st.chip);
        if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && local && reads_rest(in.mem_src, in.has(kBytes) ? in.bytes : 0)) return false;
    }
    return true;
}

}  // namespace

BufferRenamer::BufferRenamer(const RunData& run, const Planner& plan) : run_(run), plan_(plan) {
    // Per chip, the VMEMs its streams address (Stream::vmem; their paths: RunData::vmem_paths).
    std::map<std::uint16_t, std::set<std::uint16_t>> addressed;
    for (const Stream& st : run.streams) addressed[st.chip].insert(st.vmem);
    std::map<std::uint16_t, std::uint64_t> theirs;  // a chip of several VMEMs whose streams all address one: its capacity
    for (const Unit& u : run.units) {
        if (u.role != Role::Vmem || u.chip < 0) continue;
        const auto chip = static_cast<std::uint16_t>(u.chip);
        ChipRoom& c = chips_[chip];
        c.capacity = ++c.vmems == 1 ? u.capacity : 0;  // several VMEMs (cores): no renaming, unless...
        const std::set<std::uint16_t>& a = addressed[chip];
        const std::string tail = a.size() == 1 && *a.begin() < run.vmem_paths.size() ? "." + run.vmem_paths[*a.begin()] : std::string();
        if (!tail.empty() && u.path.size() > tail.size() && u.path.compare(u.path.size() - tail.size(), tail.size(), tail) == 0)
            theirs[chip] = u.capacity;
    }
    // ...the chip's streams all address the same one (a two-core chip running one stream: its
    // core's VMEM; vmem: operands are offsets in it, and vmem@C ones in the same one of chip C):
    // the room is found in that one, as on a chip of one VMEM. The others are left alone.
    for (const auto& [chip, capacity] : theirs)
        if (chips_[chip].vmems > 1) chips_[chip].capacity = capacity;
    for (const Unit& u : run.units)
        if (u.role == Role::Flags && u.chip >= 0) chips_[static_cast<std::uint16_t>(u.chip)].flags = u.capacity;
    for (const Stream& st : run.streams) ++chips_[st.chip].streams;
}

// The VMEM each chip's instructions leave alone, found once a buffer is to be renamed: one pass
// over the program marks the kAlign-byte granules they touch. The room is the largest range of
// granules none touches: above the highest byte touched (exact at its lower end) unless a
// range lower down is larger. A trace that a transformation already gave buffers at the top
// of the VMEM (double_buffer_store's copies go there when it plans on top of prefetch_ahead)
// keeps the room below them for the next one.
void BufferRenamer::find_room() const {
    if (room_known_) return;
    room_known_ = true;
    struct Used {
        std::uint64_t top = 0;       // the end of the highest byte touched
        std::vector<bool> granules;  // touched or not
    };
    std::map<std::uint16_t, Used> used;  // per chip with a known VMEM
    for (const auto& [chip, c] : chips_)
        if (c.capacity) used[chip].granules.assign(static_cast<std::size_t>(c.capacity / kAlign), false);
    for (const Stream& st : run_.streams)
        for (const Instruction& in : st.code) {
            auto touch = [&](std::uint16_t chip, const MemRef& r) {
                auto u = used.find(chip);
                if (u == used.end()) return;
                const std::uint64_t end = r.addr + (in.has(kBytes) ? in.bytes : 0);
                u->second.top = std::max(u->second.top, end);
                std::vector<bool>& g = u->second.granules;
                const std::uint64_t first = r.addr / kAlign, last = (std::max(end, r.addr + 1) - 1) / kAlign;
                for (std::uint64_t k = first; k <= last && k < g.size(); ++k) g[static_cast<std::size_t>(k)] = true;
            };
            if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc) && in.mem_src.space == Space::Vmem)
                touch(in.mem_src.chip == kLocalChip ? st.chip : in.mem_src.chip, in.mem_src);
            if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst) && in.mem_dst.space == Space::Vmem)
                touch(in.mem_dst.chip == kLocalChip ? st.chip : in.mem_dst.chip, in.mem_dst);
        }
    for (auto& [chip, u] : used) {
        ChipRoom& c = chips_.at(chip);
        c.free_lo = u.top;
        c.free_hi = std::max(u.top, c.capacity);
        const std::vector<bool>& g = u.granules;
        for (std::size_t k = 0; k < g.size();) {
            if (g[k]) {
                ++k;
                continue;
            }
            std::size_t e = k;
            while (e < g.size() && !g[e]) ++e;
            const std::uint64_t lo = k * kAlign, hi = e * kAlign;
            if (hi <= u.top && hi - lo > c.free_hi - c.free_lo) {
                c.free_lo = lo;
                c.free_hi = hi;
            }
            k = e;
        }
    }
}

BufferRenamer::Room BufferRenamer::room(std::uint16_t chip) const {
    find_room();
    Room r;
    auto it = chips_.find(chip);
    if (it == chips_.end()) return r;
    r.free_lo = it->second.free_lo;
    r.free_hi = it->second.free_hi;
    r.flags = it->second.flags;
    r.one_stream = it->second.streams == 1;
    return r;
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
    std::size_t exact = 0;
    for (const Fill& x : local_fills(s)) exact += x.addr == d.mem_dst.addr && x.bytes == d.bytes;
    bool ok = chips_.at(st.chip).streams == 1 && exact >= 2;  // a second fill to rename
    if (ok) {  // and nothing straddles it (the renaming itself, its edits not recorded)
        std::string why;
        ok = rename_into(s, {k}, nullptr, why);
    }
    return renamable_[key] = ok;
}

const std::vector<BufferRenamer::Fill>& BufferRenamer::local_fills(std::uint32_t s) const {
    auto f = fills_.find(s);
    if (f != fills_.end()) return f->second;
    const Stream& st = run_.streams[s];
    std::vector<Fill>& v = fills_[s];
    for (std::uint64_t j : plan_.sync_and_dma(s)) {
        const Instruction& in = st.code[j];
        if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip))
            v.push_back({j, in.mem_dst.addr, in.bytes});
    }
    return v;
}

const std::vector<BufferRenamer::VmemUse>& BufferRenamer::vmem_uses(std::uint32_t s) const {
    auto f = uses_.find(s);
    if (f != uses_.end()) return f->second;
    const Stream& st = run_.streams[s];
    std::vector<VmemUse>& v = uses_[s];
    for (std::uint64_t j = 0; j < st.code.size(); ++j) {
        const Instruction& in = st.code[j];
        if (in.op != Opcode::VLoad && in.op != Opcode::VStore && in.op != Opcode::Dma) continue;
        VmemUse u{j, {0, 0}, in.has(kBytes) ? in.bytes : 0, 0};
        Instruction copy = in;
        for_each_vmem_field(copy, st.chip, [&](MemRef& r) { u.addr[u.fields++] = r.addr; });
        if (u.fields) v.push_back(u);
    }
    return v;
}

std::uint64_t BufferRenamer::renamed_point(std::uint32_t s, std::uint64_t k) const {
    auto cached = renamed_point_.find({s, k});
    if (cached != renamed_point_.end()) return cached->second;
    const Stream& st = run_.streams[s];
    find_room();
    auto c = chips_.find(st.chip);
    Instruction d = st.code[k];
    const std::uint64_t shadow = c == chips_.end() ? 0 : align_up(c->second.free_lo);
    if (c == chips_.end() || c->second.streams != 1 || c->second.free_hi <= c->second.free_lo || shadow + d.bytes > c->second.free_hi) return k;
    d.mem_dst.addr = shadow;
    Planner::Edited e;
    e.set(k, d);
    return renamed_point_[{s, k}] = plan_.hoist_point(s, k, e);
}

bool BufferRenamer::rename(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited& edited, std::string& why) const {
    return rename_into(s, dmas, &edited, why);
}

bool BufferRenamer::rename_into(std::uint32_t s, const std::vector<std::uint64_t>& dmas, Planner::Edited* edited, std::string& why) const {
    const Stream& st = run_.streams[s];
    find_room();
    const ChipRoom& room = chips_.at(st.chip);
    if (room.streams != 1) {
        why = "several cores share the chip's VMEM";
        return false;
    }
    // The buffers: distinct destinations of the DMAs, lowest first. A destination that fills of
    // other extents overlap (tiles packed back to back whose sizes change from step to step)
    // is renamed as the whole region those fills cover, step by step (rename_region).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> buffers, regions;  // (addr, bytes); (lo, hi)
    for (std::uint64_t k : dmas) {
        const std::uint64_t lo = st.code[k].mem_dst.addr, hi = lo + st.code[k].bytes;
        const auto r = region_of(s, lo, hi);
        if (r.first == lo && r.second == hi)
            buffers.push_back({lo, st.code[k].bytes});
        else
            regions.push_back(r);
    }
    std::sort(buffers.begin(), buffers.end());
    buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
    std::sort(regions.begin(), regions.end());
    regions.erase(std::unique(regions.begin(), regions.end()), regions.end());
    // A buffer inside a region (an edge tile's fill listed beside a full one) is renamed with it.
    buffers.erase(std::remove_if(buffers.begin(), buffers.end(),
                                 [&](const std::pair<std::uint64_t, std::uint64_t>& b) {
                                     for (const auto& r : regions)
                                         if (b.first < r.second && r.first < b.first + b.second) return true;
                                     return false;
                                 }),
                  buffers.end());
    // Only checking (no `edited`): one buffer's exact fills rewrite disjoint ranges, each
    // instruction once, so nothing this call rewrites is looked at again and the rewrites need
    // not be kept. Several buffers: a later one sees what an earlier one moved.
    Planner::Edited scratch;
    if (!edited && buffers.size() > 1) edited = &scratch;
    std::uint64_t next = align_up(room.free_lo);
    for (const auto& buffer : buffers) {
        // Not a structured binding: C++17 does not let a lambda capture one (clang rejects it).
        const std::uint64_t lo = buffer.first, bytes = buffer.second;
        const std::uint64_t hi = lo + bytes;
        std::uint64_t shadow[kBufferCopies];
        if (!place_copies(s, lo, hi, next, shadow, why)) return false;
        // The DMAs that write into the buffer, in program order, and which of them fill exactly
        // it. Each exact fill moves to its step's copy with the accesses up to the next DMA into
        // the buffer, provided that one overwrites all of it (else a later read of the rest
        // would still want the copy's bytes).
        std::vector<std::uint64_t> over;
        std::vector<std::size_t> exact;  // positions in `over`
        for (const Fill& f : local_fills(s)) {
            if (f.addr >= hi || lo >= f.addr + f.bytes) continue;
            if (f.addr == lo && f.bytes == bytes) exact.push_back(over.size());
            over.push_back(f.index);
        }
        for (std::size_t x = 0; x < exact.size(); ++x) {
            const std::size_t at = exact[x];
            const unsigned copy = static_cast<unsigned>(step_of(s, over[at]) % kBufferCopies);
            if (copy == 0) continue;
            const std::uint64_t end = at + 1 < over.size() ? over[at + 1] : st.code.size();
            if (at + 1 < over.size() && !rest_unread(st, over, at + 1, lo, hi)) continue;
            // Only instructions with VMEM operands can change (for_each_vmem_field): those of
            // the stream, from its index of them, each first looked at in that index's copy.
            const std::vector<VmemUse>& uses = vmem_uses(s);
            auto u = std::lower_bound(uses.begin(), uses.end(), over[at], [](const VmemUse& a, std::uint64_t j) { return a.index < j; });
            for (; u != uses.end() && u->index < end; ++u) {
                const std::uint64_t j = u->index;
                const Instruction* current = nullptr;
                if (edited && !edited->empty()) current = edited->find(j);
                if (!current) {  // as the program has it: its index entry says whether it touches the buffer
                    bool touches = false;
                    for (unsigned f = 0; f < u->fields; ++f) {
                        if (u->addr[f] >= hi || lo >= u->addr[f] + std::max<std::uint64_t>(u->bytes, 1)) continue;
                        if (u->addr[f] < lo || u->addr[f] + u->bytes > hi) {
                            why = "an access straddles the buffer";
                            return false;
                        }
                        touches = true;
                    }
                    if (!touches || !edited) continue;
                    current = &st.code[j];
                }
                Instruction in = *current;
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
                if (changed && edited) edited->set(j, in);
            }
        }
    }
    for (const auto& r : regions) {
        std::uint64_t shadow[kBufferCopies];
        if (!place_copies(s, r.first, r.second, next, shadow, why) || !rename_region(s, r.first, r.second, shadow, edited, why))
            return false;
    }
    return true;
}

bool BufferRenamer::place_copies(std::uint32_t s, std::uint64_t lo, std::uint64_t hi, std::uint64_t& next, std::uint64_t* shadow,
                                 std::string& why) const {
    const Stream& st = run_.streams[s];
    shadow[0] = lo;
    for (unsigned c = 1; c < kBufferCopies; ++c) {
        shadow[c] = next;
        next = align_up(next + (hi - lo));
    }
    if (next > chips_.at(st.chip).free_hi) {
        why = "no VMEM headroom for more buffers";
        return false;
    }
    // Every other stream's DMAs into this chip must stay clear of the range.
    for (std::uint32_t o = 0; o < run_.streams.size(); ++o) {
        if (o == s) continue;
        for (std::uint64_t j : plan_.sync_and_dma(o)) {
            const Instruction& in = run_.streams[o].code[j];
            if (in.op == Opcode::Dma && in.mem_dst.space == Space::Vmem && in.mem_dst.chip == st.chip && in.mem_dst.addr < hi &&
                lo < in.mem_dst.addr + in.bytes) {
                why = "another chip writes the buffer";
                return false;
            }
        }
    }
    return true;
}

std::pair<std::uint64_t, std::uint64_t> BufferRenamer::region_of(std::uint32_t s, std::uint64_t lo, std::uint64_t hi) const {
    // Grown by every fill that overlaps it and reaches past it, until none does: the union of
    // the chain of overlapping fills it belongs to. Those unions, found once per stream (a
    // decode renames thousands of fills, each looked up here: a scan of all fills per lookup
    // was 86% of its analysis).
    auto it = regions_.find(s);
    if (it == regions_.end()) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
        for (const Fill& f : local_fills(s))
            if (f.bytes) v.push_back({f.addr, f.addr + f.bytes});
        std::sort(v.begin(), v.end());
        std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
        for (const auto& x : v)
            if (!merged.empty() && x.first < merged.back().second)
                merged.back().second = std::max(merged.back().second, x.second);
            else
                merged.push_back(x);
        // Unions that meet end to end are one region where an access reads across the seam: a
        // weight tile filled by two DMAs (one per engine) and loaded into registers in pieces
        // of another size, one of which spans both fills (a 777x1000x1300 GEMM on tpu-v6e-4:
        // its B tiles filled as 258048 + 253952 bytes, read as 128 KiB loads). Renamed apart,
        // that load would straddle both; renamed as one region, it moves with them.
        std::vector<bool> seam(merged.size(), false);  // seam[i]: merged[i] joins merged[i + 1]
        for (const VmemUse& u : vmem_uses(s))
            for (unsigned f = 0; f < u.fields; ++f) {
                const std::uint64_t a = u.addr[f], b = a + u.bytes;
                auto r = std::upper_bound(merged.begin(), merged.end(), std::make_pair(a, ~std::uint64_t{0}));
                if (r == merged.begin()) continue;
                for (std::size_t i = static_cast<std::size_t>(r - merged.begin()) - 1;
                     i + 1 < merged.size() && a < merged[i].second && merged[i].second == merged[i + 1].first && b > merged[i].second;
                     ++i)
                    seam[i] = true;
            }
        std::vector<std::pair<std::uint64_t, std::uint64_t>> joined;
        for (std::size_t i = 0; i < merged.size(); ++i)
            if (i > 0 && seam[i - 1])
                joined.back().second = merged[i].second;
            else
                joined.push_back(merged[i]);
        it = regions_.emplace(s, std::move(joined)).first;
    }
    const auto& u = it->second;
    auto r = std::upper_bound(u.begin(), u.end(), std::make_pair(lo, ~std::uint64_t{0}));  // the last union starting at or before lo
    if (r == u.begin()) return {lo, hi};
    --r;
    if (r->second <= lo || r->first > lo || r->second < hi) return {lo, hi};  // not a fill's range: itself
    return *r;
}

// Region [lo, hi) of stream s, filled by DMAs of different extents: the fills in program order
// form groups, consecutive fills of one pipeline step (step_of); each group's segment runs from
// its first fill to the next group's, and every access to the region in it moves to the copy
// of the group's step, as an exact buffer's fill and its accesses do. Safe only where each
// segment reads nothing but what its own group's fills before the read wrote: then no read
// wants bytes that another step's copy holds. A read of anything else (an earlier step's bytes
// left in place, data a vector store put there) or an access that straddles it: not renamed.
bool BufferRenamer::rename_region(std::uint32_t s, std::uint64_t lo, std::uint64_t hi, const std::uint64_t* shadow,
                                  Planner::Edited* edited, std::string& why) const {
    const Stream& st = run_.streams[s];
    std::vector<Fill> over;  // the fills of the region, program order
    for (const Fill& f : local_fills(s))
        if (f.addr < hi && lo < f.addr + f.bytes) over.push_back(f);
    const std::vector<VmemUse>& uses = vmem_uses(s);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> written;  // the group's fills so far: [a, b)
    for (std::size_t g = 0; g < over.size();) {
        const std::uint64_t step = step_of(s, over[g].index);
        std::size_t e = g + 1;  // the group: over[g, e)
        while (e < over.size() && step_of(s, over[e].index) == step) ++e;
        const std::uint64_t end = e < over.size() ? over[e].index : st.code.size();
        const unsigned copy = static_cast<unsigned>(step % kBufferCopies);
        written.clear();
        std::size_t next_fill = g;
        auto covered = [&](std::uint64_t a, std::uint64_t b) {  // is [a, b) within what `written` holds (sorted)?
            for (const auto& w : written) {
                if (w.first > a) break;
                if (w.second > a) a = w.second;
                if (a >= b) return true;
            }
            return a >= b;
        };
        auto u = std::lower_bound(uses.begin(), uses.end(), over[g].index, [](const VmemUse& x, std::uint64_t j) { return x.index < j; });
        for (; u != uses.end() && u->index < end; ++u) {
            const std::uint64_t j = u->index;
            const Instruction* current = edited && !edited->empty() ? edited->find(j) : nullptr;
            Instruction in = current ? *current : st.code[j];
            const std::uint64_t n = in.has(kBytes) ? in.bytes : 0;
            bool changed = false, straddles = false, stale = false;
            for_each_vmem_field(in, st.chip, [&](MemRef& r) {
                const std::uint64_t a = r.addr, b = r.addr + std::max<std::uint64_t>(n, 1);
                if (a >= hi || lo >= b) return;
                if (a < lo || b > hi) {
                    straddles = true;
                    return;
                }
                if (&r == &in.mem_src && !covered(a, b)) stale = true;
                r.addr = r.addr - lo + shadow[copy];
                changed = true;
            });
            if (straddles) {
                why = "an access straddles the buffer";
                return false;
            }
            if (stale) {
                why = "a step reads bytes of the buffer that its own fills did not write";
                return false;
            }
            // The group's own fills, once passed: what the segment's later reads may read.
            while (next_fill < e && over[next_fill].index <= j) {
                const std::pair<std::uint64_t, std::uint64_t> w{over[next_fill].addr, over[next_fill].addr + over[next_fill].bytes};
                written.insert(std::upper_bound(written.begin(), written.end(), w), w);
                ++next_fill;
            }
            if (changed && copy != 0 && edited) edited->set(j, in);
        }
        g = e;
    }
    return true;
}

std::vector<bool> BufferRenamer::named_flags(std::uint16_t chip) const {
    auto it = chips_.find(chip);
    std::vector<bool> named(it == chips_.end() ? 0 : it->second.flags, false);
    for (std::uint32_t o = 0; o < run_.streams.size(); ++o)
        for (std::uint64_t j : plan_.sync_and_dma(o)) {
            const Instruction& in = run_.streams[o].code[j];
            if (in.has(kFlag) && in.flag < named.size() && flag_chip(in, run_.streams[o].chip) == chip) named[in.flag] = true;
        }
    return named;
}

std::size_t BufferRenamer::split_flags(std::uint32_t s, const std::vector<std::uint64_t>& renamed, Planner::Edited& edited) const {
    const Stream& st = run_.streams[s];
    const ChipRoom& room = chips_.at(st.chip);
    if (room.streams != 1 || room.flags == 0) return 0;
    auto current = [&](std::uint64_t j) -> Instruction {
        const Instruction* e = edited.find(j);
        return e ? *e : st.code[j];
    };
    auto local = [&](const Instruction& in) { return in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip; };
    std::vector<bool> named = named_flags(st.chip);
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
        // Each DMA raises, and each wait waits on, the flag of its step's copy (find_steps);
        // each wait waits for every DMA issued on that flag so far.
        find_steps(s);
        const Steps& steps = steps_.at(s);
        std::int64_t count[kBufferCopies] = {};
        for (std::uint64_t j : uses) {
            Instruction in = current(j);
            const bool dma = in.op == Opcode::Dma;
            const std::uint64_t step = (dma ? steps.fill : steps.wait)[position(s, j)];  // uses are in sync_and_dma
            const unsigned c = static_cast<unsigned>((step == Steps::kNone ? 0 : step) % kBufferCopies);
            in.flag = flag_of[c];
            if (dma) count[c] += flag_increment(in);
            else in.value = count[c];
            edited.set(j, in);
        }
        ++split;
    }
    return split;
}

// Steps. The swaits on the flags that fills of one size raise (joined across sizes that share a
// flag: an edge tile raises the same flag as the full tiles) are the program's pipeline steps,
// counted in program order. A fill belongs to the step of the first swait that waits for it (the
// step that reads it), wherever it was issued: a prefetched fill belongs to a later step than
// the waits before it say. Buffers a program already rotates (three tile buffers, one per step,
// as the generator's own prefetch does, or the copies a double_buffer made) then have every fill
// of a buffer at the same copy index, so they are not renamed again, and applying the
// suggestion and analysing the patched run does not propose it again (counting per flag, or the
// waits before a fill, renamed an applied suggestion's buffers once more: a 3000x2000x1000 GEMM
// without prefetch got a second double_buffer at the same place).
void BufferRenamer::find_steps(std::uint32_t s) const {
    if (steps_.count(s)) return;
    const Stream& st = run_.streams[s];
    const std::vector<std::uint64_t>& sd = plan_.sync_and_dma(s);
    Steps& out = steps_[s];
    out.fill.assign(sd.size(), Steps::kNone);
    out.wait.assign(sd.size(), Steps::kNone);
    out.fill_class.assign(sd.size(), Steps::kNoClass);
    auto local_fill = [&](const Instruction& in) {
        return in.op == Opcode::Dma && in.has(kFlag) && flag_chip(in, st.chip) == st.chip && in.mem_dst.space == Space::Vmem &&
               (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == st.chip);
    };
    // Union-find over flags: the flags of one fill size are one class.
    std::map<std::uint16_t, std::uint16_t> parent;
    auto root = [&](std::uint16_t f) {
        while (parent.at(f) != f) f = parent[f] = parent.at(parent.at(f));
        return f;
    };
    std::map<std::uint64_t, std::uint16_t> size_flag;  // a flag of each size
    for (std::uint64_t j : sd) {
        const Instruction& in = st.code[j];
        if (!local_fill(in)) continue;
        parent.emplace(in.flag, in.flag);
        auto [it, fresh] = size_flag.emplace(in.bytes, in.flag);
        if (!fresh) parent[root(in.flag)] = root(it->second);
    }
    std::map<std::uint16_t, std::uint64_t> waits;  // per class: swaits so far
    std::vector<std::pair<std::size_t, std::uint64_t>> before;  // fill (position) -> its class's swaits before it
    for (std::size_t p = 0; p < sd.size(); ++p) {
        const std::uint64_t j = sd[p];
        const Instruction& in = st.code[j];
        if (!in.has(kFlag) || !parent.count(in.flag)) continue;
        std::uint64_t& n = waits[root(in.flag)];
        if (in.op == Opcode::SWait) {
            out.first_wait.emplace(std::make_pair(root(in.flag), n), j);
            out.wait[p] = n++;
            for (const Raiser& r : plan_.covered(s, j))  // the fills it is the first to wait for
                if (r.stream == s && local_fill(st.code[r.index])) {
                    const std::size_t q = position(s, r.index);  // a DMA: in sync_and_dma
                    if (out.fill[q] == Steps::kNone) out.fill[q] = out.wait[p];
                }
        } else if (local_fill(in)) {
            before.push_back({p, n});
        }
        if (local_fill(in)) out.fill_class[p] = root(in.flag);
    }
    for (const auto& [p, n] : before)  // never waited for: the waits before it
        if (out.fill[p] == Steps::kNone) out.fill[p] = n;
}

std::size_t BufferRenamer::position(std::uint32_t s, std::uint64_t j) const {
    const std::vector<std::uint64_t>& sd = plan_.sync_and_dma(s);
    const auto it = std::lower_bound(sd.begin(), sd.end(), j);
    return it != sd.end() && *it == j ? static_cast<std::size_t>(it - sd.begin()) : sd.size();
}

std::uint64_t BufferRenamer::step_of(std::uint32_t s, std::uint64_t k) const {
    find_steps(s);
    const Steps& st = steps_.at(s);
    const std::size_t p = position(s, k);
    return p == st.fill.size() || st.fill[p] == Steps::kNone ? 0 : st.fill[p];
}

std::uint64_t BufferRenamer::step_floor(std::uint32_t s, std::uint64_t k) const {
    find_steps(s);
    const Steps& st = steps_.at(s);
    const std::size_t p = position(s, k);
    if (p == st.fill.size() || st.fill[p] == Steps::kNone || st.fill_class[p] == Steps::kNoClass || st.fill[p] < kBufferCopies - 1) return 0;
    auto w = st.first_wait.find({static_cast<std::uint16_t>(st.fill_class[p]), 0});
    return w == st.first_wait.end() ? 0 : w->second + 1;
}

}  // namespace xpu::analysis
