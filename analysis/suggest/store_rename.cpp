#include "analysis/suggest/store_rename.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <unordered_map>

#include "analysis/suggest/finder.h"

namespace xpu::analysis {

namespace {

constexpr std::uint64_t kAlign = 4096;

std::uint64_t align_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

bool local_vmem(const MemRef& r, std::uint16_t chip) { return r.space == Space::Vmem && (r.chip == kLocalChip || r.chip == chip); }

// A write-back: a DMA from the stream's own VMEM to its own chip's HBM, raising a flag of its chip.
bool is_write_back(const Instruction& in, std::uint16_t chip) {
    return in.op == Opcode::Dma && in.has(kMemSrc) && in.has(kMemDst) && in.has(kFlag) && local_vmem(in.mem_src, chip) &&
           in.mem_dst.space == Space::Hbm && (in.mem_dst.chip == kLocalChip || in.mem_dst.chip == chip);
}

// An instruction nothing in flight may be left past: a sset, sadd, barrier or halt (another
// core or chip may act on what it signals), or a DMA leaving the chip or raising another
// chip's flag (the same: a signal we cannot follow).
bool is_fence(const Instruction& in, std::uint16_t chip) {
    if (is_barrier_like(in.op)) return true;
    if (in.op != Opcode::Dma) return false;
    const bool remote_dst = in.mem_dst.chip != kLocalChip && in.mem_dst.chip != chip;
    return remote_dst || (in.has(kFlag) && flag_chip(in, chip) != chip);
}

// Per byte range of a buffer, the generation that last wrote it.
class Writers {
public:
    void assign(std::uint64_t a, std::uint64_t e, std::size_t g) {
        split(a);
        split(e);
        r_.erase(r_.lower_bound(a), r_.lower_bound(e));
        r_[a] = {e, g};
    }
    // f(generation, true) for each written piece of [a, e), f(0, false) for each gap.
    template <typename F>
    void for_each(std::uint64_t a, std::uint64_t e, F f) const {
        auto it = r_.upper_bound(a);
        if (it != r_.begin() && std::prev(it)->second.first > a) --it;
        std::uint64_t at = a;
        for (; it != r_.end() && it->first < e; ++it) {
            if (it->first > at) f(0, false);
            f(it->second.second, true);
            at = it->second.first;
        }
        if (at < e) f(0, false);
    }

private:
    std::map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> r_;  // lo -> (hi, generation)
    void split(std::uint64_t x) {  // a piece boundary at x
        auto it = r_.upper_bound(x);
        if (it == r_.begin()) return;
        --it;
        if (it->first < x && it->second.first > x) {
            r_[x] = {it->second.first, it->second.second};
            it->second.first = x;
        }
    }
};

// The plan of one flag on one stream (store_rename.h).
class StreamStorePlan {
public:
    // `base`: a plan this one goes on top of (prefetch_ahead's: its loads moved up, renamed and
    // recounted), or null; `vmem_from`: where its copies may start (at least the top of what the
    // chip uses).
    StreamStorePlan(const SuggestContext& sc, std::uint32_t s, std::uint16_t flag, const BufferRenamer::Room& room,
                    std::vector<std::uint16_t> free_flags, const Suggestion* base, std::uint64_t vmem_from)
        : sc_(sc), s_(s), st_(sc.run.streams[s]), flag_(flag), room_(room), free_flags_(std::move(free_flags)), vmem_from_(vmem_from) {
        if (base) {
            for (const Edit& e : base->edits)
                if (e.stream == s_) base_edits_.emplace(e.index, &e);
            for (const Move& m : base->moves)
                if (m.stream == s_) base_moves_.push_back(m);
        }
    }

