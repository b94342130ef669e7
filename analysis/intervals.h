// Busy intervals: merging them, and how much of a window they cover. Shared by the DMA view
// (overlap with compute) and the suggestions' bounds (engine and link idle time). And an
// amount spread evenly over an interval into time buckets (the series, the suggestions).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "traces/instruction.h"

namespace xpu::analysis {

using Interval = std::pair<Tick, Tick>;  // [begin, end)

// Sorts and merges overlapping or touching intervals in place.
inline void merge_intervals(std::vector<Interval>& v) {
    std::sort(v.begin(), v.end());
    std::size_t n = 0;
    for (const Interval& x : v) {
        if (n && x.first <= v[n - 1].second) v[n - 1].second = std::max(v[n - 1].second, x.second);
        else v[n++] = x;
    }
    v.resize(n);
}

// Time of [a, b) covered by merged (sorted, disjoint) intervals.
inline Tick covered(const std::vector<Interval>& merged, Tick a, Tick b) {
    if (b <= a) return 0;
    Tick t = 0;
    auto k = std::upper_bound(merged.begin(), merged.end(), Interval(a, 0));
    if (k != merged.begin()) --k;
    for (; k != merged.end() && k->first < b; ++k) {
        const Tick x = std::max(a, k->first), y = std::min(b, k->second);
        if (y > x) t += y - x;
    }
    return t;
}

// Adds `amount` (bytes, busy time...) spread evenly over [b, e) to the buckets v[0, n) (bucket
// k covers [k * bucket, (k + 1) * bucket)); an empty interval counts as [b, b + 1). Buckets
// past n are dropped.
inline void spread(double* v, std::size_t n, Tick bucket, Tick b, Tick e, double amount) {
    if (n == 0 || bucket == 0) return;
    if (e <= b) e = b + 1;
    const double rate = amount / static_cast<double>(e - b);
    for (std::size_t k = static_cast<std::size_t>(b / bucket); k < n && k * bucket < e; ++k) {
        const Tick x = std::max<Tick>(b, k * bucket), y = std::min<Tick>(e, (k + 1) * bucket);
        if (y > x) v[k] += rate * static_cast<double>(y - x);
    }
}

inline void spread(std::vector<double>& v, Tick bucket, Tick b, Tick e, double amount) {
    spread(v.data(), v.size(), bucket, b, e, amount);
}

}  // namespace xpu::analysis
