#include "models/bandwidth_calendar.h"

#include <algorithm>

namespace xpu {

namespace {
constexpr double kEps = 1e-6;
}

BandwidthCalendar::BandwidthCalendar(double bytes_per_tick, Tick bucket)
    : rate_(bytes_per_tick), ring_(64), mask_(63) {
    shift_ = 0;
    while ((Tick(2) << shift_) <= bucket) ++shift_;
    while (rate_ * static_cast<double>(Tick(1) << shift_) < kMinBucketBytes && shift_ < 50) ++shift_;
    bucket_ = Tick(1) << shift_;
    inv_bucket_ = 1.0 / static_cast<double>(bucket_);
    inv_rate_ = 1.0 / rate_;
    cap_ = rate_ * static_cast<double>(bucket_);
}

double BandwidthCalendar::memory_for(double bytes_per_tick, Tick bucket, double bytes_ahead) {
    unsigned shift = 0;
    while ((Tick(2) << shift) <= bucket) ++shift;
    while (bytes_per_tick * static_cast<double>(Tick(1) << shift) < kMinBucketBytes && shift < 50) ++shift;
    const double cap = bytes_per_tick * static_cast<double>(Tick(1) << shift);
    return 2.0 * static_cast<double>(sizeof(Bucket)) * (bytes_ahead / cap + 1);
}

BandwidthCalendar::Bucket& BandwidthCalendar::grow(std::uint64_t b) {
    if (b - base_ >= ring_.size()) {  // grow (power of two), keeping live buckets in place
        std::size_t n = ring_.size();
        while (b - base_ >= n) n *= 2;
        std::vector<Bucket> bigger(n);
        for (std::uint64_t i = base_; i < end_; ++i) bigger[i & (n - 1)] = ring_[i & mask_];
        ring_.swap(bigger);
        mask_ = n - 1;
    }
    if (b >= end_) {
        for (std::uint64_t i = end_; i <= b; ++i) ring_[i & mask_] = Bucket{0.0, i};
        end_ = b + 1;
    }
    return ring_[b & mask_];
}

// Streaming traffic fills buckets in long runs; a request landing in such a run jumps over
// it along the skip pointers instead of walking it, and the walk is compressed for the next.
std::uint64_t BandwidthCalendar::walk(std::uint64_t b) {
    std::uint64_t r = b;
    while (r < end_) {
        const Bucket& x = ring_[r & mask_];
        if (!full(x)) break;
        r = x.next > r ? x.next : r + 1;
    }
    for (std::uint64_t i = b; i < r && i < end_;) {
        Bucket& x = ring_[i & mask_];
        std::uint64_t nx = x.next > i ? x.next : i + 1;
        x.next = r;
        i = nx;
    }
    return r;
}

// Forget the past: its ring slots are reused (and reset) as end_ moves on.
void BandwidthCalendar::forget(std::uint64_t now_b) {
    base_ = now_b;
    if (end_ < base_) end_ = base_;
    if (frontier_ < base_) frontier_ = first_free(base_);
}

// The general case of reserve(): bucket by bucket, skipping full ones, from the bucket after
// t's (reserve() took its first step inline: the same loop, split after its first pass).
Tick BandwidthCalendar::fill(std::uint64_t b, Tick t, std::uint64_t bytes, double left) {
    for (;;) {
        b = b <= frontier_ ? frontier_ : first_free(b);
        Bucket& u = slot(b);
        const Tick start = b << shift_;
        double room = cap_ - u.used;
        // In the first bucket only the part after t is usable.
        if (t > start) room = std::min(room, cap_ * to_real(start + bucket_ - t) * inv_bucket_);
        if (room > 1e-6) {
            double take = std::min(room, left);
            u.used += take;
            left -= take;
        }
        if (full(u)) {
            u.next = b + 1;
            if (b == frontier_) frontier_ = first_free(b + 1);
        }
        if (left <= 1e-6) return finish(b, u.used, t, bytes);
        ++b;
    }
}

bool BandwidthCalendar::same_ahead(const BandwidthCalendar& o, Tick now) const {
    if (shift_ != o.shift_ || cap_ != o.cap_) return false;
    const std::uint64_t from = now >> shift_;
    // The first bucket with room from now on, known at once where the frontier is not behind now
    // (every bucket before the frontier is full): different ones answer differently.
    if (frontier_ >= from && o.frontier_ >= from && frontier_ != o.frontier_) return false;
    // A bucket's state: full, or the bytes it holds (an untouched bucket holds none). Live buckets
    // are [base_, end_), and base_ <= from (base_ is the bucket of an earlier kernel time).
    auto state = [](const BandwidthCalendar& c, std::uint64_t b) {
        if (b >= c.end_) return 0.0;
        const Bucket& x = c.ring_[b & c.mask_];
        return c.full(x) ? -1.0 : x.used;
    };
    const std::uint64_t to = std::max(end_, o.end_);
    for (std::uint64_t b = std::max(from, std::min(frontier_, o.frontier_)); b < to; ++b)
        if (state(*this, b) != state(o, b)) return false;
    // Before both frontiers every live bucket is full in both (when both frontiers are ahead of
    // now); otherwise the loop above started at now's bucket.
    return true;
}

}  // namespace xpu