    // False when the flag is not a write-back flag of this kind, or nothing would change.
    bool run(StoreRenamePlan& out) {
        if (!qualifies()) return false;
        lay_out();
        find_generations();
        rename_buffers(out);
        place_flags();
        if (!plan_waits(out)) return false;
        // The base's edits, with this plan's changes where both rewrite an instruction.
        for (const auto& [j, e] : base_edits_) edits_.try_emplace(j, *e);
        for (auto& [j, e] : edits_)
            if (e.in != st_.code[j] || !e.then.empty()) out.s.edits.push_back(std::move(e));  // a wait left as it was is no edit
        out.s.moves.insert(out.s.moves.end(), base_moves_.begin(), base_moves_.end());
        return true;
    }

private:
    const SuggestContext& sc_;
    const std::uint32_t s_;
    const Stream& st_;
    const std::uint16_t flag_;
    const BufferRenamer::Room room_;
    std::vector<std::uint16_t> free_flags_;  // flags the chip never names
    std::vector<std::uint64_t> waits_;       // the flag's swaits, program order
    std::vector<std::uint64_t> write_backs_; // the flag's DMAs, program order
    std::vector<unsigned> slot_;             // per generation (waits_.size() + 1 of them)
    std::uint16_t flag_of_[kStoreCopies] = {};
    const std::uint64_t vmem_from_;
    std::map<std::uint64_t, Edit> edits_;
    std::unordered_map<std::uint64_t, const Edit*> base_edits_;
    std::vector<Move> base_moves_;
    // The program this plan rewrites (the original, or the base's): the original's indices in
    // its order, each one's generation, and where each wait of the flag is in it.
    std::vector<std::uint64_t> order_;
    std::vector<std::uint32_t> gen_;
    std::vector<std::size_t> wait_at_;
    std::vector<bool> refills_;  // per generation: does it write a staging buffer (a reuse of it)?

    // The program's order: the base's moved instructions go in front of the index they move
    // before (in rank order, then program order), as write_patched_trace puts them.
    void lay_out() {
        const std::uint64_t n = st_.code.size();
        std::vector<bool> gone(n, false);
        std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> before;  // at -> (rank, from)
        for (const Move& m : base_moves_) {
            if (gone[m.from]) continue;
            gone[m.from] = true;
            if (m.before != Move::kDelete) before[m.before].push_back({m.rank, m.from});
        }
        for (auto& [at, v] : before) std::sort(v.begin(), v.end());
        order_.reserve(n);
        auto b = before.begin();
        for (std::uint64_t i = 0; i <= n; ++i) {
            if (b != before.end() && b->first == i) {
                for (const auto& [rank, from] : b->second) order_.push_back(from);
                ++b;
            }
            if (i < n && !gone[i]) order_.push_back(i);
        }
        gen_.assign(n, 0);
        std::uint32_t g = 0;
        for (std::size_t p = 0; p < order_.size(); ++p) {
            const std::uint64_t j = order_[p];
            if (g < waits_.size() && j == waits_[g]) {  // the flag's waits do not move (the base moves loads)
                wait_at_.push_back(p);
                gen_[j] = ++g;
            } else {
                gen_[j] = g;
            }
        }
    }
    // The generation of instruction j: the waits of the flag before it (a wait: the one it opens).
    std::size_t generation(std::uint64_t j) const { return gen_[j]; }
    // Instruction j as the program this plan rewrites has it.
    const Instruction& view(std::uint64_t j) const {
        auto it = base_edits_.find(j);
        return it == base_edits_.end() ? st_.code[j] : it->second->in;
    }
    Edit& edit(std::uint64_t j) {
        auto [it, fresh] = edits_.try_emplace(j);
        if (fresh) {
            auto b = base_edits_.find(j);
            it->second = b == base_edits_.end() ? Edit{s_, j, st_.code[j], {}} : *b->second;
        }
        return it->second;
    }
    const Instruction& current(std::uint64_t j) const {
        auto it = edits_.find(j);
        return it == edits_.end() ? view(j) : it->second.in;
    }

    // The flag is counted the plain way, only waits and this stream's write-backs name it, and
    // it has at least two waits, one of them stalled.
    bool qualifies() {
        if (!room_.one_stream || free_flags_.size() + 1 < kStoreCopies) return false;
        const FlagCounting& c = sc_.plan.flag_counting(st_.chip, flag_);
        if (!c.monotone || !c.one_stream || !c.waits_for_all) return false;
        for (std::uint64_t j : sc_.plan.sync_and_dma(s_)) {
            const Instruction& in = st_.code[j];
            if (!in.has(kFlag) || in.flag != flag_) continue;
            if (in.op == Opcode::SWait) {
                if (in.cond != Cond::Ge) return false;
                waits_.push_back(j);
            } else if (is_write_back(in, st_.chip)) {
                write_backs_.push_back(j);
            } else if (in.op != Opcode::Dma || flag_chip(in, st_.chip) == st_.chip) {
                return false;  // a sset, sadd, barrier or a load on it: not a write-back flag
            }
        }
        if (waits_.size() < 2 || write_backs_.size() < 2) return false;
        for (const std::vector<std::uint64_t>* v : {&waits_, &write_backs_})  // the base leaves them as they are
            for (std::uint64_t j : *v)
                if (base_edits_.count(j)) return false;
        for (const Move& m : base_moves_)
            if (std::binary_search(waits_.begin(), waits_.end(), m.from) ||
                std::binary_search(write_backs_.begin(), write_backs_.end(), m.from))
                return false;
        for (const WaitStall& w : sc_.cx.waits)
            if (w.stream == s_ && w.stall > 0 && std::binary_search(waits_.begin(), waits_.end(), w.index)) return true;
        return false;
    }

