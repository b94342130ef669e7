// Busy time of a unit as the union of its occupancy intervals.
// Intervals must arrive with non-decreasing start times (true for every in-order pipeline
// here); overlapping or touching intervals merge, so nothing is counted twice.
#pragma once

#include "models/instruction.h"

namespace xpu {

class BusyTracker {
public:
    void add(Tick start, Tick end);
    // Busy time so far, including the interval still open.
    Tick total() const { return closed_ + (cur_end_ - cur_start_); }
    Tick last_end() const { return cur_end_; }

private:
    Tick closed_ = 0;
    Tick cur_start_ = 0;
    Tick cur_end_ = 0;
};

}  // namespace xpu
