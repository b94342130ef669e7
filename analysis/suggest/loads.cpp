#include "analysis/suggest/loads.h"

#include "analysis/intervals.h"

#include <algorithm>
#include <stdexcept>

namespace xpu::analysis {

HbmLoad::HbmLoad(const RunData& run) {
    const SeriesAxis axis = hbm_load_axis(run.end);
    bucket_ = axis.bucket;
    const std::size_t n = axis.n;
    const HbmTraffic& folded = run.hbm_traffic;  // load_run spread the transactions as it read them
    if (folded.load_axis.n) {
        if (!(folded.load_axis == axis)) throw std::logic_error("the HBM transactions were folded for another end time than the run's");
        for (const auto& [chip, bytes] : folded.load_by_chip) chips_[chip].bytes = bytes;
    }
    for (const MemTxn& m : run.mems) {
        const Unit& u = run.units[m.target];
        if (u.role != Role::Hbm) continue;
        Chip& c = chips_[u.chip];
        if (c.bytes.empty()) c.bytes.assign(n + 1, 0.0);
        spread(c.bytes.data() + 1, n, bucket_, m.arrival, m.done, static_cast<double>(m.bytes));  // bucket k into k + 1
    }
    for (const Unit& u : run.units)
        if (u.role == Role::Hbm) chips_[u.chip].peak_per_ps += u.peak_gbps / 1000.0;
    for (auto& [chip, c] : chips_)
        for (std::size_t k = 1; k < c.bytes.size(); ++k) c.bytes[k] += c.bytes[k - 1];
}

Tick HbmLoad::transfer(int chip, std::uint64_t bytes) const {
    auto it = chips_.find(chip);
    if (it == chips_.end() || it->second.peak_per_ps <= 0) return 0;
    return static_cast<Tick>(static_cast<double>(bytes) / it->second.peak_per_ps);
}

Tick HbmLoad::idle(int chip, Tick a, Tick b) const {
    auto it = chips_.find(chip);
    if (b <= a || it == chips_.end() || it->second.peak_per_ps <= 0 || it->second.bytes.empty()) return b > a ? b - a : 0;
    const Chip& c = it->second;
    auto upto = [&](Tick t) {
        const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(t / bucket_), c.bytes.size() - 2);
        const double f = static_cast<double>(t - std::min<Tick>(t, k * bucket_)) / static_cast<double>(bucket_);
        return c.bytes[k] + std::min(1.0, f) * (c.bytes[k + 1] - c.bytes[k]);
    };
    const double busy = (upto(b) - upto(a)) / c.peak_per_ps;
    const double t = static_cast<double>(b - a) - busy;
    return t > 0 ? static_cast<Tick>(t) : 0;
}

EngineLoad::EngineLoad(const Analysis& a) {
    for (const UnitAccount& u : a.units) {
        if (u.role != Role::Dma) continue;
        auto& v = busy_[u.unit];
        for (const Segment& g : u.timeline)
            if (g.cause == Cause::Busy) v.push_back({g.begin, g.end});
    }
}

Tick EngineLoad::idle(std::uint32_t engine, Tick a, Tick b) const {
    if (b <= a) return 0;
    auto it = busy_.find(engine);
    return b - a - (it == busy_.end() ? 0 : covered(it->second, a, b));
}

UnitIdle::UnitIdle(const Analysis& a) {
    for (const UnitAccount& u : a.units)
        if (u.role != Role::Core) timeline_[u.unit] = &u.timeline;
}

Tick UnitIdle::idle(std::uint32_t unit, Tick a, Tick b) const {
    if (b <= a) return 0;
    auto it = timeline_.find(unit);
    if (it == timeline_.end()) return b - a;
    const std::vector<Segment>& v = *it->second;
    Tick busy = 0;
    auto k = std::upper_bound(v.begin(), v.end(), a, [](Tick t, const Segment& g) { return t < g.end; });
    for (; k != v.end() && k->begin < b; ++k)
        if (k->cause == Cause::Busy) busy += std::min(b, k->end) - std::max(a, k->begin);
    return b - a - busy;
}