    // Each generation's slot: generations with write-backs take slots in turn; one without
    // takes the slot of the next one with.
    void find_generations() {
        std::vector<bool> has(waits_.size() + 1, false);
        for (std::uint64_t k : write_backs_) has[generation(k)] = true;
        slot_.assign(has.size(), 0);
        std::uint64_t seen = 0;
        for (std::size_t g = 0; g < has.size(); ++g) {
            slot_[g] = static_cast<unsigned>(seen % kStoreCopies);
            seen += has[g];
        }
    }

    // The staging buffers (the write-backs' sources, merged where they overlap or touch), each
    // renamed per generation where the data-flow rule holds and the VMEM has room.
    void rename_buffers(StoreRenamePlan& out) {
        std::vector<Buffer> buffers;
        {
            std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
            for (std::uint64_t k : write_backs_) {
                const Instruction& in = st_.code[k];
                if (in.bytes) ranges.push_back({in.mem_src.addr, in.mem_src.addr + in.bytes});
            }
            std::sort(ranges.begin(), ranges.end());
            for (const auto& r : ranges) {
                if (!buffers.empty() && r.first <= buffers.back().hi) buffers.back().hi = std::max(buffers.back().hi, r.second);
                else {
                    buffers.emplace_back();
                    buffers.back().lo = r.first;
                    buffers.back().hi = r.second;
                }
            }
        }
        if (buffers.empty()) return;
        other_streams_clear(buffers);
        // One pass over the stream: each access to a buffer, followed by the buffer's data flow
        // (which generation wrote the bytes each read reads), and remembered (the renaming below
        // rewrites them).
        std::vector<std::pair<std::uint64_t, std::size_t>> uses;  // (instruction, buffer)
        const std::size_t gens = waits_.size() + 1;
        for (Buffer& b : buffers) b.joined.assign(gens, false);
        refills_.assign(gens, false);
        for (std::uint64_t j : order_) {
            const Instruction& in = view(j);
            if (in.op != Opcode::VLoad && in.op != Opcode::VStore && in.op != Opcode::Dma) continue;
            const std::uint64_t n = std::max<std::uint64_t>(in.has(kBytes) ? in.bytes : 0, 1);
            const bool rd = (in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc) && local_vmem(in.mem_src, st_.chip);
            const bool wr = (in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst) && local_vmem(in.mem_dst, st_.chip);
            for (int f = 0; f < 2; ++f) {
                if (f == 0 ? !rd : !wr) continue;
                const std::uint64_t a = f == 0 ? in.mem_src.addr : in.mem_dst.addr, e = a + n;
                // The buffers it overlaps: from the last one starting at or below it.
                auto it = std::upper_bound(buffers.begin(), buffers.end(), a, [](std::uint64_t x, const Buffer& b) { return x < b.lo; });
                if (it != buffers.begin()) --it;
                for (; it != buffers.end() && it->lo < e; ++it) {
                    if (it->hi <= a) continue;
                    Buffer& b = *it;
                    const std::size_t i = static_cast<std::size_t>(it - buffers.begin());
                    if (uses.empty() || uses.back() != std::make_pair(j, i)) uses.push_back({j, i});
                    if (f == 1) refills_[generation(j)] = true;
                    if (!b.ok) continue;
                    if (a < b.lo || e > b.hi) {  // straddles it
                        b.ok = false;
                        continue;
                    }
                    const std::size_t g = generation(j);
                    if (f == 0) b.read(a, e, g);
                    else b.writer.assign(a, e, g);
                }
            }
        }
        // Each run of joined generations takes one copy: the slot of its first generation with
        // write-backs from the buffer (none: copy 0, it is not staging there, nothing to move);
        // a run that reads bytes nothing wrote before stays in copy 0.
        for (std::uint64_t k : write_backs_) {  // the generations whose write-backs read each buffer
            const std::uint64_t a = st_.code[k].mem_src.addr;
            auto it = std::upper_bound(buffers.begin(), buffers.end(), a, [](std::uint64_t x, const Buffer& b) { return x < b.lo; });
            if (it != buffers.begin() && std::prev(it)->hi > a) std::prev(it)->wb.insert(generation(k));
        }
        for (Buffer& b : buffers) {
            b.copy_of.assign(gens, 0);
            for (std::size_t g = 0; g < gens;) {
                std::size_t end = g + 1;
                while (end < gens && b.joined[end]) ++end;
                unsigned c = 0;
                if (!b.pinned_run(g, end))
                    for (std::size_t h = g; h < end; ++h)
                        if (b.wb.count(h)) {
                            c = slot_[h];
                            break;
                        }
                for (std::size_t h = g; h < end; ++h) b.copy_of[h] = c;
                g = end;
            }
        }

        // Room for the copies, first come first served.
        const std::uint64_t start = align_up(std::max(room_.free_lo, vmem_from_));
        std::uint64_t next = start;
        for (Buffer& b : buffers) {
            if (std::all_of(b.copy_of.begin(), b.copy_of.end(), [](unsigned c) { return c == 0; })) b.ok = false;  // nothing moves
            if (!b.ok) continue;
            std::uint64_t at = next;
            for (unsigned c = 1; c < kStoreCopies; ++c) {
                b.copy[c] = at;
                at = align_up(at + (b.hi - b.lo));
            }
            if (at > room_.free_hi) {  // no room: the waits keep its order
                b.ok = false;
                continue;
            }
            b.copy[0] = b.lo;
            next = at;
            ++out.buffers;
            out.buffer_bytes += b.hi - b.lo;
        }
        out.vmem_bytes = std::max(out.vmem_bytes, next - start);
        for (const auto& [j, i] : uses) {
            const Buffer& b = buffers[i];
            const unsigned c = b.copy_of[generation(j)];
            if (!b.ok || c == 0) continue;
            const Instruction& in = view(j);
            Edit& e = edit(j);
            auto move = [&](MemRef& r) {
                if (local_vmem(r, st_.chip) && r.addr >= b.lo && r.addr < b.hi) r.addr = r.addr - b.lo + b.copy[c];
            };
            if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc)) move(e.in.mem_src);
            if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst)) move(e.in.mem_dst);
        }
    }
    struct Buffer {
        std::uint64_t lo = 0, hi = 0;
        bool ok = true;  // every access inside it
        Writers writer;  // per byte: the generation that last wrote it
        // joined[g]: generation g reads what g - 1 (or one before) wrote, so they share a copy;
        // pinned: the runs that read bytes nothing wrote before (they keep copy 0).
        std::vector<bool> joined;
        std::set<std::size_t> pinned;
        std::set<std::size_t> wb;       // generations with write-backs from it
        std::vector<unsigned> copy_of;  // per generation
        std::uint64_t copy[kStoreCopies] = {};
        void read(std::uint64_t a, std::uint64_t e, std::size_t g) {
            writer.for_each(a, e, [&](std::size_t w, bool written) {
                if (!written) pinned.insert(g);
                for (std::size_t h = w + 1; written && h <= g; ++h) joined[h] = true;
            });
        }
        bool pinned_run(std::size_t g, std::size_t end) const {
            auto it = pinned.lower_bound(g);
            return it != pinned.end() && *it < end;
        }
    };
    // No other stream's DMA touches a buffer (else it is not renamed).
    void other_streams_clear(std::vector<Buffer>& buffers) const {
        for (std::uint32_t o = 0; o < sc_.run.streams.size(); ++o) {
            if (o == s_) continue;
            for (std::uint64_t j : sc_.plan.sync_and_dma(o)) {
                const Instruction& in = sc_.run.streams[o].code[j];
                if (in.op != Opcode::Dma) continue;
                for (const MemRef* r : {&in.mem_src, &in.mem_dst})
                    if (r->space == Space::Vmem && r->chip == st_.chip)
                        for (Buffer& b : buffers)
                            if (r->addr < b.hi && b.lo < r->addr + in.bytes) b.ok = false;
            }
        }
    }

    // Slot c's write-backs raise flag_of_[c] (slot 0: the flag itself).
    void place_flags() {
        flag_of_[0] = flag_;
        for (unsigned c = 1; c < kStoreCopies; ++c) flag_of_[c] = free_flags_[c - 1];
        for (std::uint64_t k : write_backs_) {
            const unsigned c = slot_[generation(k)];
            if (c != 0) edit(k).in.flag = flag_of_[c];
        }
    }

    // The waits (the legality rule of store_rename.h) and the estimate. False when no stalled
    // wait waits for less.
    bool plan_waits(StoreRenamePlan& out) {
        std::map<std::uint64_t, Tick> stalled;  // wait -> its stall
        for (const WaitStall& w : sc_.cx.waits)
            if (w.stream == s_ && w.stall > 0) stalled.emplace(w.index, w.stall);
        std::vector<std::uint64_t> pending[kStoreCopies];  // per slot: write-backs not waited for yet
        std::int64_t issued[kStoreCopies] = {};
        std::size_t next_wb = 0;
        Tick saving = 0;
        for (std::size_t i = 0; i < waits_.size(); ++i) {
            const std::uint64_t w = waits_[i];
            for (; next_wb < write_backs_.size() && write_backs_[next_wb] < w; ++next_wb) {
                const unsigned c = slot_[generation(write_backs_[next_wb])];
                pending[c].push_back(write_backs_[next_wb]);
                issued[c] += flag_increment(st_.code[write_backs_[next_wb]]);
            }
            const unsigned mine = slot_[i + 1];  // the generation this wait opens
            // Which other slots' write-backs must be waited for here.
            bool must[kStoreCopies] = {};
            // The last wait, and a wait whose generation writes no staging buffer (it waits for
            // another reason: a reader of the results, or none), wait for every write-back.
            if (i + 1 == waits_.size() || !refills_[i + 1]) {
                for (unsigned c = 0; c < kStoreCopies; ++c) must[c] = !pending[c].empty();
            } else {
                deferral_conflicts(wait_at_[i], wait_at_[i + 1], pending, must);
            }
            must[mine] = true;
            Tick latest = 0;
            bool known = true;
            Instruction main = st_.code[w];
            main.flag = flag_of_[mine];
            main.cond = Cond::Ge;
            main.value = issued[mine];
            Edit& e = edit(w);
            e.in = main;
            e.then.clear();
            bool full = true;
            for (unsigned c = 0; c < kStoreCopies; ++c) {
                if (!must[c]) {
                    full = full && pending[c].empty();
                    continue;
                }
                for (std::uint64_t k : pending[c]) {
                    const std::uint32_t d = sc_.cx.ix.dma_of(s_, k);
                    if (d == kNone) known = false;
                    else latest = std::max(latest, sc_.run.dmas[d].complete);
                }
                pending[c].clear();
                if (c == mine) continue;
                Instruction more = main;
                more.flag = flag_of_[c];
                more.value = issued[c];
                e.then.push_back(more);
            }
            out.full_waits += full;
            auto it = stalled.find(w);
            if (it == stalled.end() || !known || !st_.life[w].seen) continue;
            const Tick issue = st_.life[w].issue, ready = issue - it->second;
            const Tick now = std::max(ready, latest);
            if (now >= issue) continue;
            const Tick t = std::min(issue - now, sc_.hbm.idle(st_.chip, now, issue));
            if (t == 0) continue;
            saving += t;
            ++out.waits;
            out.wait_ops.insert(sc_.run.annotation(st_.code[w]));
        }
        if (saving == 0) return false;
        out.saving_on[s_] += saving;
        for (std::uint64_t k : write_backs_) out.dma_ops.insert(sc_.run.annotation(st_.code[k]));
        std::set<std::size_t> gens;
        for (std::uint64_t k : write_backs_) gens.insert(generation(k));
        out.generations += gens.size();
        return true;
    }

    // For each slot with write-backs in flight at the wait at position `w` of the program: must
    // they be waited for there, since something before the next wait (at `next`) conflicts with
    // one of them (its renamed accesses), or is a fence?
    void deferral_conflicts(std::size_t w, std::size_t next, const std::vector<std::uint64_t> (&pending)[kStoreCopies],
                            bool (&must)[kStoreCopies]) const {
        std::vector<std::pair<unsigned, Access>> flight;  // (slot, access)
        for (unsigned c = 0; c < kStoreCopies; ++c)
            for (std::uint64_t k : pending[c]) {
                Access a[2];
                const int n = accesses(current(k), st_, a);
                for (int x = 0; x < n; ++x) flight.push_back({c, a[x]});
            }
        if (flight.empty()) return;
        for (std::size_t p = w + 1; p < next; ++p) {
            const std::uint64_t j = order_[p];
            const Instruction& orig = st_.code[j];
            if (orig.op != Opcode::VLoad && orig.op != Opcode::VStore && orig.op != Opcode::Dma && !is_barrier_like(orig.op)) continue;
            const Instruction& in = current(j);
            if (is_fence(in, st_.chip)) {
                for (unsigned c = 0; c < kStoreCopies; ++c) must[c] = must[c] || !pending[c].empty();
                return;
            }
            Access a[2];
            const int n = accesses(in, st_, a);
            for (const auto& [c, f] : flight)
                if (!must[c] && conflict(a, n, &f, 1)) must[c] = true;
        }
    }
};

}  // namespace

