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

#include <algorithm>
#include <cstdint>
#include <vector>

#include "traces/instruction.h"

namespace xpu {

class BandwidthCalendar {
public:
    // bytes_per_tick: capacity per ps; bucket: bucket length in ps, rounded down to a power
    // of two (so that finding a time's bucket is a shift on the hot path), and lengthened (by
    // powers of two) until a bucket carries at least kMinBucketBytes: the ring holds a bucket
    // per kMinBucketBytes of traffic ahead at most, whatever the rate (a 0.001 GB/s link would
    // otherwise need a bucket per 0.03 bytes: gigabytes for a few MiB in flight).
    BandwidthCalendar(double bytes_per_tick, Tick bucket);
    static constexpr double kMinBucketBytes = 16;
    // Bytes of memory the ring needs to hold `bytes_ahead` bytes reserved ahead of the kernel's
    // time (the ring doubles as it grows): what a configuration is checked against before a
    // platform is built.
    static double memory_for(double bytes_per_tick, Tick bucket, double bytes_ahead);
    // Reserves `bytes`, none before `t`. Returns when the last byte has moved. `now` is the
    // kernel time: no request can arrive before it, so buckets older than it are recycled.
    Tick reserve(Tick t, std::uint64_t bytes, Tick now) {
        const std::uint64_t now_b = now >> shift_;
        if (now_b > base_) forget(now_b);
        bytes_ += bytes;
        if (bytes == 0) return t;
        std::uint64_t b = t >> shift_;
        // The common case on a busy resource, inline: the request lands in the saturated prefix
        // (before the frontier bucket), so it fills from the frontier on and every bucket it
        // touches is usable whole. fill()'s loop without its first-bucket cut, which can never
        // apply here (t is before every bucket it visits): the same steps, the same answer.
        if (b < frontier_) {
            double left = to_real(bytes);
            std::uint64_t c = frontier_;
            for (;;) {
                Bucket& u = slot(c);
                const double room = cap_ - u.used;
                if (room > 1e-6) {
                    const double take = room < left ? room : left;
                    u.used += take;
                    left -= take;
                }
                if (full(u)) {
                    u.next = c + 1;
                    if (c == frontier_) frontier_ = first_free(c + 1);
                }
                if (left <= 1e-6) return finish(c, u.used, t, bytes);
                ++c;
                c = c <= frontier_ ? frontier_ : first_free(c);
            }
        }
        // Otherwise (a resource with room, VMEM's usual case): fill()'s first step inline, which
        // usually ends the request (it fits the bucket of its arrival), and fill() for the rest.
        if (b < base_) b = base_;
        b = b <= frontier_ ? frontier_ : first_free(b);
        Bucket& u = slot(b);
        const Tick start = b << shift_;
        double room = cap_ - u.used;
        // In the first bucket only the part after t is usable.
        if (t > start) room = std::min(room, cap_ * to_real(start + bucket_ - t) * inv_bucket_);
        double left = to_real(bytes);
        if (room > 1e-6) {
            const double take = std::min(room, left);
            u.used += take;
            left -= take;
        }
        if (full(u)) {
            u.next = b + 1;
            if (b == frontier_) frontier_ = first_free(b + 1);
        }
        if (left <= 1e-6) return finish(b, u.used, t, bytes);
        return fill(b + 1, t, bytes, left);
    }
    // Transfer time used so far (bytes / rate), for utilisation.
    Tick busy() const { return busy_for(bytes_); }
    // The transfer time of `bytes` at this rate, rounded as busy() rounds it.
    Tick busy_for(std::uint64_t bytes) const { return static_cast<Tick>(static_cast<double>(bytes) / rate_ + 0.5); }
    // Whether the two calendars answer every future request alike, `now` being the kernel's time
    // (no request arrives before it): the same buckets full and the same bytes in the others from
    // now's bucket on. What came before now, the ring's size and the skip pointers do not count
    // (a full bucket is never filled again and a request never ends in one, so how full a full
    // bucket is says nothing either). For channel_groups.h, which shares one calendar between
    // channels whose calendars have become the same.
    bool same_ahead(const BandwidthCalendar& o, Tick now) const;

private:
    // Conversions through int64_t: the same values as the unsigned ones for operands below 2^63,
    // without the range test and fix-up path x86-64 needs for unsigned 64-bit <-> double (a
    // compare and a branch on the floating-point result, per conversion, on every reservation).
    // What a calendar converts is always far below: a request's bytes (a transaction's length
    // is 32-bit), a time within a bucket, a bucket's fill times its transfer rate.
    static double to_real(std::uint64_t x) { return static_cast<double>(static_cast<std::int64_t>(x)); }
    static Tick to_tick(double x) { return static_cast<Tick>(static_cast<std::int64_t>(x)); }
    void forget(std::uint64_t now_b);
    // reserve()'s general case from bucket b on, `left` of the request's `bytes` still to place
    // (the first bucket was reserve()'s, inline).
    Tick fill(std::uint64_t b, Tick t, std::uint64_t bytes, double left);
    // When the last byte of a request of `bytes` moves: it ends in bucket b, filled to `used`
    // (a bucket fills front to back), and not before t + its own transfer time.
    Tick finish(std::uint64_t b, double used, Tick t, std::uint64_t bytes) {
        const Tick end = (b << shift_) + to_tick(used * inv_rate_ + 0.5);
        if (bytes != own_bytes_) {
            own_bytes_ = bytes;
            own_ticks_ = to_tick(to_real(bytes) * inv_rate_ + 0.5);
        }
        const Tick own = t + own_ticks_;
        return end > own ? end : own;
    }
    struct Bucket {
        double used = 0;          // bytes reserved
        std::uint64_t next = 0;   // when full: a later bucket to look at first (skip pointer)
    };
    // Bucket b (absolute index, b >= base_). Live buckets [base_, end_) always fit the ring, so
    // one already touched is a plain index; only a new one may grow the ring (grow()).
    Bucket& slot(std::uint64_t b) {
        if (b < end_) return ring_[b & mask_];
        if (b == end_ && b - base_ < ring_.size()) {  // the next new bucket, room in the ring
            end_ = b + 1;
            return ring_[b & mask_] = Bucket{0.0, b};
        }
        return grow(b);
    }
    Bucket& grow(std::uint64_t b);
    // First bucket >= b with room (path-compressed). Most calls find b itself free: answered
    // inline, without the walk.
    std::uint64_t first_free(std::uint64_t b) {
        return b >= end_ || !full(ring_[b & mask_]) ? b : walk(b);
    }
    std::uint64_t walk(std::uint64_t b);
    bool full(const Bucket& x) const { return cap_ - x.used <= 1e-6; }

    double rate_;
    unsigned shift_;                // bucket length = 1 << shift_ ps
    Tick bucket_;
    double inv_bucket_;
    double inv_rate_;
    double cap_;                    // bytes per bucket
    std::vector<Bucket> ring_;      // bucket b lives at b & mask_
    std::uint64_t mask_ = 0;
    std::uint64_t base_ = 0;        // oldest live bucket
    std::uint64_t end_ = 0;         // one past the newest bucket touched
    // Every bucket in [base_, frontier_) is full (reservations only add bytes, so it stays so
    // until base_ passes it). A saturated resource gets most requests inside that prefix: they
    // start at frontier_ at once, which is what the skip pointers would find by walking.
    std::uint64_t frontier_ = 0;
    std::uint64_t bytes_ = 0;
    // The transfer time of the last request size seen (requests mostly have one size: a whole
    // interleave granule), so that the common case skips a conversion.
    std::uint64_t own_bytes_ = 0;
    Tick own_ticks_ = 0;
};

}  // namespace xpu
