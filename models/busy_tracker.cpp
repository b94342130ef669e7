#include "models/busy_tracker.h"

#include <stdexcept>

#include "models/sim_time.h"

namespace xpu {

void BusyTracker::add(Tick start, Tick end) {
    if (end <= start) return;
    if (start <= cur_end_ && cur_end_ != 0) {
        if (end > cur_end_) cur_end_ = end;
        return;
    }
    closed_ += cur_end_ - cur_start_;
    cur_start_ = start;
    cur_end_ = end;
}

void check_time_resolution() {
    if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
        throw std::logic_error("xpusim models need SystemC's time resolution to be 1 ps (its default)");
}

}  // namespace xpu
