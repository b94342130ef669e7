// BandwidthCalendar: a shared transfer resource (an HBM channel, VMEM's ports) as a calendar
// of fixed time buckets, each able to carry `rate x bucket` bytes.
//
// Why not a single busy-until time: under temporal decoupling, requests reach a shared target
// out of time order (a DMA engine may run a quantum ahead of the core that loads from the
// same memory). With busy-until, a request for an idle moment in the past queues behind
// reservations made for the future and the resource looks far busier than it is. The
// calendar fills the gaps, and it can never carry more than its rate in any bucket, so a
// model built on it never exceeds its configured bandwidth (conservation, not a tuning).
#pragma once

#include <vector>

#include "models/instruction.h"

namespace xpu {

class BandwidthCalendar {
public:
    // bytes_per_tick: capacity per ps; bucket: bucket length in ps.
    BandwidthCalendar(double bytes_per_tick, Tick bucket);
    // Reserves `bytes`, none before `t`. Returns when the last byte has moved. `now` is the
    // kernel time: no request can arrive before it, so buckets older than it are recycled.
    Tick reserve(Tick t, std::uint64_t bytes, Tick now);
    // Transfer time used so far (bytes / rate), for utilisation.
    Tick busy() const { return static_cast<Tick>(static_cast<double>(bytes_) / rate_ + 0.5); }

private:
    double& used(std::uint64_t b);  // bucket b (absolute index), growing the ring as needed

    double rate_;
    Tick bucket_;
    double cap_;                    // bytes per bucket
    std::vector<double> ring_;      // bytes reserved per bucket; bucket b lives at b & mask_
    std::uint64_t mask_ = 0;
    std::uint64_t base_ = 0;        // oldest live bucket
    std::uint64_t end_ = 0;         // one past the newest bucket touched
    std::uint64_t full_until_ = 0;  // every bucket in [base_, full_until_) is full
    std::uint64_t bytes_ = 0;
};

}  // namespace xpu