LinkLoad::LinkLoad(const RunData& run) : run_(run) {
    for (const MemTxn& m : run.mems) {
        if (run.units[m.target].role != Role::Link) continue;
        auto& v = busy_[m.target];
        v.push_back({m.arrival, m.done});
        if (m.stream != kNone) {
            const auto key = (std::uint64_t(m.stream) << 40) | m.index;
            if (!first_link_.count(key)) first_link_[key] = m.target;
        }
    }
    for (auto& [u, v] : busy_) merge_intervals(v);
}

Tick LinkLoad::idle(std::uint32_t dma, Tick a, Tick b) const {
    if (b <= a) return 0;
    const Dma& d = run_.dmas[dma];
    auto f = first_link_.find((std::uint64_t(d.stream) << 40) | d.index);
    if (f == first_link_.end()) return b - a;
    return b - a - covered(busy_.at(f->second), a, b);
}

void StallingIssues::finish() {
    std::sort(v_.begin(), v_.end());
    prefix_.assign(v_.size() + 1, 0);
    for (std::size_t k = 0; k < v_.size(); ++k) prefix_[k + 1] = prefix_[k] + (v_[k].second ? 1 : 0);
}

std::uint64_t StallingIssues::count(Tick a, Tick b) const {
    if (b <= a) return 0;
    const auto lo = std::lower_bound(v_.begin(), v_.end(), std::make_pair(a, false)) - v_.begin();
    const auto hi = std::lower_bound(v_.begin(), v_.end(), std::make_pair(b, false)) - v_.begin();
    return prefix_[static_cast<std::size_t>(hi)] - prefix_[static_cast<std::size_t>(lo)];
}

EngineQueue::EngineQueue(const RunData& run, const std::vector<Tick>& caused) {
    for (std::uint32_t i = 0; i < run.dmas.size(); ++i) engine_[run.dmas[i].engine].add(run.dmas[i].issue, caused[i] > 0);
    for (auto& [e, q] : engine_) q.finish();
}

std::uint64_t EngineQueue::stalling_between(std::uint32_t engine, Tick a, Tick b) const {
    auto it = engine_.find(engine);
    return it == engine_.end() ? 0 : it->second.count(a, b);
}

ChipQueue::ChipQueue(const RunData& run, const std::vector<Tick>& caused) {
    for (std::uint32_t i = 0; i < run.dmas.size(); ++i) {
        const Dma& d = run.dmas[i];
        const Stream& ds = run.streams[d.stream];
        const Instruction& in = ds.code[d.index];
        if (in.mem_src.space != Space::Hbm && in.mem_dst.space != Space::Hbm) continue;
        chip_[ds.chip].add(d.issue, caused[i] > 0);
        engine_[(std::uint64_t(ds.chip) << 32) | d.engine].add(d.issue, caused[i] > 0);
    }
    for (auto& [k, q] : chip_) q.finish();
    for (auto& [k, q] : engine_) q.finish();
}

std::uint64_t ChipQueue::stalling_between(std::uint16_t chip, std::uint32_t except_engine, Tick a, Tick b) const {
    auto c = chip_.find(chip);
    if (c == chip_.end()) return 0;
    auto e = engine_.find((std::uint64_t(chip) << 32) | except_engine);
    return c->second.count(a, b) - (e == engine_.end() ? 0 : e->second.count(a, b));
}

DmaTiming::DmaTiming(const Context& cx) : run_(cx.run) {
    for (const Unit& u : run_.units)
        if (u.role == Role::Link && u.peak_gbps > 0) link_gbps_ = link_gbps_ > 0 ? std::min(link_gbps_, u.peak_gbps) : u.peak_gbps;
    Tick fixed = ~Tick(0);
    for (const Dma& d : run_.dmas) {
        const Stream& ds = run_.streams[d.stream];
        const Tick w = wire(d, cx.ix.dma_remote(ds.code[d.index], ds.chip));
        fixed = std::min(fixed, d.complete - d.issue - std::min(d.complete - d.issue, w));
    }
    fixed_ = fixed == ~Tick(0) ? 0 : fixed;
}

Tick DmaTiming::wire(const Dma& d, bool remote) const {
    double gbps = run_.units[d.engine].peak_gbps;
    if (remote && link_gbps_ > 0) gbps = gbps > 0 ? std::min(gbps, link_gbps_) : link_gbps_;
    return gbps > 0 ? static_cast<Tick>(static_cast<double>(d.bytes) * 1000.0 / gbps) : Tick(0);
}

}  // namespace xpu::analysis
