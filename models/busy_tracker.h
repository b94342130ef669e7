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
    void add(Tick start, Tick end);
    void settle(Tick watermark);
    Tick total() const;

private:
    // Disjoint merged intervals (start, end), sorted by start, from open_[head_] on: settled
    // ones are skipped by moving head_, and the vector compacted now and then. A sorted vector,
    // not a map: the open set stays small (settle), most adds touch its last element, and a
    // node allocation per interval was a measurable share of a DMA-heavy run.
    std::vector<std::pair<Tick, Tick>> open_;
    std::size_t head_ = 0;
    Tick closed_ = 0;
};

}  // namespace xpu
