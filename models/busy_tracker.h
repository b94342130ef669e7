// Busy time of a unit as the union of its occupancy intervals: overlapping or touching
// intervals merge, so nothing is counted twice. Intervals may arrive in any order (a vector
// unit's pipelines start ops side by side); settle(t) tells the tracker that no interval will
// start before t any more, so the merged ones that end before t can be folded into a total,
// which keeps the open set small.
#pragma once

#include <map>

#include "traces/instruction.h"

namespace xpu {

class BusyTracker {
public:
    void add(Tick start, Tick end);
    void settle(Tick watermark);
    Tick total() const;

private:
    std::map<Tick, Tick> open_;  // disjoint merged intervals: start -> end
    Tick closed_ = 0;
};

}  // namespace xpu
