// What the suggestions' estimates bound a gain by, from the run's own timing: the idle time of
// the HBM, of each DMA engine, unit and inter-chip link, the DMAs queued on each engine and
// chip that a core waited for, and the shortest time a DMA can take. Built once per run
// (SuggestContext) and read by every finder.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/context.h"
#include "analysis/intervals.h"

namespace xpu::analysis {

// HBM traffic per chip over time (prefix sums over fine buckets): how much of the bandwidth
// between two moments was left unused, which bounds what issuing a DMA earlier can gain (the
// roofline: data cannot arrive faster than the idle bandwidth before it is needed).
class HbmLoad {
public:
    explicit HbmLoad(const RunData& run);
    // The shortest time the chip's HBM takes to move `bytes` (at its peak rate); 0 if unknown.
    Tick transfer(int chip, std::uint64_t bytes) const;
    // Time in [a, b] the chip's HBM could have spent moving more data; b - a if unknown.
    Tick idle(int chip, Tick a, Tick b) const;

private:
    struct Chip {
        std::vector<double> bytes;  // prefix sums, bytes up to bucket k
        double peak_per_ps = 0;
    };
    Tick bucket_ = 1000;
    std::map<int, Chip> chips_;
};

// Busy time of each DMA engine (its accounted timeline): a hoisted DMA starts earlier only if
// its engine had idle time between its new issue point and its old start (engines are FIFOs).
class EngineLoad {
public:
    explicit EngineLoad(const Analysis& a);
    Tick idle(std::uint32_t engine, Tick a, Tick b) const;

private:
    std::map<std::uint32_t, std::vector<Interval>> busy_;  // the timeline's busy segments: sorted, disjoint
};

// Idle time of any unit (matrix, vector unit) from its accounted timeline, which tiles [0, end]
// sorted: an operation issued earlier starts earlier only into time its unit had free.
class UnitIdle {
public:
    explicit UnitIdle(const Analysis& a);
    Tick idle(std::uint32_t unit, Tick a, Tick b) const;

private:
    std::map<std::uint32_t, const std::vector<Segment>*> timeline_;
};

// Traffic of the inter-chip links over time, and which link each DMA's first hop took.
class LinkLoad {
public:
    explicit LinkLoad(const RunData& run);
    // Idle time in [a, b] of the first link the DMA record `dma` used; b - a if none.
    Tick idle(std::uint32_t dma, Tick a, Tick b) const;

private:
    const RunData& run_;
    std::map<std::uint32_t, std::vector<Interval>> busy_;
    std::unordered_map<std::uint64_t, std::uint32_t> first_link_;
};

// Issue times in order, and how many of those in a window had a core waiting for them.
class StallingIssues {
public:
    void add(Tick t, bool stalling) { v_.push_back({t, stalling}); }
    void finish();  // after the last add
    std::uint64_t count(Tick a, Tick b) const;

private:
    std::vector<std::pair<Tick, bool>> v_;
    std::vector<std::uint32_t> prefix_;
};

// Per DMA engine, the DMAs in issue order, and how many of those issued in a time window had a
// core waiting for them (cost of moving another DMA ahead of them).
class EngineQueue {
public:
    EngineQueue(const RunData& run, const std::vector<Tick>& caused);
    std::uint64_t stalling_between(std::uint32_t engine, Tick a, Tick b) const;

private:
    std::map<std::uint32_t, StallingIssues> engine_;
};

// Per chip, the DMAs that move HBM data, in issue order, and how many of those issued in a
// time window on engines other than a given one had a core waiting for them (`caused`): the
// HBM traffic a hoisted DMA would now be queued ahead of.
class ChipQueue {
public:
    ChipQueue(const RunData& run, const std::vector<Tick>& caused);
    std::uint64_t stalling_between(std::uint16_t chip, std::uint32_t except_engine, Tick a, Tick b) const;

private:
    std::map<std::uint16_t, StallingIssues> chip_;
    std::map<std::uint64_t, StallingIssues> engine_;  // (chip << 32 | engine)
};

// The shortest a DMA can take: its bytes at its engine's bandwidth (or a link's, for a remote
// one) plus the fixed latency the run's fastest DMA showed beyond that.
class DmaTiming {
public:
    explicit DmaTiming(const Context& cx);
    // Its bytes at its engine's bandwidth (at most the slowest link's, if remote).
    Tick wire(const Dma& d, bool remote) const;
    Tick shortest(const Dma& d, bool remote) const { return fixed_ + wire(d, remote); }

private:
    const RunData& run_;
    double link_gbps_ = 0;  // the slowest link's bandwidth (0: no links)
    Tick fixed_ = 0;
};

}  // namespace xpu::analysis
