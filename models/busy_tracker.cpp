#include "models/busy_tracker.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "models/sim_time.h"

namespace xpu {

void BusyTracker::add_anywhere(Tick start, Tick end) {
    if (end <= start) return;
    // At or after the last interval (in-order units): add()'s fast path, and its append once
    // 64 intervals are open (then settled).
    if (open_.size() > head_) {
        auto& last = open_.back();
        if (start >= last.first) {
            if (start <= last.second) {
                if (end > last.second) last.second = end;
                return;
            }
            open_.emplace_back(start, end);
            if (open_.size() - head_ > 64) settle(start);  // in-order callers need never call settle()
            return;
        }
    }
    // General case: merge with every interval it overlaps or touches.
    auto first = std::upper_bound(open_.begin() + static_cast<std::ptrdiff_t>(head_), open_.end(), start,
                                  [](Tick s, const std::pair<Tick, Tick>& x) { return s < x.first; });
    if (first != open_.begin() + static_cast<std::ptrdiff_t>(head_)) {
        auto prev = std::prev(first);
        if (prev->second >= start) {
            start = prev->first;
            if (prev->second > end) end = prev->second;
            first = prev;
        }
    }
    auto last = first;
    while (last != open_.end() && last->first <= end) {
        if (last->second > end) end = last->second;
        ++last;
    }
    if (last != first) {  // reuse the first merged slot, drop the others
        *first = {start, end};
        open_.erase(first + 1, last);
    } else {
        open_.insert(first, {start, end});
    }
}

void BusyTracker::settle_before(Tick watermark) {
    while (head_ < open_.size() && open_[head_].second < watermark) {
        closed_ += open_[head_].second - open_[head_].first;
        ++head_;
    }
    if (head_ == open_.size()) {
        open_.clear();
        head_ = 0;
    } else if (head_ > 64 && head_ * 2 > open_.size()) {  // compact: amortised O(1) per interval
        open_.erase(open_.begin(), open_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
}

Tick BusyTracker::total() const {
    Tick t = closed_;
    for (std::size_t i = head_; i < open_.size(); ++i) t += open_[i].second - open_[i].first;
    return t;
}

void check_time_resolution() {
    if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
        throw std::logic_error("xpusim models need SystemC's time resolution to be 1 ps (its default)");
}

}  // namespace xpu
