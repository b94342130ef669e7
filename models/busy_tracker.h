// Busy time of a unit as the union of its occupancy intervals: overlapping or touching
// intervals merge, so nothing is counted twice. Intervals may arrive in any order (a vector
// unit's pipelines start ops side by side); settle(t) tells the tracker that no interval will
// start before t any more, so the merged ones that end before t can be folded into a total,
// which keeps the open set small.
#pragma once

#include <utility>
#include <vector>

#include "traces/instruction.h"

namespace xpu {

class BusyTracker {
public:
    // Inline: every issued instruction adds its slot to its core's tracker and every unit op
    // its occupancy, almost always at or after the last interval (the fast path); the rest is
    // add_anywhere().
    void add(Tick start, Tick end) {
        if (end <= start) return;
        if (open_.size() > head_) {
            auto& last = open_.back();
            if (start >= last.first) {
                if (start <= last.second) {
                    if (end > last.second) last.second = end;
                    return;
                }
                if (open_.size() - head_ < 64) {  // else add_anywhere() appends and settles
                    open_.emplace_back(start, end);
                    return;
                }
            }
        }
        add_anywhere(start, end);
    }
    // Inline up to its first test: units settle after every op, and mostly nothing ends
    // before the watermark yet (a call per op before).
    void settle(Tick watermark) {
        if (head_ < open_.size() && open_[head_].second < watermark) settle_before(watermark);
    }
    Tick total() const;

private:
    void add_anywhere(Tick start, Tick end);
    void settle_before(Tick watermark);  // settle() once the first open interval ends before it
    // Disjoint merged intervals (start, end), sorted by start, from open_[head_] on: settled
    // ones are skipped by moving head_, and the vector compacted now and then. A sorted vector,
    // not a map: the open set stays small (settle), most adds touch its last element, and a
    // node allocation per interval was a measurable share of a DMA-heavy run.
    std::vector<std::pair<Tick, Tick>> open_;
    std::size_t head_ = 0;
    Tick closed_ = 0;
};

}  // namespace xpu
