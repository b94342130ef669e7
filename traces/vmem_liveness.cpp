#include "traces/vmem_liveness.h"

#include <algorithm>
#include <limits>

#include "traces/mostly_sorted.h"

namespace xpu::trace {

namespace {

bool local_vmem(const Instruction& in, Field f, const MemRef& r, std::uint16_t chip) {
    return in.has(f) && r.space == Space::Vmem && (r.chip == kLocalChip || (chip != kLocalChip && r.chip == chip));
}

std::uint64_t end_of(std::uint64_t addr, std::uint64_t bytes) {
    return bytes > std::numeric_limits<std::uint64_t>::max() - addr ? std::numeric_limits<std::uint64_t>::max()
                                                                      : addr + bytes;
}

}  // namespace

VmemAccess vmem_access(const Instruction& in, std::uint16_t chip) {
    VmemAccess a;
    if (!in.has(kBytes) || in.bytes == 0) return a;
    switch (in.op) {
        case Opcode::VLoad: a.reads = local_vmem(in, kMemSrc, in.mem_src, chip); break;
        case Opcode::VStore: a.writes = local_vmem(in, kMemDst, in.mem_dst, chip); break;
        case Opcode::Dma:
            a.reads = local_vmem(in, kMemSrc, in.mem_src, chip);
            a.writes = local_vmem(in, kMemDst, in.mem_dst, chip);
            a.reduces = a.writes && in.has(kDtype);
            break;
        default: break;
    }
    if (a.reads) a.read_addr = in.mem_src.addr, a.read_bytes = in.bytes;
    if (a.writes) a.write_addr = in.mem_dst.addr, a.write_bytes = in.bytes;
    return a;
}

VmemLiveness::Map::iterator VmemLiveness::split(std::uint64_t at) { return split_at(map_.lower_bound(at), at); }

VmemLiveness::Map::iterator VmemLiveness::split_from(Map::iterator from, std::uint64_t at) {
    while (from != map_.end() && from->first < at) ++from;
    return split_at(from, at);
}

VmemLiveness::Map::iterator VmemLiveness::split_at(Map::iterator it, std::uint64_t at) {
    if (it != map_.end() && it->first == at) return it;
    if (it == map_.begin()) return it;
    auto prev = std::prev(it);
    if (prev->second.end <= at) return it;
    Seg tail = prev->second;   // prev covers `at`: cut it in two
    prev->second.end = at;
    return map_.emplace_hint(it, at, tail);
}

void VmemLiveness::close(Map::iterator it) {
    const Seg& s = it->second;
    out_.push_back({it->first, s.end - it->first, s.writer, s.last_reader, s.read});
    live_ -= s.end - it->first;
}

void VmemLiveness::coalesce(std::uint64_t at) { coalesce(map_.find(at)); }

void VmemLiveness::coalesce(Map::iterator it) {
    if (it == map_.end() || it == map_.begin()) return;
    auto prev = std::prev(it);
    const Seg &p = prev->second, &s = it->second;
    if (p.end == it->first && p.writer == s.writer && p.last_reader == s.last_reader && p.read == s.read) {
        prev->second.end = s.end;
        map_.erase(it);
    }
}

// (read and write keep the iterators split returns: map iterators survive insertions, and
// each coalesce erases only the node it is given, so no search is repeated; b is found by
// walking from a, over the segments the loop visits anyway.)
void VmemLiveness::read(std::uint64_t a, std::uint64_t b, std::uint64_t index) {
    const auto first = split(a);
    const auto last = split_from(first, b);
    starts_.clear();
    for (auto it = first; it != last; ++it) {
        it->second.last_reader = index;
        it->second.read = true;
        starts_.push_back(it);
    }
    // Pieces of one write read by this instruction are alike again: merge them (and the
    // neighbours outside [a, b) if they match).
    if (last != map_.end() && last->first == b) coalesce(last);
    for (auto s = starts_.rbegin(); s != starts_.rend(); ++s) coalesce(*s);
}

void VmemLiveness::write(std::uint64_t a, std::uint64_t b, std::uint64_t index) {
    auto it = split(a);
    const auto last = split_from(it, b);
    while (it != last) {
        close(it);
        it = map_.erase(it);
    }
    map_.emplace_hint(it, a, Seg{b, index, index, false});
    live_ += b - a;
}

void VmemLiveness::reduce(std::uint64_t a, std::uint64_t b, std::uint64_t index) {
    auto it = split(a);
    split_from(it, b);
    std::vector<Map::iterator>& starts = starts_;
    starts.clear();
    std::uint64_t at = a;
    while (at < b) {
        if (it == map_.end() || it->first >= b || it->first > at) {  // a gap: bytes nobody wrote
            const std::uint64_t gap_end = (it == map_.end() || it->first >= b) ? b : it->first;
            it = map_.emplace_hint(it, at, Seg{gap_end, index, index, false});
            live_ += gap_end - at;
        } else {
            it->second.last_reader = index;
            it->second.read = true;
        }
        starts.push_back(it);
        at = it->second.end;
        ++it;
    }
    coalesce(b);
    for (auto s = starts.rbegin(); s != starts.rend(); ++s) coalesce(*s);
}

void VmemLiveness::add(std::uint64_t index, const Instruction& in) {
    const VmemAccess acc = vmem_access(in, chip_);
    if (acc.reads) read(acc.read_addr, end_of(acc.read_addr, acc.read_bytes), index);
    if (acc.writes) {
        const std::uint64_t a = acc.write_addr, b = end_of(acc.write_addr, acc.write_bytes);
        if (acc.reduces) reduce(a, b, index);
        else write(a, b, index);
    }
}

std::vector<VmemLive> VmemLiveness::finish() {
    for (auto it = map_.begin(); it != map_.end(); ++it) close(it);
    map_.clear();
    live_ = 0;
    // (Closed ranges come nearly in writer order.)
    sort_mostly_sorted(out_, [](const VmemLive& x, const VmemLive& y) {
        return x.writer != y.writer ? x.writer < y.writer : x.addr < y.addr;
    });
    std::size_t n = 0;  // merge in place
    for (const VmemLive& l : out_) {
        if (n) {
            VmemLive& p = out_[n - 1];
            if (p.writer == l.writer && p.last_reader == l.last_reader && p.read == l.read && p.addr + p.bytes == l.addr) {
                p.bytes += l.bytes;
                continue;
            }
        }
        out_[n++] = l;
    }
    out_.resize(n);
    std::vector<VmemLive> r;
    r.swap(out_);
    r.shrink_to_fit();  // merged and grown by doubling: up to twice its size (held by the analysis)
    return r;
}

void VmemLiveness::take_closed(std::vector<VmemLive>& into) {
    into.insert(into.end(), out_.begin(), out_.end());
    out_.clear();
}

std::uint64_t VmemLiveness::oldest_index() const {
    std::uint64_t m = std::numeric_limits<std::uint64_t>::max();
    for (const auto& [a, seg] : map_) m = std::min(m, seg.writer);  // writer <= last_reader
    return m;
}

std::vector<VmemLive> vmem_liveness(const std::vector<Instruction>& stream, std::uint16_t chip) {
    VmemLiveness l(chip);
    for (std::size_t i = 0; i < stream.size(); ++i) l.add(i, stream[i]);
    return l.finish();
}

}  // namespace xpu::trace
