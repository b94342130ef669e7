#include "models/bandwidth_calendar.h"

#include <algorithm>

namespace xpu {

namespace {
constexpr double kEps = 1e-6;
}

BandwidthCalendar::BandwidthCalendar(double bytes_per_tick, Tick bucket)
    : rate_(bytes_per_tick), bucket_(bucket ? bucket : 1), cap_(bytes_per_tick * static_cast<double>(bucket_)),
      ring_(64, 0.0), mask_(63) {}

double& BandwidthCalendar::used(std::uint64_t b) {
    if (b - base_ >= ring_.size()) {  // grow (power of two), keeping live buckets in place
        std::size_t n = ring_.size();
        while (b - base_ >= n) n *= 2;
        std::vector<double> bigger(n, 0.0);
        for (std::uint64_t i = base_; i < end_; ++i) bigger[i & (n - 1)] = ring_[i & mask_];
        ring_.swap(bigger);
        mask_ = n - 1;
    }
    if (b >= end_) {
        for (std::uint64_t i = end_; i <= b; ++i) ring_[i & mask_] = 0.0;
        end_ = b + 1;
    }
    return ring_[b & mask_];
}

Tick BandwidthCalendar::reserve(Tick t, std::uint64_t bytes, Tick now) {
    std::uint64_t now_b = now / bucket_;
    if (now_b > base_) {  // forget the past: its ring slots are reused (and zeroed) as end_ moves on
        base_ = now_b;
        if (end_ < base_) end_ = base_;
    }
    if (full_until_ < base_) full_until_ = base_;
    bytes_ += bytes;
    if (bytes == 0) return t;
    std::uint64_t b = std::max<std::uint64_t>(t / bucket_, base_);
    if (b < full_until_) b = full_until_;  // skip the run of full buckets (streaming traffic)
    double left = static_cast<double>(bytes);
    for (;; ++b) {
        double& u = used(b);
        const Tick start = b * bucket_;
        double room = cap_ - u;
        // In the first bucket only the part after t is usable.
        if (t > start) room = std::min(room, cap_ * static_cast<double>(start + bucket_ - t) / static_cast<double>(bucket_));
        if (room > kEps) {
            double take = std::min(room, left);
            u += take;
            left -= take;
        }
        if (b == full_until_ && cap_ - u <= kEps) ++full_until_;
        if (left <= kEps) {
            // The bucket fills front to back: the last byte moves at the fill level.
            Tick end = start + static_cast<Tick>(u / cap_ * static_cast<double>(bucket_) + 0.5);
            Tick own = t + static_cast<Tick>(static_cast<double>(bytes) / rate_ + 0.5);
            return end > own ? end : own;
        }
    }
}

}  // namespace xpu
