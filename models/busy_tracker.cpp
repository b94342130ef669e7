#include "models/busy_tracker.h"

#include <iterator>
#include <stdexcept>

#include "models/sim_time.h"

namespace xpu {

void BusyTracker::add(Tick start, Tick end) {
    if (end <= start) return;
    // Fast path: at or after the last interval (in-order units).
    if (!open_.empty()) {
        auto last = std::prev(open_.end());
        if (start >= last->first) {
            if (start <= last->second) {
                if (end > last->second) last->second = end;
                return;
            }
            open_.emplace_hint(open_.end(), start, end);
            if (open_.size() > 64) settle(start);  // in-order callers need never call settle()
            return;
        }
    }
    // General case: merge with every interval it overlaps or touches.
    auto it = open_.upper_bound(start);
    if (it != open_.begin()) {
        auto prev = std::prev(it);
        if (prev->second >= start) {
            start = prev->first;
            if (prev->second > end) end = prev->second;
            it = open_.erase(prev);
        }
    }
    while (it != open_.end() && it->first <= end) {
        if (it->second > end) end = it->second;
        it = open_.erase(it);
    }
    open_.emplace(start, end);
}

void BusyTracker::settle(Tick watermark) {
    while (!open_.empty() && open_.begin()->second < watermark) {
        closed_ += open_.begin()->second - open_.begin()->first;
        open_.erase(open_.begin());
    }
}

Tick BusyTracker::total() const {
    Tick t = closed_;
    for (const auto& [s, e] : open_) t += e - s;
    return t;
}

void check_time_resolution() {
    if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
        throw std::logic_error("xpusim models need SystemC's time resolution to be 1 ps (its default)");
}

}  // namespace xpu