std::vector<StoreRenamePlan> plan_store_renames(const SuggestContext& sc, const Suggestion* base, std::uint64_t reserve, int only_flag) {
    // Per chip: the flags its program names (the copies' flags are ones it does not).
    std::map<std::uint16_t, std::vector<bool>> named;
    for (std::uint32_t s = 0; s < sc.run.streams.size(); ++s) {
        const std::uint16_t chip = sc.run.streams[s].chip;
        if (sc.renamer.room(chip).flags && !named.count(chip)) named.emplace(chip, sc.renamer.named_flags(chip));
    }
    // Per flag id: the streams whose write-backs raise it.
    std::map<std::uint16_t, std::set<std::uint32_t>> candidates;
    for (std::uint32_t s = 0; s < sc.run.streams.size(); ++s) {
        const Stream& st = sc.run.streams[s];
        for (std::uint64_t j : sc.plan.sync_and_dma(s)) {
            const Instruction& in = st.code[j];
            if (in.has(kFlag) && is_write_back(in, st.chip)) candidates[in.flag].insert(s);
        }
    }
    // The base's flags are taken too.
    if (base)
        for (const Edit& e : base->edits) {
            auto it = named.find(sc.run.streams[e.stream].chip);
            if (it == named.end()) continue;
            if (e.in.has(kFlag) && e.in.flag < it->second.size()) it->second[e.in.flag] = true;
            for (const Instruction& more : e.then)
                if (more.has(kFlag) && more.flag < it->second.size()) it->second[more.flag] = true;
        }
    std::vector<StoreRenamePlan> out;
    for (const auto& [flag, streams] : candidates) {
        if (only_flag >= 0 && flag != only_flag) continue;
        StoreRenamePlan p;
        p.flag = flag;
        bool any = false;
        for (std::uint32_t s : streams) {
            const Stream& st = sc.run.streams[s];
            const BufferRenamer::Room room = sc.renamer.room(st.chip);
            auto it = named.find(st.chip);
            if (it == named.end() || room.free_hi <= room.free_lo) continue;
            std::vector<std::uint16_t> free;
            for (std::size_t f = 0; f < it->second.size() && free.size() + 1 < kStoreCopies; ++f)
                if (!it->second[f]) free.push_back(static_cast<std::uint16_t>(f));
            StoreRenamePlan one;
            // With a base, the copies go in the top `reserve` bytes (the base's buffers are below).
            const std::uint64_t from = base && room.free_hi > reserve ? room.free_hi - reserve : 0;
            if (base && !from) continue;
            if (!StreamStorePlan(sc, s, flag, room, std::move(free), base, from).run(one)) continue;
            any = true;
            p.s.edits.insert(p.s.edits.end(), std::make_move_iterator(one.s.edits.begin()), std::make_move_iterator(one.s.edits.end()));
            p.s.moves.insert(p.s.moves.end(), one.s.moves.begin(), one.s.moves.end());
            for (const auto& [stream, t] : one.saving_on) p.saving_on[stream] += t;
            p.wait_ops.insert(one.wait_ops.begin(), one.wait_ops.end());
            p.dma_ops.insert(one.dma_ops.begin(), one.dma_ops.end());
            p.waits += one.waits;
            p.full_waits += one.full_waits;
            p.buffers += one.buffers;
            p.buffer_bytes = std::max(p.buffer_bytes, one.buffer_bytes);
            p.generations += one.generations;
            p.vmem_bytes = std::max(p.vmem_bytes, one.vmem_bytes);
        }
        if (!any) continue;
        if (base) {  // the base's changes to the streams without a plan, as they are
            std::set<std::uint32_t> planned;
            for (const auto& [stream, t] : p.saving_on) planned.insert(stream);
            for (const Edit& e : base->edits)
                if (!planned.count(e.stream)) p.s.edits.push_back(e);
            for (const Move& m : base->moves)
                if (!planned.count(m.stream)) p.s.moves.push_back(m);
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace xpu::analysis
