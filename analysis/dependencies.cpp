#include "analysis/dependencies.h"

#include <algorithm>
#include <stdexcept>

namespace xpu::analysis {

int accesses(const Instruction& in, const Stream& st, Access out[2]) {
    auto of = [&](const MemRef& r, std::uint64_t len, bool write) {
        return Access{r.space, r.chip == kLocalChip ? st.chip : r.chip, r.space == Space::Vmem ? st.vmem : std::uint16_t(0),
                      r.addr, r.addr + len, write};
    };
    const std::uint64_t n = in.has(kBytes) ? in.bytes : 0;
    switch (in.op) {
        case Opcode::VLoad:
            if (!in.has(kMemSrc)) return 0;
            out[0] = of(in.mem_src, std::max<std::uint64_t>(n, 1), false);
            return 1;
        case Opcode::VStore:
            if (!in.has(kMemDst)) return 0;
            out[0] = of(in.mem_dst, std::max<std::uint64_t>(n, 1), true);
            return 1;
        case Opcode::Dma:
            if (!in.has(kMemSrc) || !in.has(kMemDst)) return 0;
            out[0] = of(in.mem_src, n, false);
            out[1] = of(in.mem_dst, n, true);
            return 2;
        default: return 0;
    }
}

bool conflict(const Access* a, int na, const Access* b, int nb) {
    for (int i = 0; i < na; ++i)
        for (int j = 0; j < nb; ++j)
            if ((a[i].write || b[j].write) && a[i].space == b[j].space && a[i].chip == b[j].chip &&
                a[i].vmem == b[j].vmem && a[i].lo < b[j].hi && b[j].lo < a[i].hi)
                return true;
    return false;
}

bool is_barrier_like(Opcode op) { return op == Opcode::SSet || op == Opcode::SAdd || op == Opcode::Barrier || op == Opcode::Halt; }

Planner::Planner(const Context& cx) : cx_(cx), run_(cx.run) {
    covered_at_.resize(run_.streams.size());
    sync_and_dma_.resize(run_.streams.size());
    for (std::uint32_t s = 0; s < run_.streams.size(); ++s) index_waits(s);
    // How each flag is counted, from the instructions that touch flags (in program order per
    // stream; a flag that several streams touch is not one_stream, whatever the interleaving).
    std::unordered_map<std::uint32_t, std::uint32_t> toucher;
    std::unordered_map<std::uint32_t, std::int64_t> raised;
    for (std::uint32_t s = 0; s < run_.streams.size(); ++s) {
        const Stream& st = run_.streams[s];
        for (std::uint64_t j : sync_and_dma_[s]) {
            const Instruction& in = st.code[j];
            if (!in.has(kFlag)) continue;
            const std::uint32_t key = (std::uint32_t(flag_chip(in, st.chip)) << 16) | in.flag;
            FlagCounting& c = counting_[key];
            auto who = toucher.emplace(key, s).first;
            if (who->second != s) c.one_stream = false;
            if (in.op == Opcode::Dma) {
                if (flag_increment(in) <= 0) c.monotone = false;
                if (flag_chip(in, st.chip) != st.chip) c.one_stream = false;
                raised[key] += flag_increment(in);
            } else if (in.op == Opcode::SWait) {
                const Cond cond = in.has(kCond) ? in.cond : Cond::Ge;
                if (cond != Cond::Ge && cond != Cond::Gt) c.monotone = false;
                if (cond != Cond::Ge || (in.has(kValue) ? in.value : 0) != raised[key]) c.waits_for_all = false;
            } else {
                c.monotone = false;  // sset, sadd
            }
        }
    }
}

const std::vector<Raiser>& Planner::covered(std::uint32_t s, std::uint64_t i) const {
    auto it = covered_at_[s].find(i);
    return it == covered_at_[s].end() ? none_ : covered_[it->second];
}

void Planner::Edited::set(std::uint64_t j, const Instruction& in) {
    if (Instruction* e = const_cast<Instruction*>(find(j))) {
        *e = in;
        return;
    }
    index_.push_back(j);
    in_.push_back(in);
    if (slot_.empty() && index_.size() < kDense) return;
    if (slot_.empty()) {  // the table, from now on
        slot_.assign(*std::max_element(index_.begin(), index_.end()) + 1, 0);
        for (std::size_t x = 0; x < index_.size(); ++x) slot_[index_[x]] = static_cast<std::uint32_t>(x + 1);
        return;
    }
    if (j >= slot_.size()) slot_.resize(std::max<std::uint64_t>(j + 1, slot_.size() * 2), 0);
    slot_[j] = static_cast<std::uint32_t>(index_.size());
}

const Instruction& Planner::Edited::at(std::uint64_t j) const {
    const Instruction* e = find(j);
    if (!e) throw std::out_of_range("Planner::Edited::at: instruction not edited");
    return *e;
}

bool Planner::raiser_accesses(const Raiser& r, Access out[2], int& n, const Edited* edited, std::uint32_t edited_stream) const {
    const Stream& st = run_.streams[r.stream];
    const Instruction* e = nullptr;
    if (edited && edited_stream == r.stream) e = edited->find(r.index);
    const Instruction& in = e ? *e : st.code[r.index];
    if (in.op != Opcode::Dma) return false;
    n = accesses(in, st, out);
    return true;
}

bool Planner::wait_blocks(std::uint32_t s, std::uint64_t w, const Access* acc, int na, const Edited* edited) const {
    for (const Raiser& r : covered(s, w)) {
        Access ra[2];
        int n = 0;
        if (!raiser_accesses(r, ra, n, edited, s)) return na > 0;
        if (conflict(ra, n, acc, na)) return true;
    }
    return false;
}

const FlagCounting& Planner::flag_counting(std::uint16_t chip, std::uint16_t flag) const {
    auto it = counting_.find((std::uint32_t(chip) << 16) | flag);
    return it == counting_.end() ? untouched_ : it->second;
}

std::uint64_t Planner::hoist_point(std::uint32_t s, std::uint64_t k) {
    const std::uint64_t key = (std::uint64_t(s) << 40) | k;
    auto it = hoist_cache_.find(key);
    if (it != hoist_cache_.end()) return it->second;
    const std::uint64_t p = scan_up(s, k, nullptr);
    hoist_cache_[key] = p;
    return p;
}

std::uint64_t Planner::hoist_point(std::uint32_t s, std::uint64_t k, const Edited& edited) const { return scan_up(s, k, &edited); }

std::uint64_t Planner::scan_up(std::uint32_t s, std::uint64_t k, const Edited* edited) const {
    const Stream& st = run_.streams[s];
    auto code = [&](std::uint64_t j) -> const Instruction& {
        if (edited && may_be_edited(st.code[j].op))
            if (const Instruction* e = edited->find(j)) return *e;
        return st.code[j];
    };
    const Instruction& d = code(k);
    Access acc[2];
    const int na = accesses(d, st, acc);
    const bool local_flag = d.has(kFlag) && (d.mem_dst.chip == kLocalChip || d.mem_dst.chip == st.chip);
    std::uint64_t p = k;
    const std::uint64_t limit = k > kScan ? k - kScan : 0;
    for (std::uint64_t j = k; j-- > limit;) {
        const Instruction& y = code(j);
        if (is_barrier_like(y.op)) break;
        if (y.op == Opcode::SWait) {
            if (local_flag && y.flag == d.flag) break;
            if (wait_blocks(s, j, acc, na, edited)) break;
        } else {
            Access ya[2];
            const int ny = accesses(y, st, ya);
            if (ny && conflict(ya, ny, acc, na)) break;
        }
        p = j;
    }
    return p;
}

std::pair<std::uint64_t, bool> Planner::sink_point(std::uint32_t s, std::uint64_t k) const {
    const Stream& st = run_.streams[s];
    const Instruction& w = st.code[k];
    const Cond cond = w.has(kCond) ? w.cond : Cond::Ge;
    std::vector<Access> racc;
    bool opaque = false;
    for (const Raiser& r : covered(s, k)) {
        Access ra[2];
        int n = 0;
        if (!raiser_accesses(r, ra, n)) opaque = true;
        racc.insert(racc.end(), ra, ra + n);
    }
    const std::uint64_t limit = std::min<std::uint64_t>(st.code.size(), k + kScan);
    for (std::uint64_t j = k + 1; j < limit; ++j) {
        const Instruction& y = st.code[j];
        if (y.op == Opcode::SWait) {
            if (y.flag == w.flag && (y.has(kCond) ? y.cond : Cond::Ge) == cond && (cond == Cond::Ge || cond == Cond::Gt) &&
                (y.has(kValue) ? y.value : 0) >= (w.has(kValue) ? w.value : 0))
                return {j, true};
            continue;
        }
        if (is_barrier_like(y.op)) return {j, false};
        if (y.op == Opcode::Dma && y.has(kFlag) && y.flag == w.flag) return {j, false};
        Access ya[2];
        const int ny = accesses(y, st, ya);
        if (ny && (opaque || conflict(racc.data(), static_cast<int>(racc.size()), ya, ny))) return {j, false};
    }
    return {limit, false};
}

void Planner::index_waits(std::uint32_t s) {
    const Stream& st = run_.streams[s];
    std::unordered_map<std::uint16_t, Tick> prev;  // flag -> issue of the previous swait on it
    std::vector<std::uint64_t>& marks = sync_and_dma_[s];
    bool seen = true;  // the run reached this far (waits beyond it cover nothing)
    for (std::uint64_t i = 0; i < st.code.size(); ++i) {
        const Instruction& in = st.code[i];
        if (in.op != Opcode::SWait && in.op != Opcode::Dma && !is_barrier_like(in.op)) continue;
        marks.push_back(i);
        seen = seen && st.life[i].seen;
        if (in.op != Opcode::SWait || !seen) continue;
        const std::uint16_t f = in.has(kFlag) ? in.flag : 0;
        const bool first = !prev.count(f);
        const Tick from = first ? 0 : prev[f];
        const Tick to = st.life[i].issue;
        prev[f] = to;
        std::vector<Raiser> rs;
        const auto& ch = cx_.ix.changes(st.chip, f);
        auto it = first ? ch.begin()
                        : std::upper_bound(ch.begin(), ch.end(), from, [&](Tick v, std::uint32_t c) { return v < run_.flags[c].time; });
        for (; it != ch.end() && run_.flags[*it].time <= to; ++it) {
            const FlagChange& fc = run_.flags[*it];
            if (fc.by_stream == kNone) continue;
            rs.push_back({fc.by_stream, fc.by_index, cx_.ix.dma_of(fc.by_stream, fc.by_index)});
        }
        covered_at_[s][i] = covered_.size();
        covered_.push_back(std::move(rs));
    }
}

}  // namespace xpu::analysis
